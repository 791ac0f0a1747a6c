/**
 * The one owner of unit ends in an engine: group commit of terminal ends, the finalize re-checks
 * that follow them, retries (rate-limit deferral, soft timeout), and settling what is still in
 * flight. The `Engine` creates one and closes it; nothing about ends lives in module state.
 */
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { after } from '../clock.js';
import type { Db } from '../db/types.js';
import { WATERMARK_MODES } from '../domain/statuses.js';
import { describeError, InjectedFault } from '../errors.js';
import type { Faults } from '../faults.js';
import type { EngineMetrics } from '../observability/metrics.js';
import type { TraceCarrier } from '../observability/trace.js';
import type { DatasetSpec } from '../sdk/types.js';
import { armEndWakes, MAX_RUNS_WOKEN } from '../store/endWakes.js';
import { armOutboxRows } from '../store/outbox.js';
import type { UnitRow } from '../store/rows.js';
import { finishUnits, retryOwnUnit, runsWithoutOpenUnits, type EndedUnit, type EndFacts } from '../store/units.js';
import { advanceWatermark } from '../store/watermarks.js';
import { Coalescer } from './coalesce.js';
import { EndRechecks, type RunRef } from './endRechecks.js';

export type EndOutcome = 'success' | 'failed' | 'retrying' | 'lease_lost';

export interface Terminal {
  status: 'success' | 'failed';
  result: Record<string, unknown>;
  error: string | null;
  touchedSurfaces: readonly string[];
  /** Where the watermark moves on success (incremental / full_resync only: WATERMARK_MODES). */
  watermark: Date | null;
}

/** A lease holder's retry: why, after how long, its error, and a rate-limit deferral's checkpoint. */
export interface RetryRequest {
  reason: 'rate_limit' | 'soft_timeout';
  delayMs: number;
  error: string;
  /** JSON text, already bounded (./checkpoint.ts); a soft timeout keeps the stored one. */
  checkpoint?: string | null;
}

export interface UnitEndsDeps {
  db: Db;
  clock: Clock;
  faults: Faults;
  logger: Logger;
  metrics?: EngineMetrics;
  /**
   * Arms the run of the integration's remembered webhook deliveries whose sources no live run reads
   * (../planning/webhooks.ts `armRememberedRunOf`; it logs its own failures): taken after an end
   * that may have freed them. Without it they wait for the reconciler's next pass.
   */
  armRemembered?: (integrationId: string) => Promise<unknown>;
}

interface EndRequest {
  unit: UnitRow;
  owner: string;
  t: Terminal;
  dataset: DatasetSpec | undefined;
  trace: TraceCarrier | null | undefined;
}

/**
 * 'lease_lost'; the unit's terminal status and whether it saw other open units; or the error that
 * ended this unit alone (after its batch failed and it was ended again on its own).
 */
type Ended =
  'lease_lost' | { status: Terminal['status']; sawOthers: boolean; webhookPending: string | null } | { error: unknown };

/** An end and the sequence number of the commit that made it (see ./endRechecks.ts). */
interface Committed {
  ended: Ended;
  commit: number;
}

/**
 * One end statement of an engine at a time: while it commits, the ends that arrive fill the
 * next one (an idle worker's end still goes out at once). Two workers' ends still run side by side.
 */
const ENDS_IN_FLIGHT = 1;

/** Group commit of one engine's unit ends, their re-checks, and its retries. */
export class UnitEnds {
  private readonly ends: Coalescer<EndRequest, Committed>;
  private readonly rechecks: EndRechecks;
  /** Re-checks (and arms of remembered webhook runs) still running after their units' tasks returned. */
  private readonly background = new Set<Promise<void>>();
  /** Integrations whose remembered webhook run is being armed → asked again meanwhile. */
  private readonly arming = new Map<string, boolean>();
  private closing: Promise<void> | null = null;

  constructor(private readonly deps: UnitEndsDeps) {
    const reads = new Coalescer((runs: RunRef[]) => this.recheckBatch(runs), 1);
    this.rechecks = new EndRechecks((ref) => reads.submit(ref));
    this.ends = new Coalescer((reqs) => this.endAndCount(reqs), ENDS_IN_FLIGHT);
  }

