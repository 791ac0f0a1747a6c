/**
 * Triggers: JobRun first, then the planned run, then the link — in one transaction.
 *
 * Checks come in one order, each before anything is written: the request's own input (mode,
 * window), the integration (exists, enabled) and its datasets — a 400 / 404 whatever else is true;
 * then the run's size (RunTooLargeError over SYNC_RUN_MAX_UNITS, counted by the planner's own
 * code); then the integration's live runs (RunConflictError for the same mode unless `force`,
 * TooManyLiveRunsError at SYNC_INTEGRATION_MAX_LIVE_RUNS, `force` or not).
 *
 * `triggerSync` first refreshes the sources of an integration whose provider finds them, outside its
 * transaction (./sourceDiscovery.ts); `triggerInTx` plans the sources as they are.
 */
import type { Logger } from 'pino';
import type { ResolvedSettings } from '../config.js';
import type { Db, Tx } from '../db/types.js';
import { SYNC_MODES, type SyncMode, type TriggeredBy } from '../domain/statuses.js';
import { NotFoundError, RunConflictError, TooManyLiveRunsError, ValidationError } from '../errors.js';
import { ATTR, inTriggerSpan } from '../observability/spans.js';
import { tracerOf } from '../observability/trace.js';
import { getIntegration } from '../store/integrations.js';
import type { Keyring } from '../secrets/keyring.js';
import { insertJobRun, linkJobRun } from '../store/jobRuns.js';
import { countLiveRuns, findLiveRun } from '../store/runs.js';
import { assertWithinUnitCap, computePlan, writePlan, type PlanArgs, type PlanDeps } from './planner.js';
import { refreshDiscoveredSources } from './sourceDiscovery.js';

/** What a trigger needs: the planner's dependencies and both caps. */
export interface TriggerDeps extends PlanDeps {
  settings: Pick<ResolvedSettings, 'runMaxUnits' | 'integrationMaxLiveRuns'> &
    Partial<Pick<ResolvedSettings, 'incrementalOverlapMs'>>;
  /** Decrypts the credential a provider finds an integration's sources with (./sourceDiscovery.ts). */
  secrets?: Keyring;
  logger?: Logger;
}

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
  /** Plan only these sources' work-item units (ids of enabled sources). @default every enabled source */
  sourceIds?: readonly string[];
  /** When the run's dispatch row comes due. @default at once */
  dispatchAt?: Date;
  /** What the run (not its JobRun) records as its trigger. @default triggeredBy */
  runTriggeredBy?: string;
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

/**
 * Refreshes the integration's found sources (if its provider finds them; a failure throws
 * `SourceDiscoveryError`), then creates the JobRun (pending), plans the run and links
 * `result.sync_run_id`, committing all or nothing.
 */
export async function triggerSync(db: Db, deps: TriggerDeps, a: TriggerArgs): Promise<Triggered> {
  validateTrigger(a);
  await refreshDiscoveredSources({ ...deps, db }, a.orgId, a.integrationId);
  return db.transaction((tx) => triggerInTx(tx, deps, a));
}

/** The same inside the caller's transaction. */
export function triggerInTx(tx: Tx, deps: TriggerDeps, a: TriggerArgs): Promise<Triggered> {
  const attributes = { orgId: a.orgId, integrationId: a.integrationId, mode: a.mode };
  return inTriggerSpan(tracerOf(deps), a.trace, attributes, async (trace, span) => {
    const t = await planTriggered(tx, deps, { ...a, trace });
    span.setAttribute(ATTR.runId, t.syncRunId);
    return t;
  });
}

async function planTriggered(tx: Tx, deps: TriggerDeps, a: TriggerArgs): Promise<Triggered> {
  // Lock the integration so two triggers of one integration take turns on the live-run checks.
  const integration = await getIntegration(tx, a.integrationId, { orgId: a.orgId, lock: true });
  if (!integration) throw new NotFoundError('integration', a.integrationId);
  if (!integration.enabled) throw new ValidationError('integration', 'is disabled');
  const args: PlanArgs = {
    orgId: a.orgId,
    integrationId: a.integrationId,
    mode: a.mode,
    triggeredBy: a.runTriggeredBy ?? a.triggeredBy,
    since: a.since,
    before: a.before,
    datasets: a.datasets,
    sourceIds: a.sourceIds,
    dispatchAt: a.dispatchAt,
    trace: a.trace,
  };
  const plan = await computePlan(tx, deps, integration, args);
  assertWithinUnitCap(plan, a.mode, deps.settings.runMaxUnits);
  await assertRoomForRun(tx, deps, a);
  const jobRun = await insertJobRun(
    tx,
    { orgId: a.orgId, integrationId: a.integrationId, triggeredBy: a.triggeredBy, jobId: a.jobId },
    plan.now,
  );
  const planned = await writePlan(tx, args, plan);
  await linkJobRun(tx, jobRun.id, planned.run.id);
  return { jobRunId: jobRun.id, syncRunId: planned.run.id, units: planned.units };
}

/** The live-run checks: a run of this mode not finished (unless forced), and the live-runs cap. */
async function assertRoomForRun(tx: Tx, deps: TriggerDeps, a: TriggerArgs): Promise<void> {
  if (!a.force) {
    const live = await findLiveRun(tx, a.integrationId, a.mode);
    if (live) throw new RunConflictError(live.id, a.mode);
  }
  const max = deps.settings.integrationMaxLiveRuns;
  const liveRuns = await countLiveRuns(tx, a.integrationId);
  if (liveRuns >= max) throw new TooManyLiveRunsError(a.integrationId, liveRuns, max);
}
