/**
 * The crash-window harness (SPEC §11). No worker or reconciler loop runs: a test drives the system
 * one step at a time — reconciler passes, task deliveries, clock jumps — against real PostgreSQL
 * (one cloned database per test) and, where the broker matters, a real BullMQ queue on Redis
 * (one queue prefix per test). Everything is asserted from the database.
 *
 * - `ManualClock`: leases, backoffs, claim timeouts and stale thresholds pass by jumping the clock.
 * - `HarnessBroker`: records every publish attempt, can fail (`failNext`), lose (`loseNext`) or be
 *   down (`setOutage` with a broker on an unreachable Redis); messages go to Redis or to memory.
 * - `ScriptedProvider`: the synthetic provider, but a test can script one attempt of a unit —
 *   hold it at an exact sink write (a worker that stops mid-unit), hold it before it returns, or throw.
 */
import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { BullMqBroker, fromBullJobId } from '../../src/broker/bullmq.js';
import type { Broker, ConsumeOptions, Consumer, TaskHandler, TaskMessage } from '../../src/broker/types.js';
import { ManualClock } from '../../src/clock.js';
import type { ResolvedSettings } from '../../src/config.js';
import type { OutboxKind } from '../../src/domain/statuses.js';
import { Engine } from '../../src/engine.js';
import { BrokerError } from '../../src/errors.js';
import { Faults } from '../../src/faults.js';
import { silentLogger } from '../../src/logger.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { createSyntheticProvider, runSyntheticUnit, syntheticSink } from '../../src/providers/synthetic.js';
import type { Provider, Sink, UnitContext, UnitResult } from '../../src/sdk/types.js';
import { reconcilePass, type PassCounters } from '../../src/reconciler/pass.js';
import { PostgresSink } from '../../src/sinks/postgres.js';
import { nextDueAt } from '../../src/store/outbox.js';
import type { JobRunRow, OutboxRow, RunRow, UnitRow } from '../../src/store/rows.js';
import type { EngineContext } from '../../src/context.js';
import { dispatchSyncRun } from '../../src/tasks/dispatchSyncRun.js';
import { finalizeSyncRun } from '../../src/tasks/finalizeSyncRun.js';
import { postSync } from '../../src/tasks/postSync.js';
import { UnitEnds } from '../../src/tasks/unitEnds.js';
import { armRememberedRunOf } from '../../src/planning/webhooks.js';
import { runUnitMessage } from '../../src/tasks/runSyncUnit.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';

export const SECOND = 1000;
/** Where every test's clock starts (backfill windows below are independent of it). */
export const T0 = Date.UTC(2026, 2, 2, 0, 0, 0);
/** The synthetic provider writes 500 rows per fenced sink write. */
export const CHUNK_ROWS = 500;

// ---------------------------------------------------------------------------------------------
// Holds: a provider attempt parked at an exact line until the test releases it
// ---------------------------------------------------------------------------------------------

/** A point where a scripted attempt waits; `reached` resolves when the attempt gets there. */
export class Hold {
  /** The lease owner of the attempt that reached the hold. */
  owner: string | null = null;
  readonly reached: Promise<void>;
  private readonly released: Promise<void>;
  private markReached!: () => void;
  private doRelease!: () => void;

  constructor() {
    this.reached = new Promise((r) => (this.markReached = r));
    this.released = new Promise((r) => (this.doRelease = r));
  }

  release(): void {
    this.doRelease();
  }

  /** Parks the attempt; with `abortable`, a lost lease (heartbeat CAS failed) ends the wait with its reason. */
  async wait(owner: string, signal: AbortSignal, abortable: boolean): Promise<void> {
    this.owner = owner;
    this.markReached();
    if (!abortable) return this.released;
    signal.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      void this.released.then(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }
}

/** What one attempt of a unit does instead of a plain synthetic run. */
export type AttemptScript =
  /** Runs the synthetic provider but parks before sink write number `afterWrites + 1`. */
  | { kind: 'holdAtWrite'; afterWrites: number; hold: Hold; abortable: boolean }
  /** Runs the synthetic provider to the end (everything written), then parks before returning. */
  | { kind: 'holdBeforeReturn'; hold: Hold; abortable: boolean }
  /** Throws `error` at once (e.g. a RateLimitError). */
  | { kind: 'throw'; error: unknown };

export interface ProviderCall {
  unitId: string;
  owner: string;
  attempt: number;
  scripted: AttemptScript['kind'] | null;
  /** The checkpoint the attempt was handed (UnitContext.checkpoint). */
  checkpoint: UnitContext['checkpoint'];
}

/** The synthetic provider with per-attempt scripts (by unit id), registered under `name`. */
export class ScriptedProvider {
  readonly calls: ProviderCall[] = [];
  readonly holds: Hold[] = [];
  private readonly scripts = new Map<string, AttemptScript[]>();