  /**
   * Success or failure in ONE commit: the CAS on our own live lease with the wake-ups of
   * ../store/endWakes.ts (one statement), and the watermark when one moves. A lost lease writes
   * nothing. After commit, a unit that saw other open units re-checks with a fresh snapshot and
   * arms finalize if the run became finalizable (or a later end batch stands in for that re-check,
   * see ./endRechecks.ts). Ends that happen at the same time share that commit (each unit its own
   * CAS, its own watermark and wake-ups), so under load a commit finishes many units.
   */
  async end(
    unit: UnitRow,
    owner: string,
    t: Terminal,
    dataset: DatasetSpec | undefined,
    trace?: TraceCarrier | null,
  ): Promise<EndOutcome> {
    this.rechecks.queuedEnd(unit.sync_run_id);
    const { ended, commit } = await this.ends.submit({ unit, owner, t, dataset, trace });
    if (ended === 'lease_lost') return 'lease_lost';
    if ('error' in ended) throw ended.error;
    await this.deps.faults.hit('unit.afterComplete.beforeRecheck');
    if (ended.sawOthers) {
      this.inBackground(this.rechecks.after({ orgId: unit.org_id, runId: unit.sync_run_id, trace }, commit), unit);
    }
    return ended.status;
  }

  /**
   * running → retrying with a wake-up of the run's dispatch row at `availableAt` (earliest wins),
   * plus what the end wakes (../store/endWakes.ts), in one transaction. A rate-limit deferral
   * stores its checkpoint (see ../domain/checkpoint.ts).
   */
  async retry(unit: UnitRow, owner: string, r: RetryRequest, trace?: TraceCarrier | null): Promise<EndOutcome> {
    const { reason, error } = r;
    const outcome = await this.deps.db.transaction(async (tx) => {
      const now = this.deps.clock.now();
      const availableAt = after(now, r.delayMs);
      const args = { unitId: unit.id, owner, now, availableAt, reason, error, checkpoint: r.checkpoint ?? null };
      const row = await retryOwnUnit(tx, args);
      if (!row) return 'lease_lost' as const;
      const own = {
        kind: 'dispatch_sync_run' as const,
        orgId: unit.org_id,
        runId: unit.sync_run_id,
        availableAt,
        trace,
      };
      await armEndWakes(tx, [{ unitId: row.id, trace }], [own], now);
      return 'retrying' as const;
    });
    if (outcome === 'retrying') this.deps.metrics?.unitRetried(reason);
    return outcome;
  }

