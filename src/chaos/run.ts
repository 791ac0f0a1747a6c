/**
 * One chaos run: set up, start the engine processes, trigger runs and inject faults on the seeded
 * schedule, stop the faults, wait for quiescence, stop the processes, check the invariants, report.
 */
import { mkdir } from 'node:fs/promises';
import type { Db } from '../db/types.js';
import { ValidationError } from '../errors.js';
import { Cluster } from './cluster.js';
import { CommitLedger } from './commitLedger.js';
import { engineDbSettings } from './database.js';
import { INJECTORS, type FaultContext, type FaultRecord } from './injectors.js';
import type { InvariantResult } from './findings.js';
import { checkInvariants } from './invariants.js';
import {
  CLAIM_TIMEOUT_MS,
  LEASE_MS,
  RECONCILE_INTERVAL_MS,
  terminalBoundMs,
  type ChaosOptions,
  type FaultKind,
} from './options.js';
import { PgOutage, throughOutage } from './outage.js';
import { checkPgBouncer } from './pgbouncer.js';
import { checkPgBin } from './postgres.js';
import { ChaosProgress } from './progress.js';
import { Rng } from './random.js';
import { buildReport } from './reportData.js';
import type { ChaosReport } from './report.js';
import { checkDeletions, checkGroundTruth } from './checkTruth.js';
import {
  createIntegrations,
  createProviderIntegration,
  planRuns,
  triggerRun,
  type ChaosIntegration,
  type PlannedRun,
} from './scenario.js';
import { planFaults } from './schedule.js';
import { makeNames, resolveFaults, setUp, tearDown, type Resources } from './setup.js';
import type { ChaosTally } from './tally.js';
import { checkWebhooks } from './checkWebhooks.js';
import { pause } from './watched.js';
import {
  CHAOS_WEBHOOK_DEBOUNCE_MS,
  settleWebhooks,
  startWebhookChaos,
  type ApiServerStarter,
  type WebhookChaos,
} from './webhooks.js';

export interface ChaosEnvironment {
  /** DATABASE_URL: the server the chaos database is created on (unless a private cluster is started). */
  databaseUrl: string | undefined;
  /** REDIS_URL, used when no private Redis is started. */
  redisUrl: string | undefined;
  /** How to start `syncrelay` again: node, its flags and the CLI entry. */
  entry: { command: string; args: string[] };
  /** Starts the HTTP API over an engine (`--webhooks` posts its deliveries to it). */
  startApiServer?: ApiServerStarter;
}

export interface ChaosIo {
  note(text: string): void;
  signal: AbortSignal;
  out?: NodeJS.WriteStream;
}

/** How long each final run (incremental, then verify) of a `--provider` run may take on a quiet emulator. */
const FINAL_RUN_TIMEOUT_MS = 180_000;

/** A final run of a `--provider` run, as the report names it. */
interface FinalRun {
  id: string;
  status: string;
}

/** Faults that must not overlap with one of their own group. */
const GROUP: Partial<Record<FaultKind, string>> = {
  'redis-restart': 'redis',
  'redis-flushall': 'redis',
  'pg-terminate': 'pg',
  'pg-restart': 'pg',
  'pg-stop-long': 'pg',
  'publish-fail': 'publish',
  'net-partition': 'net',
  'duplicate-delivery': 'duplicate',
  'pgbouncer-restart': 'pooler',
};

export class ChaosRun implements ChaosTally {
  readonly records: FaultRecord[] = [];
  readonly missed: Partial<Record<FaultKind, number>> = {};
  extendedMs = 0;
  readonly injectErrors: string[] = [];
  readonly runs = new Map<string, number>();
  triggerFailures = 0;
  userCancels = 0;
  publishesFailed = 0;
  /** Second deliveries the duplicate-delivery fault published, by task. */
  readonly duplicated: Record<string, number> = {};
  private phase = 'setting up';
  private readonly startedAt = Date.now();
  private readonly locks = new Map<string, Promise<unknown>>();
  private planned = 0;
  private cluster: Cluster | null = null;
  private readonly outage = new PgOutage();
  private readonly ledger = new CommitLedger();
  private hooks: WebhookChaos | null = null;

  constructor(
    private readonly opts: ChaosOptions,
    private readonly env: ChaosEnvironment,
    private readonly io: ChaosIo,
  ) {}