  /** Queues scripts for the unit's next attempts (one per attempt, in order). */
  script(unitId: string, ...attempts: AttemptScript[]): void {
    for (const a of attempts) if (a.kind !== 'throw') this.holds.push(a.hold);
    this.scripts.set(unitId, [...(this.scripts.get(unitId) ?? []), ...attempts]);
  }

  /** The next attempt of `unitId` parks before its (afterWrites + 1)-th sink write. */
  holdAtWrite(unitId: string, afterWrites: number, opts: { abortable?: boolean } = {}): Hold {
    const hold = new Hold();
    this.script(unitId, { kind: 'holdAtWrite', afterWrites, hold, abortable: opts.abortable ?? true });
    return hold;
  }

  /** The next attempt of `unitId` writes everything, then parks before returning its result. */
  holdBeforeReturn(unitId: string, opts: { abortable?: boolean } = {}): Hold {
    const hold = new Hold();
    this.script(unitId, { kind: 'holdBeforeReturn', hold, abortable: opts.abortable ?? true });
    return hold;
  }

  throwOnce(unitId: string, error: unknown): void {
    this.script(unitId, { kind: 'throw', error });
  }

  releaseAll(): void {
    for (const h of this.holds) h.release();
  }

  /** A provider object (datasets, unit provider name, post-sync handlers of the synthetic one). */
  provider(name = 'synthetic', withHandlers = true): Provider {
    const base = createSyntheticProvider();
    return {
      ...base,
      name,
      postSyncHandlers: withHandlers ? base.postSyncHandlers : [],
      runUnit: (uctx) => this.runUnit(uctx),
    };
  }

  private async runUnit(uctx: UnitContext): Promise<UnitResult> {
    const script = this.scripts.get(uctx.unit.id)?.shift() ?? null;
    this.calls.push({
      unitId: uctx.unit.id,
      owner: uctx.lease.owner,
      attempt: uctx.unit.attempt,
      scripted: script?.kind ?? null,
      checkpoint: uctx.checkpoint,
    });
    if (!script) return runSyntheticUnit(uctx);
    switch (script.kind) {
      case 'throw':
        throw script.error;
      case 'holdBeforeReturn': {
        const result = await runSyntheticUnit(uctx);
        await script.hold.wait(uctx.lease.owner, uctx.signal, script.abortable);
        return result;
      }
      case 'holdAtWrite': {
        let writes = 0;
        const inner = uctx.sink;
        const sink: Sink = {
          name: inner.name,
          surfaces: inner.surfaces,
          retrySafeSurfaces: inner.retrySafeSurfaces,
          write: async (guard, surface, rows) => {
            if (writes++ === script.afterWrites)
              await script.hold.wait(uctx.lease.owner, uctx.signal, script.abortable);
            return inner.write(guard, surface, rows);
          },
        };
        return runSyntheticUnit({ ...uctx, sink });
      }
    }
  }
}

/** The synthetic surface written through a sink that does NOT declare it retry-safe. */
function unsafeSyntheticSink(db: TestDatabase['db']): PostgresSink {
  return new PostgresSink(db, {
    synthetic_items: {
      table: 'synthetic_items',
      conflictColumns: ['integration_id', 'source_key', 'dataset_key', 'item_key'],
      columns: [
        'org_id',
        'integration_id',
        'source_key',
        'dataset_key',
        'item_key',
        'item_day',
        'payload',
        'unit_id',
        'lease_owner',
        'written_at',
      ],
      jsonColumns: ['payload'],
      retrySafe: false,
    },
  });
}

// ---------------------------------------------------------------------------------------------
// The broker
// ---------------------------------------------------------------------------------------------

export interface PublishAttempt {
  at: Date;
  messages: TaskMessage[];
  result: 'published' | 'failed' | 'lost';
  error?: string;
}

/**
 * Wraps the real broker (or an in-memory queue): records every publish attempt and can be told to
 * fail the next publishes, to lose them (the call succeeds, the messages vanish), or to be down
 * (publishes go to `outage`, e.g. a BullMQ broker on an unreachable Redis). Consumption is done by
 * the test through `take()`: nothing runs a task unless the test delivers it.
 */
export class HarnessBroker implements Broker {
  readonly kind: 'bullmq' | 'inprocess';
  readonly attempts: PublishAttempt[] = [];
  private failures = 0;
  private losses = 0;
  private outage: Broker | null = null;
  private readonly memory: TaskMessage[] = [];