  /** Resolves once every re-check started so far has been made (a graceful stop waits for it). */
  async settle(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  /** Waits for the re-checks in flight; safe to call twice (the second waits for the first). */
  close(): Promise<void> {
    this.closing ??= this.settle().catch(() => undefined);
    return this.closing;
  }

  /**
   * The unit's task does not wait for its re-check: the worker slot goes to the next message while
   * the re-check waits for a later batch or runs. A re-check that fails, or dies with its process,
   * is the materializer's finalizable scan's (as a crash between commit and re-check always was).
   */
  private inBackground(recheck: Promise<void>, unit: UnitRow): void {
    this.track(
      recheck.catch((err: unknown) =>
        this.deps.logger.warn(
          { runId: unit.sync_run_id, err: describeError(err) },
          'finalize re-check failed; the materializer arms finalize',
        ),
      ),
    );
  }

  /** Background work `settle` and `close` wait for (`work` handles its own errors). */
  private track(work: Promise<void>): void {
    const tracked = work.catch(() => undefined);
    this.background.add(tracked);
    void tracked.finally(() => this.background.delete(tracked));
  }

  /**
   * One batch of ends, told to the re-checks: when it started, whether it committed, which runs it finished
   * units of.
   */
  private async endAndCount(reqs: EndRequest[]): Promise<Committed[]> {
    const batch = this.rechecks.begin(reqs.map((r) => r.unit.sync_run_id));
    let ended: Ended[];
    try {
      ended = await this.endBatch(reqs);
    } catch (err) {
      this.rechecks.failed(batch);
      throw err;
    }
    const finished = new Set(reqs.filter((_, i) => isFinished(ended[i]!)).map((r) => r.unit.sync_run_id));
    const commit = this.rechecks.committed(batch, finished);
    this.freeRemembered(ended.map((e) => (typeof e === 'object' && 'status' in e ? e.webhookPending : null)));
    return ended.map((e) => ({ ended: e, commit }));
  }

  /**
   * After a commit that ended units (or a run) of these integrations while webhook deliveries of
   * theirs were remembered: arms their run now, in the background, rather than at the reconciler's
   * next pass. One at a time per integration; asked again meanwhile, once more after it.
   */
  freeRemembered(integrationIds: readonly (string | null)[]): void {
    const arm = this.deps.armRemembered;
    if (!arm) return;
    for (const id of new Set(integrationIds)) {
      if (id === null) continue;
      if (this.arming.has(id)) {
        this.arming.set(id, true);
        continue;
      }
      this.arming.set(id, false);
      this.track(this.armWhileAsked(id, arm));
    }
  }

  private async armWhileAsked(id: string, arm: (integrationId: string) => Promise<unknown>): Promise<void> {
    try {
      do {
        this.arming.set(id, false);
        await arm(id);
      } while (this.arming.get(id));
    } finally {
      this.arming.delete(id);
    }
  }

  /**
   * One batch of ends. If it fails (other than by an injected crash) and held more than one unit,
   * every unit is ended again on its own, so one unit's error never fails another.
   */
  private async endBatch(reqs: EndRequest[]): Promise<Ended[]> {
    try {
      return await this.endOnce(reqs);
    } catch (err) {
      if (reqs.length === 1 || err instanceof InjectedFault) throw err;
      return Promise.all(
        reqs.map((r) =>
          this.endBatch([r]).then(
            (e) => e[0]!,
            (error: unknown) => ({ error }),
          ),
        ),
      );
    }
  }

  /**
   * The terminal CAS statement arms everything the batch's ends wake (finishUnits), so a batch that
   * moves no watermark commits it on its own: one statement, one round trip. A batch that moves one
   * (incremental and full_resync successes, never a backfill or a verify) adds the watermark upserts
   * in the same transaction. Which of the two runs depends on the batch's data alone.
   */
  private async endOnce(reqs: EndRequest[]): Promise<Ended[]> {
    const { db, clock } = this.deps;
    const items = reqs.map((r) => ({ unitId: r.unit.id, owner: r.owner, ...r.t, trace: r.trace }));
    if (!reqs.some(movesWatermark)) return endedOf(reqs, await finishUnits(db, items, clock.now(), MAX_RUNS_WOKEN));
    return db.transaction(async (tx) => {
      const now = clock.now();
      const ended = endedOf(reqs, await finishUnits(tx, items, now, MAX_RUNS_WOKEN));
      for (const [i, { unit, t }] of reqs.entries()) {
        if (ended[i] === 'lease_lost' || !movesWatermark(reqs[i]!)) continue;
        const at = t.watermark!;
        const key = { orgId: unit.org_id, integrationId: unit.integration_id, sourceId: unit.source_id! };
        const datasetKeys = [unit.dataset_key, ...unit.carried_datasets];
        await advanceWatermark(tx, { ...key, datasetKeys, at }, now);
      }
      return ended;
    });
  }

  /** Re-checks, each made after its unit's commit: one read, one transaction if needed. */
  private async recheckBatch(runs: RunRef[]): Promise<void[]> {
    const { db, clock } = this.deps;
    const done = new Set(await runsWithoutOpenUnits(db, [...new Set(runs.map((r) => r.runId))]));
    const finalize = runs.filter((r) => done.has(r.runId));
    if (finalize.length > 0) {
      await db.transaction((tx) => {
        const now = clock.now();
        const wakes = finalize.map((r) => ({
          kind: 'finalize_sync_run' as const,
          orgId: r.orgId,
          runId: r.runId,
          availableAt: now,
          trace: r.trace,
        }));
        return armOutboxRows(tx, wakes, now);
      });
    }
    return runs.map(() => undefined);
  }
}

function isFinished(e: Ended): boolean {
  return e !== 'lease_lost' && !('error' in e);
}

/**
 * A success that moves its source's watermark: incremental / full_resync (WATERMARK_MODES, never a
 * backfill or a verify) of a dataset that keeps one.
 */
function movesWatermark({ unit, t, dataset }: EndRequest): boolean {
  return (
    t.status === 'success' &&
    t.watermark !== null &&
    unit.source_id !== null &&
    WATERMARK_MODES.includes(unit.mode) &&
    dataset?.keepsWatermark === true
  );
}

/** Each request's end: its row came back from the CAS (same id and owner), or its lease was lost. */
function endedOf(reqs: EndRequest[], rows: (EndedUnit & EndFacts)[]): Ended[] {
  return reqs.map(({ unit, owner, t }) => {
    const row = rows.find((r) => r.id === unit.id && r.lease_owner === owner);
    return row
      ? { status: t.status, sawOthers: row.others_open, webhookPending: row.webhook_pending_integration }
      : 'lease_lost';
  });
}