  async execute(): Promise<ChaosReport> {
    const names = makeNames();
    const { kinds, skipped } = await resolveFaults(this.opts);
    if (!this.env.redisUrl && !this.opts.redisServer) throw new Error('REDIS_URL or --redis-server is required');
    if (!this.env.databaseUrl && !this.opts.pgBin) throw new Error('DATABASE_URL or --pg-bin is required');
    if (this.opts.pgBin && this.opts.keep) {
      throw new ValidationError('--keep', 'keeps a database on DATABASE_URL; a private cluster (--pg-bin) is removed');
    }
    if (this.opts.webhooks && !this.opts.provider) {
      throw new ValidationError(
        '--webhooks',
        'needs --provider (github, linear or jira: the integration the deliveries are for)',
      );
    }
    if (this.opts.pgBin) await checkPgBin(this.opts.pgBin);
    if (this.opts.pgbouncer) await checkPgBouncer(this.opts.pgbouncer);
    const r: Resources = {
      names,
      serverUrl: this.env.databaseUrl ?? '',
      pg: null,
      pooler: null,
      redisUrl: this.env.redisUrl ?? '',
      redis: null,
      net: null,
      netUrls: null,
      control: null,
      databaseCreated: false,
      target: null,
      settings: {},
    };
    for (const [k, why] of Object.entries(skipped)) this.io.note(`chaos: skipping ${k}: ${why}`);
    let progress: ChaosProgress | null = null;
    if (this.opts.logDir) await mkdir(this.opts.logDir, { recursive: true });
    try {
      await setUp(r, this.opts, kinds.includes('net-partition'));
      const engine = r.control!;
      const redis = r.redis ? `private (pid ${String(r.redis.pid)}, port ${r.redis.port})` : 'shared';
      const pg = r.pg ? `, PostgreSQL private (pid ${String(r.pg.pid)}, port ${r.pg.port})` : '';
      const pooler = r.pooler ? `, PgBouncer private (pid ${String(r.pooler.pid)}, port ${r.pooler.port})` : '';
      this.io.note(
        `chaos: database ${names.database}, schema ${engine.db.schema.name}, queue prefix ${names.queuePrefix}, ` +
          `Redis ${redis}${pg}${pooler}, seed ${this.opts.seed}`,
      );
      const rng = new Rng(this.opts.seed);
      const integrations = r.target
        ? [await createProviderIntegration(engine, names.orgId, r.target, this.opts.providerModes)]
        : await createIntegrations(engine, names.orgId, this.opts.unitsPerRun, this.opts.seed);
      const cluster = this.startCluster(r);
      // A terminal's Ctrl-C reaches the children too: their exits are then expected, not replaced.
      this.io.signal.addEventListener('abort', () => cluster.beginClosing(), { once: true });
      await cluster.start(r.net !== null);
      this.io.note(`chaos: ${cluster.live().length} engine processes ready`);
      if (this.opts.webhooks) {
        const i = integrations[0]!;
        const sources = r.target!.integration.sources;
        // A generator of its own: the schedule of runs and faults stays what the seed gives without --webhooks.
        const hookRng = new Rng(this.opts.seed ^ 0x5eb1);
        this.hooks = await startWebhookChaos(r, { id: i.id, sources }, names.orgId, hookRng, this.env.startApiServer!);
      }
      progress = new ChaosProgress(engine.db, names.orgId, () => this.progressState(), this.io.out);
      progress.start();
      const durationMs = this.opts.durationS * 1000;
      const runPlan = planRuns(integrations, this.opts.runs, this.opts.unitsPerRun, durationMs, rng.fork(1));
      const faultPlan = planFaults(kinds, durationMs, rng.fork(2));
      this.planned = runPlan.length;
      const ctx: FaultContext = {
        cluster,
        db: engine.db,
        rng: rng.fork(3),
        redis: r.redis,
        pg: r.pg,
        pooler: r.pooler,
        outage: this.outage,
        ledger: this.ledger,
        net: r.net,
        engineAppNames: `${names.enginePrefix}%`,
        signal: this.io.signal,
      };
      this.phase = 'faults';
      r.target?.hostile(true);
      const t0 = Date.now();
      this.hooks?.producer.start();
      await Promise.all([this.triggerAll(runPlan, t0, engine, names.orgId), this.injectAll(faultPlan, t0, ctx)]);
      await this.faultsWhileBacklogged(kinds, durationMs / Math.max(1, faultPlan.length), ctx, names.orgId);
      r.target?.hostile(false);
      // The provider sends an unacknowledged delivery again: so does the producer, until each has its 202.
      await this.hooks?.finish(this.io.signal);
      // Every fault has ended (processes resumed, link up, Redis up, publishes healthy) and every run is triggered.
      const faultsStoppedAt = Date.now();
      this.phase = 'settling';
      const boundMs = terminalBoundMs(this.opts);
      if (this.hooks) {
        const deadline = faultsStoppedAt + boundMs + 30_000;
        await settleWebhooks(engine.db, names.orgId, this.hooks.integrationId, deadline, this.io.signal);
      }
      await this.settle(engine.db, names.orgId, faultsStoppedAt, boundMs);
      const final = r.target ? await this.finalRuns(engine, names.orgId, integrations[0]!, r) : null;
      this.phase = 'stopping';
      if (this.io.signal.aborted) throw new Error('interrupted'); // the finally SIGKILLs the processes
      await cluster.stopAll();
      this.cluster = null;
      await this.hooks?.close();
      this.phase = 'checking';
      const invariants = await checkInvariants(engine.db, {
        orgId: names.orgId,
        runs: this.runs,
        faultsStoppedAt,
        boundMs,
        postSync: this.opts.postSync,
        unbounded: final ? new Set([final.incremental.id, final.verify.id]) : undefined,
      });
      if (final) invariants.push(...final.truth);
      if (this.hooks) invariants.push(await this.webhookInvariant(engine.db, this.hooks));
      // With PostgreSQL faults: what was committed before each crash or stop is still there.
      if (this.ledger.snapshots.length > 0) invariants.push(await this.ledger.check(engine.db, names.orgId, this.runs));
      progress.stop();
      progress = null;
      return await buildReport(engine.db, {
        opts: this.opts,
        names,
        kinds,
        skipped,
        run: this,
        faultsStoppedAt,
        boundMs,
        invariants,
        cluster,
        redis: r.redis ? 'private' : 'shared',
        postgres: r.pg ? 'private' : 'shared',
        pooler: r.pooler ? 'pgbouncer' : 'none',
        partitioned: r.net !== null,
        provider: r.target
          ? {
              name: r.target.provider,
              edits_per_second: this.opts.editsPerSecond,
              modes: this.opts.providerModes,
              stats: r.target.stats(),
              finalRun: final?.incremental ?? null,
              finalVerify: final?.verify ?? null,
            }
          : null,
        elapsedMs: Date.now() - this.startedAt,
      });
    } finally {
      progress?.stop();
      await this.cluster?.killAll();
      await this.hooks?.close();
      await tearDown(r, this.opts.keep);
    }
  }

