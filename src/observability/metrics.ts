/**
 * Prometheus metrics of one engine, in a prom-client Registry the engine owns: two engines in one
 * process never share (or collide on) a metric. Counters and histograms are recorded by the
 * components of this process as things happen; the outbox, unit and run gauges are read from the
 * database when the registry is scraped (one round of bounded queries, shared by all gauges), so
 * every replica reports the same cluster-wide numbers. That round runs at most once per
 * `snapshotMaxAgeMs` however often the registry is scraped; a reconciler pass or relay batch of
 * this engine makes the next scrape read afresh, so a scrape never hides what this process just did.
 */
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import type { ExpiryDecision } from '../domain/retryPolicy.js';
import { VERIFY_COUNTS, type VerifyCounts } from '../domain/verify.js';
import { OUTBOX_KINDS, TERMINAL_UNIT_STATUSES, UNIT_STATUSES } from '../domain/statuses.js';
import { describeError } from '../errors.js';
import {
  liveRunCounts,
  openUnitCounts,
  outboxGroups,
  recentTerminalUnitCounts,
  type OutboxGroup,
  type StatusCount,
} from './queries.js';

export type RetryReason = 'expired_lease' | 'soft_timeout' | 'rate_limit';
export type TriggerOperation = 'sync' | 'backfill';
export type PassResult = 'ok' | 'error';

const EXPIRY_DECISIONS: readonly ExpiryDecision[] = ['retry', 'retry_exhausted', 'worker_lost'];
const RETRY_REASONS: readonly RetryReason[] = ['expired_lease', 'soft_timeout', 'rate_limit'];
const OPEN_UNIT_STATUSES = UNIT_STATUSES.filter((s) => !TERMINAL_UNIT_STATUSES.includes(s));
const LIVE_RUN_STATUSES = ['planned', 'dispatching'] as const;
const OUTBOX_STATUSES = ['pending', 'dispatched'] as const;

/** Where the scrape-time gauges read from. */
export interface MetricsSource {
  db: Db;
  clock: Clock;
  logger?: Logger;
}

export interface EngineMetricsOptions {
  /** Register into this registry instead of a new one (one engine per registry). */
  registry?: Registry;
  /** Terminal units are counted for live runs and runs completed within this window. @default 1 h */
  recentTerminalMs?: number;
  /** At most this many live and this many recently completed runs are counted. @default 1000 */
  recentRunsLimit?: number;
  /**
   * The database gauges are read at most once per this long (on the source's clock), however often
   * the registry is scraped; 0 reads on every scrape. @default 5000
   */
  snapshotMaxAgeMs?: number;
}

interface Snapshot {
  outbox: OutboxGroup[];
  openUnits: StatusCount[];
  liveRuns: StatusCount[];
  recentTerminal: StatusCount[];
  now: Date;
}

/** A finished read: when it started (source clock, ms), the generation it started in, its result. */
interface CachedSnapshot {
  atMs: number;
  generation: number;
  snapshot: Snapshot | null;
}

export class EngineMetrics {
  readonly registry: Registry;
  private readonly recentTerminalMs: number;
  private readonly recentRunsLimit: number;
  private readonly snapshotMaxAgeMs: number;
  private inflight: Promise<Snapshot | null> | null = null;
  private cached: CachedSnapshot | null = null;
  /** Bumped by what this engine's reconciler records: a cached read from an older generation is stale. */
  private generation = 0;

  private readonly relayPublishes: Counter<'kind'>;
  private readonly relayFailures: Counter<'kind'>;
  private readonly relaySkipped: Counter<'kind'>;
  private readonly leaseExpiries: Counter<'decision'>;
  private readonly unitRetries: Counter<'reason'>;
  private readonly triggerRequests: Counter<'operation' | 'code'>;
  private readonly collectErrors: Counter;
  private readonly verifyItems: Counter<'provider' | 'outcome'>;
  private readonly unitDuration: Histogram<'provider' | 'outcome'>;
  private readonly passDuration: Histogram<'result'>;

