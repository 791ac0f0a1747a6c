/**
 * The scheduler tick: fires every schedule whose slot has come, each in its own transaction.
 *
 * - Leader lock per job: the tick claims one due row with `FOR UPDATE SKIP LOCKED` and holds it
 *   while it triggers and moves `next_run_at` past now, in the same transaction. Another replica
 *   either skips the locked row or, once this one commits, no longer finds it due — so each slot
 *   fires once however many schedulers run, and no global leader is needed.
 * - Missed slots: `next_run_at` becomes the first slot strictly after now, so after downtime a
 *   schedule fires once (for all the slots it missed) and then keeps its rhythm.
 * - Conflicts: when the integration still has a non-terminal run of the schedule's mode, the slot
 *   is skipped — no JobRun, no forced second run — and the schedule records `last_outcome =
 *   'skipped'` with the running run's id in `last_error`; the next slot tries again.
 * - Failures: any other refusal (integration disabled or gone, a run over SYNC_RUN_MAX_UNITS, the
 *   integration at SYNC_INTEGRATION_MAX_LIVE_RUNS, a planning error) is rolled back to a savepoint,
 *   recorded as `last_outcome = 'failed'` with the reason, and the schedule moves on to its next
 *   slot. A database failure of the whole transaction leaves the job due for the next tick; the
 *   other due jobs of this tick still fire.
 * - Found sources: a job whose integration's provider finds its sources (./sourceDiscovery.ts) is
 *   let go unfired, its sources are refreshed outside any transaction, and it is claimed again; a
 *   refresh that fails is that slot's `failed` outcome, with the reason.
 */
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { ResolvedSettings } from '../config.js';
import type { Db, Tx } from '../db/types.js';
import { isRetryableTxError } from '../db/retry.js';
import { describeError, RunConflictError } from '../errors.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { Keyring } from '../secrets/keyring.js';
import { getIntegration } from '../store/integrations.js';
import { claimDueSchedule, recordScheduleSlot, type ScheduleRow } from '../store/schedules.js';
import { nextSlot } from './scheduleCron.js';
import { discoversSources, refreshDiscoveredSources } from './sourceDiscovery.js';
import { triggerInTx } from './triggers.js';

export interface SchedulerDeps {
  db: Db;
  registry: ProviderRegistry;
  clock: Clock;
  logger: Logger;
  /** The trigger's caps: SYNC_RUN_MAX_UNITS and SYNC_INTEGRATION_MAX_LIVE_RUNS. */
  settings: Pick<ResolvedSettings, 'runMaxUnits' | 'integrationMaxLiveRuns'> &
    Partial<Pick<ResolvedSettings, 'incrementalOverlapMs'>>;
  /** Decrypts the credential a provider finds an integration's sources with. */
  secrets?: Keyring;
}

interface SlotBase {
  scheduleId: string;
  orgId: string;
  integrationId: string;
  /** The slot that came due (the schedule's next_run_at when claimed). */
  slot: Date;
  /** Where the schedule goes next (null: its expression never matches again). */
  nextRunAt: Date | null;
}

export type SlotOutcome =
  | (SlotBase & { outcome: 'fired'; jobRunId: string; syncRunId: string })
  | (SlotBase & { outcome: 'skipped'; existingRunId: string; reason: string })
  | (SlotBase & { outcome: 'failed'; reason: string });

export interface SchedulerTick {
  fired: Extract<SlotOutcome, { outcome: 'fired' }>[];
  skipped: Extract<SlotOutcome, { outcome: 'skipped' }>[];
  failed: Extract<SlotOutcome, { outcome: 'failed' }>[];
  /** Due jobs whose transaction failed (database trouble); still due, retried next tick. */
  errors: { scheduleId: string | null; reason: string }[];
  /** True when the tick stopped at its limit with jobs possibly still due. */
  more: boolean;
}

export interface SchedulerTickOptions {
  /** Most due jobs handled in one tick. @default 100 */
  limit?: number;
}

/** Fires every schedule due at `now` (up to the limit), one transaction per job. */
export async function runSchedulerTick(
  deps: SchedulerDeps,
  now: Date,
  opts: SchedulerTickOptions = {},
): Promise<SchedulerTick> {
  const limit = opts.limit ?? 100;
  const tick: SchedulerTick = { fired: [], skipped: [], failed: [], errors: [], more: false };
  const handled: string[] = [];
  const refreshed = new Refreshed();
  while (handled.length < limit) {
    const claim: { id: string | null } = { id: null };
    try {
      const slot = await deps.db.transaction(async (tx) => {
        const job = await claimDueSchedule(tx, now, handled);
        claim.id = job?.id ?? null;
        if (job && (await refreshed.pending(tx, deps, job))) return { refresh: job };
        return job ? fireSlot(tx, deps, job, now, refreshed.failure(job)) : null;
      });
      if (!slot) return tick;
      if ('refresh' in slot) {
        // Let go unfired (its transaction wrote nothing): refresh its sources, then claim it again.
        await refreshed.refresh(deps, slot.refresh);
        continue;
      }
      handled.push(slot.scheduleId);
      if (slot.outcome === 'fired') tick.fired.push(slot);
      else if (slot.outcome === 'skipped') tick.skipped.push(slot);
      else tick.failed.push(slot);
    } catch (err) {
      const reason = describeError(err);
      deps.logger.error({ scheduleId: claim.id, err: reason }, 'scheduler transaction failed; the job stays due');
      tick.errors.push({ scheduleId: claim.id, reason });
      // Nothing claimed means the claim itself failed: the database is in trouble, stop here.
      if (claim.id === null) return tick;
      handled.push(claim.id);
    }
  }
  tick.more = true;
  return tick;
}