  private webhookInvariant(db: Db, hooks: WebhookChaos): Promise<InvariantResult> {
    const s = hooks.producer.stats();
    const non202 = Object.entries(s.non202).map(([k, n]) => `${n}×${k === '0' ? 'failed' : k}`);
    return checkWebhooks(db, {
      integrationId: hooks.integrationId,
      debounceMs: CHAOS_WEBHOOK_DEBOUNCE_MS,
      accepted: hooks.producer.acceptedCounts(),
      summary:
        `${s.deliveries} deliveries, ${s.posts} posts (${s.redeliveries} redeliveries), ${s.accepted} answered 202` +
        `${non202.length > 0 ? `, other answers ${non202.join(' ')}` : ''}, ${s.unacknowledged} never acknowledged`,
    });
  }

  private startCluster(r: Resources): Cluster {
    const { names } = r;
    const appName = (name: string) => `${names.enginePrefix}${name}`;
    const net = r.net;
    const netUrls = r.netUrls;
    this.cluster = new Cluster(
      {
        entry: this.env.entry,
        database: (name) =>
          engineDbSettings(
            { server: r.serverUrl, pooler: r.pooler?.clientUrl() ?? null },
            names.database,
            appName(name),
          ),
        redisUrl: r.redisUrl,
        queuePrefix: names.queuePrefix,
        postSync: this.opts.postSync,
        concurrency: this.opts.concurrency,
        seed: this.opts.seed,
        logDir: this.opts.logDir,
        settings: r.settings,
        partitioned:
          net && netUrls
            ? {
                wrap: (c, a) => net.wrap(c, a),
                database: (name) =>
                  engineDbSettings({ server: netUrls.database, pooler: netUrls.pooler }, names.database, appName(name)),
                redisUrl: netUrls.redis,
              }
            : undefined,
      },
      this.opts.workers,
      this.opts.reconcilers,
      (_child, e) => {
        if (e.kind === 'publish-failed') this.publishesFailed += 1;
        if (e.kind === 'duplicated') this.duplicated[e.task] = (this.duplicated[e.task] ?? 0) + 1;
      },
    );
    return this.cluster;
  }