  constructor(
    private readonly source: MetricsSource | null,
    opts: EngineMetricsOptions = {},
  ) {
    const registers = [(this.registry = opts.registry ?? new Registry())];
    this.recentTerminalMs = opts.recentTerminalMs ?? 3_600_000;
    this.recentRunsLimit = opts.recentRunsLimit ?? 1000;
    this.snapshotMaxAgeMs = opts.snapshotMaxAgeMs ?? 5000;
    const counter = <L extends string>(name: string, labelNames: readonly L[], help: string) =>
      new Counter<L>({ name: `syncrelay_${name}`, help, labelNames, registers });

    this.relayPublishes = counter(
      'relay_publishes_total',
      ['kind'],
      'Outbox rows the relay published to the broker, by kind.',
    );
    this.relayFailures = counter(
      'relay_publish_failures_total',
      ['kind'],
      'Outbox rows whose publish failed (re-armed with backoff; at-most-once post_sync: lost), by kind.',
    );
    this.relaySkipped = counter(
      'relay_skipped_total',
      ['kind'],
      'Outbox rows the relay marked without publishing (the run no longer needed them), by kind.',
    );
    this.leaseExpiries = counter(
      'lease_expiries_total',
      ['decision'],
      "Expired unit leases handled by the reconciler's expire phase, by decision.",
    );
    this.unitRetries = counter(
      'unit_retries_total',
      ['reason'],
      'Units moved running → retrying, by reason (rate_limit: rate-limit deferrals; expired_lease; soft_timeout).',
    );
    this.triggerRequests = counter(
      'trigger_requests_total',
      ['operation', 'code'],
      'Trigger requests answered by the HTTP API, by status code.',
    );
    this.collectErrors = counter(
      'metrics_collect_errors_total',
      [],
      'Reads of the database gauges that failed (the gauges are then absent until the next read).',
    );
    this.verifyItems = counter(
      'verify_items_total',
      ['provider', 'outcome'],
      'What successful verify units found, by provider and outcome (checked, missing, stale, restored, deleted).',
    );
    this.unitDuration = new Histogram({
      name: 'syncrelay_unit_duration_seconds',
      help: 'Wall time of a unit attempt in this process, from its claim to its end, by provider and outcome.',
      labelNames: ['provider', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers,
    });
    this.passDuration = new Histogram({
      name: 'syncrelay_reconciler_pass_duration_seconds',
      help: 'Duration of a full reconciler pass (expire → repair → materialize → relay → prune).',
      labelNames: ['result'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.dbGauges(registers);
    this.zero();
  }

  // ---- recorded as things happen ------------------------------------------------------------

  relayPublished(kind: string, n = 1): void {
    if (n <= 0) return;
    this.relayPublishes.inc({ kind }, n);
    this.generation++;
  }

  relayFailed(kind: string, n = 1): void {
    if (n <= 0) return;
    this.relayFailures.inc({ kind }, n);
    this.generation++;
  }

  relaySkippedRows(kind: string, n = 1): void {
    if (n <= 0) return;
    this.relaySkipped.inc({ kind }, n);
    this.generation++;
  }

  leaseExpired(decision: ExpiryDecision): void {
    this.leaseExpiries.inc({ decision });
    if (decision === 'retry') this.unitRetries.inc({ reason: 'expired_lease' });
    this.generation++;
  }

  unitRetried(reason: Exclude<RetryReason, 'expired_lease'>): void {
    this.unitRetries.inc({ reason });
  }

  unitEnded(provider: string, outcome: string, seconds: number): void {
    this.unitDuration.observe({ provider, outcome }, Math.max(0, seconds));
  }

  /** A successful verify unit's counts. */
  verifyCounted(provider: string, counts: VerifyCounts): void {
    for (const outcome of VERIFY_COUNTS)
      if (counts[outcome] > 0) this.verifyItems.inc({ provider, outcome }, counts[outcome]);
  }

  passEnded(result: PassResult, seconds: number): void {
    this.passDuration.observe({ result }, Math.max(0, seconds));
    this.generation++;
  }

  triggerAnswered(operation: TriggerOperation, statusCode: number): void {
    this.triggerRequests.inc({ operation, code: String(statusCode) });
  }

  /** The exposition text (what `/metrics` serves). */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Series with known label values exist from the start (0), so rate() and alerts see them. */
  private zero(): void {
    for (const kind of OUTBOX_KINDS) {
      this.relayPublishes.inc({ kind }, 0);
      this.relayFailures.inc({ kind }, 0);
      this.relaySkipped.inc({ kind }, 0);
    }
    for (const decision of EXPIRY_DECISIONS) this.leaseExpiries.inc({ decision }, 0);
    for (const reason of RETRY_REASONS) this.unitRetries.inc({ reason }, 0);
    this.collectErrors.inc(0);
    for (const result of ['ok', 'error'] as const) this.passDuration.zero({ result });
  }

  // ---- read from the database at scrape time ------------------------------------------------

  private dbGauges(registers: Registry[]): void {
    const self = this;
    const gauge = <L extends string>(
      name: string,
      help: string,
      labelNames: readonly L[],
      fill: (g: Gauge<L>, s: Snapshot) => void,
    ) =>
      new Gauge<L>({
        name: `syncrelay_${name}`,
        help,
        labelNames,
        registers,
        async collect() {
          const s = await self.snapshot();
          this.reset();
          if (s) fill(this, s);
        },
      });

    gauge('outbox_rows', 'Outbox rows by kind and status.', ['kind', 'status'], (g, s) => {
      for (const kind of OUTBOX_KINDS) for (const status of OUTBOX_STATUSES) g.set({ kind, status }, 0);
      for (const r of s.outbox) g.set({ kind: r.kind, status: r.status }, r.n);
    });
    gauge(
      'outbox_oldest_pending_age_seconds',
      'How long the oldest pending outbox row of each kind has been due (0 when none is due).',
      ['kind'],
      (g, s) => {
        for (const kind of OUTBOX_KINDS) {
          const oldest = s.outbox.find((r) => r.kind === kind && r.status === 'pending')?.oldest_pending_at;
          g.set({ kind }, oldest ? Math.max(0, (s.now.getTime() - oldest.getTime()) / 1000) : 0);
        }
      },
    );
    gauge('units', 'Non-terminal units by status (every run).', ['status'], (g, s) =>
      fillCounts(g, OPEN_UNIT_STATUSES, s.openUnits),
    );
    gauge(
      'units_finished_recently',
      'Terminal units by status, of live runs and of runs completed within the recent window ' +
        '(bounded; not all history).',
      ['status'],
      (g, s) => fillCounts(g, TERMINAL_UNIT_STATUSES, s.recentTerminal),
    );
    gauge('runs', 'Live (non-terminal) runs by status.', ['status'], (g, s) =>
      fillCounts(g, LIVE_RUN_STATUSES, s.liveRuns),
    );
  }

  /**
   * The gauges' collect() calls of one scrape run at once and share one read; a read younger than
   * `snapshotMaxAgeMs` from the current generation answers later scrapes without a query.
   */
  private snapshot(): Promise<Snapshot | null> {
    if (!this.source) return Promise.resolve(null);
    const nowMs = this.source.clock.now().getTime();
    const c = this.cached;
    const age = c ? nowMs - c.atMs : -1;
    if (c && c.generation === this.generation && age >= 0 && age < this.snapshotMaxAgeMs) {
      return Promise.resolve(c.snapshot);
    }
    this.inflight ??= this.readSnapshot(this.source, nowMs).finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  /** Reads the gauges and caches the result (a failure too: a struggling database is not asked again at once). */
  private async readSnapshot(source: MetricsSource, atMs: number): Promise<Snapshot | null> {
    const generation = this.generation;
    const snapshot = await this.querySnapshot(source);
    this.cached = { atMs, generation, snapshot };
    return snapshot;
  }

  private async querySnapshot(source: MetricsSource): Promise<Snapshot | null> {
    const { db, clock } = source;
    const now = clock.now();
    try {
      // One connection, one after the other: a scrape never takes more than one from the pool.
      return await db.transaction(async (tx) => ({
        outbox: await outboxGroups(tx),
        openUnits: await openUnitCounts(tx),
        liveRuns: await liveRunCounts(tx),
        recentTerminal: await recentTerminalUnitCounts(
          tx,
          new Date(now.getTime() - this.recentTerminalMs),
          this.recentRunsLimit,
        ),
        now,
      }));
    } catch (err) {
      this.collectErrors.inc();
      source.logger?.warn({ err: describeError(err) }, 'metrics: could not read database gauges');
      return null;
    }
  }
}

function fillCounts(g: Gauge<'status'>, statuses: readonly string[], rows: StatusCount[]): void {
  for (const status of statuses) g.set({ status }, 0);
  for (const r of rows) g.set({ status: r.status }, r.n);
}