  constructor(
    private readonly clock: ManualClock,
    private readonly redis: { broker: BullMqBroker; queue: Queue } | null,
  ) {
    this.kind = redis ? 'bullmq' : 'inprocess';
  }

  /** The next `n` publishes throw a BrokerError (nothing reaches the broker). */
  failNext(n = 1): void {
    this.failures += n;
  }

  /** The next `n` publishes resolve but their messages are lost. */
  loseNext(n = 1): void {
    this.losses += n;
  }

  /** While set, publishes go to `broker` (a really unreachable one) instead. */
  setOutage(broker: Broker | null): void {
    this.outage = broker;
  }

  async publish(messages: readonly TaskMessage[]): Promise<void> {
    const copy = structuredClone([...messages]);
    const record = (result: PublishAttempt['result'], error?: unknown) =>
      this.attempts.push({
        at: this.clock.now(),
        messages: copy,
        result,
        ...(error ? { error: error instanceof Error ? error.message : JSON.stringify(error) } : {}),
      });
    if (this.outage) {
      try {
        await this.outage.publish(messages);
      } catch (err) {
        record('failed', err);
        throw err;
      }
      throw new Error('the outage broker unexpectedly accepted a publish');
    }
    if (this.failures > 0) {
      this.failures -= 1;
      const err = new BrokerError('injected publish failure');
      record('failed', err);
      throw err;
    }
    if (this.losses > 0) {
      this.losses -= 1;
      record('lost');
      return;
    }
    if (this.redis) await this.redis.broker.publish(messages);
    else this.memory.push(...copy);
    record('published');
  }

  /** Messages published and not yet taken, oldest first (from Redis: read and removed from the queue). */
  async take(): Promise<TaskMessage[]> {
    if (!this.redis) return this.memory.splice(0);
    const jobs = (await this.redis.queue.getJobs(['waiting', 'prioritized', 'delayed'], 0, -1, true)) as Job[];
    const out: TaskMessage[] = [];
    for (const job of jobs) {
      out.push({
        name: job.name as TaskMessage['name'],
        payload: job.data as TaskMessage['payload'],
        jobId: fromBullJobId(job.id ?? ''),
      });
      await this.redis.queue.remove(job.id!);
    }
    return out;
  }

  /** The broker loses everything it holds (a purge / FLUSH). Returns how many messages were lost. */
  async purge(): Promise<number> {
    if (!this.redis) return this.memory.splice(0).length;
    const n = await this.redis.queue.count();
    await this.redis.queue.drain(true);
    return n;
  }

  /** Messages successfully handed to the broker, by task name. */
  published(name?: TaskMessage['name']): TaskMessage[] {
    return this.attempts
      .filter((a) => a.result === 'published')
      .flatMap((a) => a.messages)
      .filter((m) => !name || m.name === name);
  }

  consume(_handler: TaskHandler, _options: ConsumeOptions): Consumer {
    throw new Error('crash tests deliver messages themselves (HarnessBroker.take)');
  }

  async ping(): Promise<void> {
    if (this.outage) return this.outage.ping();
    if (this.redis) return this.redis.broker.ping();
  }