  private async triggerAll(
    plan: PlannedRun[],
    t0: number,
    engine: NonNullable<Resources['control']>,
    orgId: string,
  ): Promise<void> {
    const cancels: Promise<void>[] = [];
    for (const p of plan) {
      await pause(t0 + p.at - Date.now(), this.io.signal);
      if (this.io.signal.aborted) break;
      try {
        // Triggers wait out an injected PostgreSQL outage; one cut off by it is looked for before it is retried.
        const runId = await throughOutage(
          this.outage,
          async () => (await triggerRun(engine, orgId, p)).syncRunId,
          () => this.unknownRun(engine.db, orgId),
        );
        this.runs.set(runId, Date.now());
        if (p.cancelAfterMs !== undefined) {
          const cancel = () => engine.cancel(runId, orgId);
          cancels.push(
            pause(p.cancelAfterMs, this.io.signal).then(async () => {
              const outcome = await throughOutage(this.outage, cancel, async () => null).catch(() => null);
              if (outcome === 'cancelled') this.userCancels += 1;
            }),
          );
        }
      } catch (err) {
        this.triggerFailures += 1;
        this.io.note(`chaos: trigger failed: ${(err as Error).message}`);
      }
    }
    await Promise.all(cancels);
  }

  /** A run of the org this command did not see triggered (triggers go one at a time): at most one. */
  private async unknownRun(db: Db, orgId: string): Promise<string | null> {
    const { rows } = await db.query<{ id: string }>(
      `SELECT id FROM ${db.schema.sync_runs} WHERE org_id = $1 AND NOT (id = ANY($2::uuid[]))
          AND triggered_by <> 'webhook'
        ORDER BY created_at DESC LIMIT 1`,
      [orgId, [...this.runs.keys()]],
    );
    return rows[0]?.id ?? null;
  }

  private async injectAll(plan: { at: number; kind: FaultKind }[], t0: number, ctx: FaultContext): Promise<void> {
    const pending: Promise<void>[] = [];
    for (const f of plan) {
      await pause(t0 + f.at - Date.now(), this.io.signal);
      if (this.io.signal.aborted) break;
      pending.push(this.inject(f.kind, ctx));
    }
    await Promise.all(pending);
  }

  /**
   * What is open when the faults stop must be recovery, not a queue the machine has not got to yet:
   * while more units wait to start than the workers have slots (a busy machine drains slower than
   * the runs were triggered), the fault phase goes on, one more fault (of the kinds in play, seeded)
   * every `gapMs`, for at most the planned duration again. The report says how long it went on.
   */
  private async faultsWhileBacklogged(kinds: FaultKind[], gapMs: number, ctx: FaultContext, orgId: string) {
    const start = Date.now();
    const until = start + this.opts.durationS * 1000;
    const slots = this.opts.workers * this.opts.concurrency;
    const rng = ctx.rng.fork(4);
    while (kinds.length > 0 && Date.now() < until && !this.io.signal.aborted) {
      if ((await waitingUnits(ctx.db, orgId)) <= slots) break;
      await this.inject(rng.pick(kinds), ctx);
      await pause(gapMs, this.io.signal);
    }
    this.extendedMs = Date.now() - start;
  }

  private async inject(kind: FaultKind, ctx: FaultContext): Promise<void> {
    const group = GROUP[kind];
    const before = group ? this.locks.get(group) : undefined;
    const work = (async () => {
      await before;
      try {
        const rec = await INJECTORS[kind](ctx);
        if (rec) this.records.push(rec);
        else this.missed[kind] = (this.missed[kind] ?? 0) + 1;
      } catch (err) {
        this.missed[kind] = (this.missed[kind] ?? 0) + 1;
        this.injectErrors.push(`${kind}: ${(err as Error).message}`);
        this.io.note(`chaos: could not inject ${kind}: ${(err as Error).message}`);
      }
    })();
    if (group) this.locks.set(group, work);
    await work;
  }

