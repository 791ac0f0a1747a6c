/** Wires settings, database, broker and registry into the context every component shares. */
import { trace, type Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { openBroker, redisErrorLog } from './broker/open.js';
import type { Broker } from './broker/types.js';
import { systemClock, type Clock } from './clock.js';
import { loadSettings, type ResolvedSettings } from './config.js';
import { migrate } from './db/migrator.js';
import { openDb } from './db/open.js';
import { whenDatabaseAnswers, type StartupWait } from './db/startup.js';
import type { Db } from './db/types.js';
import { linearBackfillEligibility, type RetryEligibility } from './domain/retryPolicy.js';
import { Faults } from './faults.js';
import { createLogger } from './logger.js';
import { EngineMetrics } from './observability/metrics.js';
import { TRACER_NAME } from './observability/trace.js';
import { cancelRun } from './planning/cancel.js';
import { createIntegration, type NewIntegration } from './planning/integrations.js';
import { runSchedulerTick } from './planning/scheduler.js';
import { SchedulerLoop, type SchedulerLoopOptions } from './planning/schedulerLoop.js';
import { triggerSync, type TriggerArgs } from './planning/triggers.js';
import { OutboundPolicy } from './providers/kit/outbound.js';
import { builtInLimits, defaultRegistry, type ProviderRegistry } from './providers/registry.js';
import { ReconcilerLoop, type ReconcilerLoopOptions } from './reconciler/loop.js';
import { reconcilePass, type PassCounters } from './reconciler/pass.js';
import { checkCredentialKeys } from './secrets/credentials.js';
import { keyFilePath } from './secrets/keyFile.js';
import { Keyring } from './secrets/keyring.js';
import { recoverAfterEmbeddedRestart } from './store/units.js';
import type { EngineContext } from './context.js';
import { UnitEnds } from './tasks/unitEnds.js';
import { armRememberedRunOf } from './planning/webhooks.js';
import { Worker, type WorkerOptions } from './worker/worker.js';

export interface EngineOptions {
  settings?: ResolvedSettings;
  db?: Db;
  broker?: Broker;
  clock?: Clock;
  logger?: Logger;
  /** @default the built-in providers with their sinks, under the outbound policy of `settings` */
  registry?: ProviderRegistry;
  /** @default the Linear backfill policy of the seed */
  retryEligibility?: RetryEligibility;
  /** Apply pending migrations on open. @default true */
  migrate?: boolean;
  /** Database pool size (PostgreSQL). @default `settings.dbPoolSize` (SYNCRELAY_DB_POOL_SIZE), else 10 */
  poolSize?: number;
  /**
   * With PGlite + the in-process broker (one process owns the database), treat units left
   * dispatching or running by a previous process as lost at once. @default true
   */
  recoverEmbedded?: boolean;
  /**
   * Register the engine's Prometheus metrics here instead of in a registry of its own (one engine
   * per registry: names would collide). @default a new Registry, see `engine.metrics`
   */
  metricsRegistry?: Registry;
  /** Where spans come from. @default the global tracer provider's `syncrelay` tracer */
  tracer?: Tracer;
  /** Internal: fault points (tests). */
  faults?: Faults;
  /**
   * Refuse to open when credentials are stored and no configured key matches any of them.
   * @default true (commands that replace or remove credentials pass false)
   */
  checkSecretKeys?: boolean;
  /** How start-up waits for a database that is down or restarting. @default up to 60 s */
  startupWait?: StartupWait;
}

/** One engine per process role; nothing is global, so several can live in one process (tests). */
export class Engine {
  private readonly owned: { db: boolean; broker: boolean };
  private readonly workers: Worker[] = [];
  private readonly loops: ReconcilerLoop[] = [];
  private scheduler: SchedulerLoop | null = null;
  private closed = false;

  private constructor(
    readonly ctx: EngineContext,
    owned: { db: boolean; broker: boolean },
  ) {
    this.owned = owned;
  }

  static async open(opts: EngineOptions = {}): Promise<Engine> {
    const settings = opts.settings ?? loadSettings();
    const logger = opts.logger ?? createLogger();
    const db = opts.db ?? (await openDb(settings, { poolSize: opts.poolSize ?? settings.dbPoolSize, logger }));
    try {
      const registry =
        opts.registry ??
        defaultRegistry(db, {
          outbound: new OutboundPolicy(settings.providerOutbound),
          limits: builtInLimits(settings),
        });
      if (opts.migrate !== false) {
        await whenDatabaseAnswers(() => migrate(db, { providers: registry.list() }), logger, opts.startupWait);
      }
      const broker = opts.broker ?? openBroker(settings, { onRedisError: redisErrorLog(logger) });
      const clock = opts.clock ?? systemClock;
      const faults = opts.faults ?? new Faults();
      const secrets = new Keyring({
        key: settings.secretKey,
        previous: settings.secretKeyPrevious,
        keyFile: db.kind === 'pglite' ? keyFilePath(settings.dataDir) : null,
      });
      if (opts.checkSecretKeys !== false) {
        await whenDatabaseAnswers(() => checkCredentialKeys(db, secrets), logger, opts.startupWait);
      }
      const metrics = new EngineMetrics({ db, clock, logger }, { registry: opts.metricsRegistry });
      const ctx: EngineContext = {
        db,
        broker,
        clock,
        settings,
        registry,
        logger,
        faults,
        retryEligibility: opts.retryEligibility ?? linearBackfillEligibility,
        random: Math.random,
        metrics,
        tracer: opts.tracer ?? trace.getTracer(TRACER_NAME),
        unitEnds: new UnitEnds({
          db,
          clock,
          faults,
          logger,
          metrics,
          armRemembered: (integrationId) => armRememberedRunOf(db, ctx, integrationId),
        }),
        secrets,
      };
      if (db.kind === 'pglite' && broker.kind === 'inprocess' && opts.recoverEmbedded !== false) {
        // One process owns an embedded database: whatever the last one left in flight is lost.
        const n = await recoverAfterEmbeddedRestart(db, ctx.clock.now());
        if (n > 0) logger.warn({ units: n }, 'recovered units left in flight by a previous embedded process');
      }
      return new Engine(ctx, { db: !opts.db, broker: !opts.broker });
    } catch (err) {
      if (!opts.db) await db.close();
      throw err;
    }
  }

  get db(): Db {
    return this.ctx.db;
  }

  /** The engine's Prometheus metrics: `engine.metrics.registry` (prom-client), `engine.metrics.metrics()` (text). */
  get metrics(): EngineMetrics {
    return this.ctx.metrics!;
  }

  createIntegration(i: NewIntegration) {
    return createIntegration(this.ctx.db, this.ctx, i);
  }

  trigger(a: TriggerArgs) {
    return triggerSync(this.ctx.db, this.ctx, a);
  }

  cancel(runId: string, orgId?: string) {
    return cancelRun(this.ctx.db, this.ctx.clock, runId, orgId);
  }

  reconcileOnce(id?: string): Promise<PassCounters> {
    return reconcilePass(this.ctx, id);
  }

  /** Starts a worker consuming the broker. */
  startWorker(opts: WorkerOptions = {}): Worker {
    const w = new Worker(this.ctx, opts);
    w.start();
    this.workers.push(w);
    return w;
  }

  /**
   * Starts a reconciler loop (LISTEN/NOTIFY wake-ups + interval passes), and the engine's cron
   * scheduler unless `scheduler: false`.
   */
  async startReconciler(opts: ReconcilerLoopOptions & { scheduler?: boolean } = {}): Promise<ReconcilerLoop> {
    const loop = new ReconcilerLoop(this.ctx, opts);
    await loop.start();
    this.loops.push(loop);
    if (opts.scheduler !== false) await this.startScheduler();
    return loop;
  }

  /** Starts the cron scheduler loop (once per engine; replicas may each run one). */
  async startScheduler(opts: SchedulerLoopOptions = {}): Promise<SchedulerLoop> {
    if (this.scheduler) return this.scheduler;
    this.scheduler = new SchedulerLoop(this.ctx, opts);
    await this.scheduler.start();
    return this.scheduler;
  }

  /** Fires the schedules due now, once (what each scheduler tick does). */
  tickScheduler(now: Date = this.ctx.clock.now()) {
    return runSchedulerTick(this.ctx, now);
  }

  /** Stops workers (graceful) and loops, then closes what the engine opened; safe twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.workers.map((w) => w.close()));
    await this.ctx.unitEnds.close();
    await Promise.all([...this.loops.map((l) => l.close()), this.scheduler?.close()]);
    if (this.owned.broker) await this.ctx.broker.close();
    if (this.owned.db) await this.ctx.db.close();
  }
}
