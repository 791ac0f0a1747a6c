/** A run as the API and the CLI show it: the one read path both use. */
import type { Tx } from '../db/types.js';
import type { UnitCounts } from '../domain/aggregate.js';
import type { VerifyCounts } from '../domain/verify.js';
import { countRunUnitsByStatus, getJobRunOfRun, getRunOfOrg, sumRunVerifyCounts } from '../store/admin.js';
import type { JobRunRow, RunRow } from '../store/rows.js';
import { getRun } from '../store/runs.js';

export interface RunView {
  run: RunRow;
  /** Unit counts by status. */
  units: UnitCounts;
  job_run: JobRunRow | null;
  /** A verify run's counts so far, summed over its successful units; null for the other modes. */
  verify: VerifyCounts | null;
}

/**
 * The run (of `orgId` when given: another org's run is not found), its unit counts by status, its
 * JobRun and a verify run's counts, or null. Up to four statements, none locking anything; the
 * counts and the JobRun are read under the run's own org.
 */
export async function readRunView(tx: Tx, runId: string, orgId?: string): Promise<RunView | null> {
  const run = orgId === undefined ? await getRun(tx, runId) : await getRunOfOrg(tx, orgId, runId);
  if (!run) return null;
  const [units, jobRun, verify] = await Promise.all([
    countRunUnitsByStatus(tx, run.org_id, run.id),
    getJobRunOfRun(tx, run.org_id, run.id),
    run.mode === 'verify' ? sumRunVerifyCounts(tx, run.org_id, run.id) : null,
  ]);
  return { run, units, job_run: jobRun, verify };
}
