/** Waiting for a provider benchmark's run to end, with a progress line now and then. */
import type { Db } from '../../src/db/types.js';

export interface TerminalWait {
  /** Names the run in progress lines and the timeout error. */
  label: string;
  timeoutMs: number;
  /** A progress line (units ended of planned) at most this often. */
  noteEveryMs: number;
  note: (message: string) => void;
}

/** Polls the run every 50 ms until it has left planned/dispatching; returns its status. */
export async function runTerminal(db: Db, runId: string, w: TerminalWait): Promise<string> {
  const deadline = performance.now() + w.timeoutMs;
  let noted = performance.now();
  for (;;) {
    const { rows } = await db.query<{ status: string }>(`SELECT status FROM ${db.schema.sync_runs} WHERE id = $1`, [
      runId,
    ]);
    const run = rows[0]!;
    if (!['planned', 'dispatching'].includes(run.status)) return run.status;
    if (performance.now() > deadline) {
      throw new Error(`${w.label}: run ${runId} still ${run.status} after ${Math.round(w.timeoutMs / 1000)} s`);
    }
    if (performance.now() - noted > w.noteEveryMs) {
      noted = performance.now();
      const units = await db.query<{ done: number; n: number }>(
        `SELECT count(*) FILTER (WHERE status = 'success')::int AS done, count(*)::int AS n
           FROM ${db.schema.sync_run_units} WHERE sync_run_id = $1`,
        [runId],
      );
      w.note(`${w.label}: ${units.rows[0]!.done}/${units.rows[0]!.n} units done`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