  /**
   * Quiescence: every run terminal (waiting a little past the bound, so a late run is told apart from
   * a stranded one), then every post_sync row delivered, then two more reconcile intervals in which
   * nothing may move a terminal run again.
   */
  private async settle(db: Db, orgId: string, faultsStoppedAt: number, boundMs: number): Promise<void> {
    const deadline = faultsStoppedAt + boundMs + 30_000;
    while (Date.now() < deadline && !this.io.signal.aborted) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${db.schema.sync_runs}
          WHERE org_id = $1 AND status IN ('planned', 'dispatching')`,
        [orgId],
      );
      if (rows[0]!.n === 0) break;
      await pause(200, this.io.signal);
    }
    await this.drainPostSync(db);
  }

  /** Every post_sync row delivered, then two reconcile intervals in which nothing may move a terminal run again. */
  private async drainPostSync(db: Db): Promise<void> {
    this.phase = 'post_sync';
    const postSyncDeadline = Date.now() + 2 * CLAIM_TIMEOUT_MS + 90_000;
    while (Date.now() < postSyncDeadline && !this.io.signal.aborted) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${db.schema.sync_dispatch_outbox}
          WHERE kind = 'post_sync' AND status = 'pending'`,
      );
      if (rows[0]!.n === 0) break;
      await pause(250, this.io.signal);
    }
    await pause(2 * RECONCILE_INTERVAL_MS + LEASE_MS / 2, this.io.signal);
  }

  /**
   * With `--provider`: once every run is terminal and the emulator is quiet (no faults, no edits,
   * its search caught up), one more incremental run reads what changed since each watermark (less
   * the overlap); the store is then compared with the ground truth. Then a verify run lists every
   * item and tombstones those deleted at the provider; the deletions are compared with the truth.
   * Each run must succeed; its post_sync is delivered like every other run's.
   */
  private async finalRuns(
    engine: NonNullable<Resources['control']>,
    orgId: string,
    integration: ChaosIntegration,
    r: Resources,
  ): Promise<{ incremental: FinalRun; verify: FinalRun; truth: InvariantResult[] }> {
    const target = r.target!;
    this.phase = 'final incremental';
    await target.settled();
    const incremental = await this.finalRun(engine, orgId, integration, 'incremental');
    const stored = await checkGroundTruth(engine.db, orgId, integration.id, target.truth(), incremental);
    this.phase = 'final verify';
    const verify = await this.finalRun(engine, orgId, integration, 'verify');
    const deletions = await checkDeletions(engine.db, orgId, integration.id, target.truth(), verify);
    return { incremental, verify, truth: [stored, deletions] };
  }

  /** Triggers a run of `mode` on the quiet emulator and waits for its end and its post_sync. */
  private async finalRun(
    engine: NonNullable<Resources['control']>,
    orgId: string,
    integration: ChaosIntegration,
    mode: 'incremental' | 'verify',
  ): Promise<FinalRun> {
    const id = (await triggerRun(engine, orgId, { at: 0, integration, mode })).syncRunId;
    this.runs.set(id, Date.now());
    const deadline = Date.now() + FINAL_RUN_TIMEOUT_MS;
    let status = 'planned';
    while (Date.now() < deadline && !this.io.signal.aborted) {
      const { rows } = await engine.db.query<{ status: string }>(
        `SELECT status FROM ${engine.db.schema.sync_runs} WHERE id = $1`,
        [id],
      );
      status = rows[0]?.status ?? 'missing';
      if (!['planned', 'dispatching'].includes(status)) break;
      await pause(200, this.io.signal);
    }
    await this.drainPostSync(engine.db);
    return { id, status };
  }

  private progressState() {
    const byKind: Record<string, number> = {};
    for (const r of this.records) byKind[r.kind] = (byKind[r.kind] ?? 0) + 1;
    return {
      phase: this.phase,
      elapsedMs: Date.now() - this.startedAt,
      faults: this.records.length,
      faultsByKind: byKind,
      runsTriggered: this.runs.size,
      runsPlanned: this.planned,
    };
  }
}

/** Units of the org not yet started (or waiting to start again): the queue the workers have yet to reach. */
async function waitingUnits(db: Db, orgId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${db.schema.sync_run_units}
      WHERE org_id = $1 AND status IN ('planned', 'dispatching', 'retrying')`,
    [orgId],
  );
  return rows[0]!.n;
}