  async close(): Promise<void> {
    if (!this.redis) return;
    await this.redis.queue.obliterate({ force: true }).catch(() => undefined);
    await this.redis.queue.close().catch(() => undefined);
    await this.redis.broker.close();
  }
}

/** A BullMQ broker on a port where nothing listens: every publish fails for real. */
export function unreachableBroker(): BullMqBroker {
  return new BullMqBroker({
    redisUrl: 'redis://127.0.0.1:1',
    prefix: uniquePrefix('crash-down'),
    publishTimeoutMs: 2000,
  });
}

// ---------------------------------------------------------------------------------------------
// The harness
// ---------------------------------------------------------------------------------------------

export interface HarnessOptions {
  /**
   * Overrides on top of the test settings (lease 2 s, retry backoff 0, countdown 1 s, and one unit
   * per run_sync_unit message, so a test can hold each unit's message; batches: unitsPerMessage).
   */
  settings?: Partial<ResolvedSettings>;
  /** Publish to a real BullMQ queue on Redis (its own prefix) instead of memory. */
  redis?: boolean;
  /** Jitter source (rate-limit deferrals); pinned to 0 by default. */
  random?: () => number;
}

export interface Delivery {
  name: TaskMessage['name'];
  runId: string;
  unitId?: string;
  jobId: string;
  outcome: unknown;
}

export interface NewTestIntegration {
  sources?: string[];
  datasets?: string[];
  config?: Record<string, unknown>;
  provider?: 'synthetic' | 'synthetic-unsafe';
  orgId?: string;
}

type Rows<T> = Promise<T[]>;

export class Harness {
  readonly deliveries: Delivery[] = [];
  private readonly inflight = new Set<Promise<unknown>>();
  private closed = false;

  private constructor(
    readonly engine: Engine,
    readonly t: TestDatabase,
    readonly clock: ManualClock,
    readonly broker: HarnessBroker,
    readonly faults: Faults,
    readonly provider: ScriptedProvider,
    private readonly redisConn: Redis | null,
  ) {}

  static async open(opts: HarnessOptions = {}): Promise<Harness> {
    const t = await createTestDatabase();
    const clock = new ManualClock(T0);
    let redisConn: Redis | null = null;
    let redis: { broker: BullMqBroker; queue: Queue } | null = null;
    if (opts.redis) {
      const prefix = uniquePrefix('crash');
      redisConn = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
      redis = {
        broker: new BullMqBroker({ redisUrl: REDIS_URL, prefix }),
        queue: new Queue('tasks', { connection: redisConn, prefix }),
      };
    }
    const broker = new HarnessBroker(clock, redis);
    const faults = new Faults();
    const provider = new ScriptedProvider();
    const registry = new ProviderRegistry()
      .register(provider.provider('synthetic'), syntheticSink(t.db))
      .register(provider.provider('synthetic-unsafe', false), unsafeSyntheticSink(t.db));
    const engine = await Engine.open({
      settings: testSettings({ unitsPerMessage: 1, ...opts.settings }),
      db: t.db,
      broker,
      clock,
      logger: silentLogger(),
      faults,
      registry,
      migrate: false,
    });
    engine.ctx.random = opts.random ?? (() => 0);
    return new Harness(engine, t, clock, broker, faults, provider, redisConn);
  }

  get ctx(): EngineContext {
    return this.engine.ctx;
  }

  /**
   * The context of another worker process on the same database: its own unit-end owner (its own
   * group commit and re-checks), with `overrides` (e.g. a Db that gates its statements).
   */
  worker(overrides: Partial<EngineContext> = {}): EngineContext {
    const ctx: EngineContext = { ...this.engine.ctx, ...overrides };
    const { db, clock, faults, logger, metrics } = ctx;
    // Wired as the engine wires its own (src/engine.ts): remembered deliveries armed at a unit's end.
    const armRemembered = (integrationId: string) => armRememberedRunOf(db, worker, integrationId);
    const worker: EngineContext = {
      ...ctx,
      unitEnds: new UnitEnds({ db, clock, faults, logger, metrics, armRemembered }),
    };
    return worker;
  }

  get db() {
    return this.t.db;
  }

  now(): Date {
    return this.clock.now();
  }

  advance(ms: number): Date {
    this.clock.advance(ms);
    return this.clock.now();
  }

  // ---- setup ----------------------------------------------------------------------------------

  async integration(i: NewTestIntegration = {}): Promise<{ id: string; orgId: string }> {
    const orgId = i.orgId ?? 'org-crash';
    const row = await this.engine.createIntegration({
      orgId,
      provider: i.provider ?? 'synthetic',
      name: 'crash test',
      sources: i.sources ?? ['s1'],
      datasets: i.datasets ?? ['work-items'],
      config: { latencyMs: 0, itemsPerDay: 2, ...(i.config ?? {}) },
    });
    return { id: row.id, orgId };
  }