/** The integrations whose found sources this tick refreshed, and how each refresh failed (if it did). */
class Refreshed {
  private readonly done = new Map<string, unknown>();

  /** Whether `job`'s integration finds its sources and this tick has not refreshed them yet. */
  async pending(tx: Tx, deps: SchedulerDeps, job: ScheduleRow): Promise<boolean> {
    if (this.done.has(job.integration_id)) return false;
    const row = await getIntegration(tx, job.integration_id, { orgId: job.org_id });
    return row !== null && row.enabled && discoversSources(deps.registry, row);
  }

  /** Refreshes `job`'s integration's sources (outside any transaction), keeping a failure for its slot. */
  async refresh(deps: SchedulerDeps, job: ScheduleRow): Promise<void> {
    try {
      await refreshDiscoveredSources(deps, job.org_id, job.integration_id);
      this.done.set(job.integration_id, null);
    } catch (err) {
      if (isRetryableTxError(err)) throw err;
      this.done.set(job.integration_id, err);
    }
  }

  /** How refreshing `job`'s integration failed in this tick; null when it did not. */
  failure(job: ScheduleRow): unknown {
    return this.done.get(job.integration_id) ?? null;
  }
}

/** Triggers the claimed job's run (or records why not) and moves it to its next slot. */
async function fireSlot(
  tx: Tx,
  deps: SchedulerDeps,
  job: ScheduleRow,
  now: Date,
  refreshFailure: unknown = null,
): Promise<SlotOutcome> {
  const log = deps.logger.child({ scheduleId: job.id, integrationId: job.integration_id });
  const base: SlotBase = {
    scheduleId: job.id,
    orgId: job.org_id,
    integrationId: job.integration_id,
    slot: job.next_run_at!,
    nextRunAt: nextSlotOrNull(job, now, log),
  };
  const outcome =
    refreshFailure === null
      ? await attempt(tx, deps, job, base)
      : { ...base, outcome: 'failed' as const, reason: describeError(refreshFailure) };
  await recordScheduleSlot(
    tx,
    job.id,
    {
      outcome: outcome.outcome,
      error: outcome.outcome === 'fired' ? null : outcome.reason,
      jobRunId: outcome.outcome === 'fired' ? outcome.jobRunId : null,
      nextRunAt: base.nextRunAt,
    },
    now,
  );
  if (outcome.outcome === 'fired')
    log.info({ runId: outcome.syncRunId, jobRunId: outcome.jobRunId, slot: base.slot }, 'schedule fired');
  else log.warn({ slot: base.slot, reason: outcome.reason }, `schedule ${outcome.outcome}`);
  return outcome;
}

/** The trigger inside a savepoint: a refusal undoes only what the trigger wrote. */
async function attempt(tx: Tx, deps: SchedulerDeps, job: ScheduleRow, base: SlotBase): Promise<SlotOutcome> {
  await tx.query('SAVEPOINT schedule_fire');
  try {
    const t = await triggerInTx(tx, deps, {
      orgId: job.org_id,
      integrationId: job.integration_id,
      mode: job.mode,
      triggeredBy: 'schedule',
      jobId: job.id,
    });
    await tx.query('RELEASE SAVEPOINT schedule_fire');
    return { ...base, outcome: 'fired', jobRunId: t.jobRunId, syncRunId: t.syncRunId };
  } catch (err) {
    // A deadlock or serialization failure rolls the whole transaction back and runs it again.
    if (isRetryableTxError(err)) throw err;
    await tx.query('ROLLBACK TO SAVEPOINT schedule_fire');
    if (err instanceof RunConflictError) {
      const reason = `skipped: a ${err.mode} run of this integration has not finished (${err.existingRunId})`;
      return { ...base, outcome: 'skipped', existingRunId: err.existingRunId, reason };
    }
    return { ...base, outcome: 'failed', reason: describeError(err) };
  }
}

/** The job's next slot after now; a stored expression croner no longer reads stops the job (null). */
function nextSlotOrNull(job: ScheduleRow, now: Date, log: Logger): Date | null {
  try {
    return nextSlot(job.cron, job.timezone, now);
  } catch (err) {
    log.error({ err: describeError(err) }, 'schedule has an unreadable cron expression; it will not fire again');
    return null;
  }
}
