/** Triggers: JobRun first, then the planned run, then the link — in one transaction. */
import type { Db, Tx } from '../db/types.js';
import { SYNC_MODES, type SyncMode, type TriggeredBy } from '../domain/statuses.js';
import { NotFoundError, RunConflictError, ValidationError } from '../errors.js';
import { ATTR, inTriggerSpan } from '../observability/spans.js';
import { tracerOf } from '../observability/trace.js';
import { getIntegration } from '../store/integrations.js';
import { insertJobRun, linkJobRun } from '../store/jobRuns.js';
import { findLiveRun } from '../store/runs.js';
import { planSyncRun, type PlanDeps } from './planner.js';

export interface TriggerArgs {
  orgId: string;
  integrationId: string;
  mode: SyncMode;
  triggeredBy: TriggeredBy;
  since?: Date;
  before?: Date;
  datasets?: readonly string[];
  /** Start even if a non-terminal run of this integration and mode exists. */
  force?: boolean;
  /** The scheduled job that fired, if any. */
  jobId?: string | null;
  /** Longest backfill window allowed, in days. @default 3660 */
  maxWindowDays?: number;
  /**
   * W3C trace context of the caller (e.g. an HTTP request's `traceparent`). The run's spans join
   * the trace of a `syncrelay.trigger` span made under it (or under the active context).
   */
  trace?: Record<string, string> | null;
}

export interface Triggered {
  jobRunId: string;
  syncRunId: string;
  units: number;
}

/** Checks a trigger's arguments; throws ValidationError naming the field. */
export function validateTrigger(a: TriggerArgs): void {
  if (!SYNC_MODES.includes(a.mode)) throw new ValidationError('mode', `must be one of ${SYNC_MODES.join(', ')}`);
  if (a.mode !== 'backfill') {
    if (a.since || a.before) throw new ValidationError('since', `only a backfill takes a window, not ${a.mode}`);
    return;
  }
  for (const [field, d] of [
    ['since', a.since],
    ['before', a.before],
  ] as const) {
    if (!(d instanceof Date) || Number.isNaN(d.getTime()))
      throw new ValidationError(field, 'is required for a backfill (ISO 8601 time)');
  }
  if (a.since!.getTime() >= a.before!.getTime()) throw new ValidationError('since', 'must be earlier than before');
  const maxDays = a.maxWindowDays ?? 3660;
  if (a.before!.getTime() - a.since!.getTime() > maxDays * 86_400_000) {
    throw new ValidationError('before', `window is longer than the maximum of ${maxDays} days`);
  }
}

/** Creates the JobRun (pending), plans the run, links `result.sync_run_id`; commits all or nothing. */
export async function triggerSync(db: Db, deps: PlanDeps, a: TriggerArgs): Promise<Triggered> {
  validateTrigger(a);
  return db.transaction((tx) => triggerInTx(tx, deps, a));
}

/** The same inside the caller's transaction. */
export function triggerInTx(tx: Tx, deps: PlanDeps, a: TriggerArgs): Promise<Triggered> {
  const attributes = { orgId: a.orgId, integrationId: a.integrationId, mode: a.mode };
  return inTriggerSpan(tracerOf(deps), a.trace, attributes, async (trace, span) => {
    const t = await planTriggered(tx, deps, { ...a, trace });
    span.setAttribute(ATTR.runId, t.syncRunId);
    return t;
  });
}

async function planTriggered(tx: Tx, deps: PlanDeps, a: TriggerArgs): Promise<Triggered> {
  // Lock the integration so two triggers of one integration take turns on the conflict check.
  const integration = await getIntegration(tx, a.integrationId, { orgId: a.orgId, lock: true });
  if (!integration) throw new NotFoundError('integration', a.integrationId);
  if (!integration.enabled) throw new ValidationError('integration', 'is disabled');
  if (!a.force) {
    const live = await findLiveRun(tx, a.integrationId, a.mode);
    if (live) throw new RunConflictError(live.id, a.mode);
  }
  const jobRun = await insertJobRun(
    tx,
    { orgId: a.orgId, integrationId: a.integrationId, triggeredBy: a.triggeredBy, jobId: a.jobId },
    deps.clock.now(),
  );
  const planned = await planSyncRun(tx, deps, {
    orgId: a.orgId,
    integrationId: a.integrationId,
    mode: a.mode,
    triggeredBy: a.triggeredBy,
    since: a.since,
    before: a.before,
    datasets: a.datasets,
    trace: a.trace,
  });
  await linkJobRun(tx, jobRun.id, planned.run.id);
  return { jobRunId: jobRun.id, syncRunId: planned.run.id, units: planned.units };
}