  /** A backfill of `[since, since + days)` (2026-01-05 onwards by default). */
  async backfill(integ: { id: string; orgId: string }, days: number, since = new Date('2026-01-05T00:00:00Z')) {
    const before = new Date(since.getTime() + days * 86_400_000);
    return this.engine.trigger({
      orgId: integ.orgId,
      integrationId: integ.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since,
      before,
      force: true,
    });
  }

  async incremental(integ: { id: string; orgId: string }) {
    return this.engine.trigger({
      orgId: integ.orgId,
      integrationId: integ.id,
      mode: 'incremental',
      triggeredBy: 'manual',
      force: true,
    });
  }

  // ---- driving --------------------------------------------------------------------------------

  /** One reconciler pass (expire → repair → materialize → relay → prune). */
  pass(ctx: EngineContext = this.ctx, id = 'crash-reconciler'): Promise<PassCounters> {
    return reconcilePass(ctx, id);
  }

  /** Runs the task a message names, as a worker would, and records its outcome. */
  deliver(msg: TaskMessage, ctx: EngineContext = this.ctx): Promise<unknown> {
    const work = (async () => {
      const { runId, unitId } = msg.payload;
      let outcome: unknown;
      switch (msg.name) {
        case 'dispatch_sync_run':
          outcome = await dispatchSyncRun(ctx, runId);
          break;
        case 'run_sync_unit':
          outcome = await runUnitMessage(ctx, msg.payload);
          await ctx.unitEnds.settle(); // the unit's finalize re-check, which its task does not wait for
          break;
        case 'finalize_sync_run':
          outcome = await finalizeSyncRun(ctx, runId);
          break;
        case 'post_sync':
          outcome = await postSync(ctx, runId);
          break;
      }
      this.deliveries.push({ name: msg.name, runId, ...(unitId ? { unitId } : {}), jobId: msg.jobId, outcome });
      return outcome;
    })();
    this.inflight.add(work);
    void work.then(
      () => this.inflight.delete(work),
      () => this.inflight.delete(work),
    );
    return work;
  }

  /** Takes what the broker holds, optionally only messages of one task name (the rest stay queued). */
  async take(name?: TaskMessage['name']): Promise<TaskMessage[]> {
    const all = [...this.held.splice(0), ...(await this.broker.take())];
    if (!name) return all;
    const rest = all.filter((m) => m.name !== name);
    if (rest.length > 0) this.requeue(rest);
    return all.filter((m) => m.name === name);
  }

  private readonly held: TaskMessage[] = [];

  /** Messages the test took but put back (delivered first by the next `pump`). */
  requeue(messages: TaskMessage[]): void {
    this.held.push(...messages);
  }

  /** Delivers every queued message, one at a time, until the broker is empty; returns the deliveries. */
  async pump(max = 500): Promise<Delivery[]> {
    const start = this.deliveries.length;
    for (let i = 0; i < max; i++) {
      const batch = await this.take();
      if (batch.length === 0) return this.deliveries.slice(start);
      for (const msg of batch) await this.deliver(msg);
    }
    throw new Error('pump: the broker never became empty');
  }

  /**
   * Drives the run to a terminal state with no pending outbox row: pump, pass, and when nothing
   * moved jump the clock to the next due outbox row. Returns the run.
   */
  async settle(runId: string, maxSteps = 100): Promise<RunRow> {
    for (let i = 0; i < maxSteps; i++) {
      const delivered = (await this.pump()).length;
      const c = await this.pass();
      const moved =
        delivered +
        c.expired_units +
        c.materialized_dispatch +
        c.materialized_finalize +
        c.materialized_post_sync +
        c.relayed_dispatch +
        c.relayed_finalize +
        c.relayed_post_sync +
        c.publish_failures +
        c.relay_skipped;
      if (moved > 0) continue;
      const run = (await this.run(runId))!;
      const due = await nextDueAt(this.db);
      if (!due) {
        if (['success', 'partial_failed', 'failed', 'cancelled'].includes(run.status)) return run;
        throw new Error(`settle: run ${runId} is ${run.status} and nothing is due`);
      }
      if (due > this.now()) this.clock.set(due);
    }
    throw new Error(`settle: run ${runId} did not settle in ${maxSteps} steps`);
  }

  // ---- queries (everything asserted comes from the database) -----------------------------------

  async run(runId: string): Promise<RunRow | null> {
    const { rows } = await this.db.query<RunRow>('SELECT * FROM syncrelay.sync_runs WHERE id = $1', [runId]);
    return rows[0] ?? null;
  }

  async units(runId: string): Rows<UnitRow> {
    const { rows } = await this.db.query<UnitRow>(
      'SELECT * FROM syncrelay.sync_run_units ' +
        "WHERE sync_run_id = $1 ORDER BY tier = 'reference' DESC, since_at NULLS FIRST, id",
      [runId],
    );
    return rows;
  }

  async unit(unitId: string): Promise<UnitRow> {
    const { rows } = await this.db.query<UnitRow>('SELECT * FROM syncrelay.sync_run_units WHERE id = $1', [unitId]);
    return rows[0]!;
  }

  async outbox(runId: string, kind: OutboxKind): Promise<(OutboxRow & { arm_seq: string }) | null> {
    const { rows } = await this.db.query<OutboxRow & { arm_seq: string }>(
      'SELECT * FROM syncrelay.sync_dispatch_outbox WHERE sync_run_id = $1 AND kind = $2',
      [runId, kind],
    );
    return rows[0] ?? null;
  }

  async outboxCount(runId: string): Promise<Record<string, number>> {
    const { rows } = await this.db.query<{ kind: string; n: number }>(
      'SELECT kind, count(*)::int AS n FROM syncrelay.sync_dispatch_outbox WHERE sync_run_id = $1 GROUP BY kind',
      [runId],
    );
    return Object.fromEntries(rows.map((r) => [r.kind, r.n]));
  }

  async ledger(runId: string): Rows<{ kind: string }> {
    const { rows } = await this.db.query<{ kind: string }>(
      'SELECT kind FROM syncrelay.sync_run_post_dispatches WHERE sync_run_id = $1',
      [runId],
    );
    return rows;
  }

  async receipts(runId: string): Rows<{ handler: string; delivery: string }> {
    const { rows } = await this.db.query<{ handler: string; delivery: string }>(
      'SELECT handler, delivery FROM syncrelay.post_sync_receipts WHERE sync_run_id = $1',
      [runId],
    );
    return rows;
  }

  /** Distinct `computed_at` generations the metrics roll-up wrote for the run. */
  async metricGenerations(runId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>(
      'SELECT count(DISTINCT computed_at)::int AS n FROM syncrelay.synthetic_metrics_daily WHERE sync_run_id = $1',
      [runId],
    );
    return rows[0]!.n;
  }

  async executions(unitId: string): Rows<{ lease_owner: string; outcome: string }> {
    const { rows } = await this.db.query<{ lease_owner: string; outcome: string }>(
      'SELECT lease_owner, outcome FROM syncrelay.synthetic_executions WHERE unit_id = $1 ORDER BY id',
      [unitId],
    );
    return rows;
  }

  /** synthetic_items rows a unit wrote, by lease owner. */
  async itemsByOwner(unitId: string): Promise<Record<string, number>> {
    const { rows } = await this.db.query<{ lease_owner: string; n: number }>(
      'SELECT lease_owner, count(*)::int AS n FROM syncrelay.synthetic_items WHERE unit_id = $1 GROUP BY lease_owner',
      [unitId],
    );
    return Object.fromEntries(rows.map((r) => [r.lease_owner, r.n]));
  }

  async jobRun(runId: string): Promise<JobRunRow> {
    const { rows } = await this.db.query<JobRunRow>(
      "SELECT * FROM syncrelay.job_runs WHERE result ->> 'sync_run_id' = $1",
      [runId],
    );
    return rows[0]!;
  }

  /** Releases every hold, waits for deliveries still running, closes the engine, drops the database. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.provider.releaseAll();
    await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, 10_000).unref())]);
    await this.engine.close();
    await this.broker.close();
    await this.redisConn?.quit().catch(() => undefined);
    await this.t.drop();
  }
}

/** Resolves when `p` settles or rejects after `ms` of real time (a guard against a hung test). */
export async function within<T>(p: Promise<T>, ms = 5000, what = 'operation'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
