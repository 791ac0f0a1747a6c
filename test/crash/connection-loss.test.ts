/**
 * A database connection dies in the middle of a transaction (found by `syncrelay chaos`: workers
 * exited on an unhandled 'error' event of a pg Client after pg_terminate_backend). While a
 * transaction waits between two statements its client is checked out of the pool, and the pool
 * does not listen for that client's errors; the process must not end — the transaction fails, the
 * client is discarded, and the outbox and the reconciler recover the work.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { GatedDb, sqlTable } from './gate.js';
import { Harness, within } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function backendParkedAt(h: Harness, pattern: string): Promise<number> {
  const { rows } = await h.db.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'idle in transaction' AND query LIKE $1`,
    [`%${pattern}%`],
  );
  expect(rows).toHaveLength(1);
  return rows[0]!.pid;
}

async function terminate(h: Harness, pid: number): Promise<void> {
  await h.db.query('SELECT pg_terminate_backend($1)', [pid]);
  for (let i = 0; i < 200; i++) {
    const { rows } = await h.db.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
    if (rows.length === 0) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) => setTimeout(r, 100)); // the client has read the FATAL message by now
}

describe('a connection terminated between two statements of a transaction', () => {
  const failsDispatchRearmed =
    'fails that dispatch_sync_run (the process lives on); the materializer re-arms it and the run ends success';
  it(failsDispatchRearmed, async () => {
    h = await Harness.open();
    const integ = await h.integration();
    const { syncRunId: runId } = await h.backfill(integ, 14);
    await h.pass();
    const [dispatch] = await h.take('dispatch_sync_run');

    const db = new GatedDb(h.db);
    const parked = db.park(new RegExp(`FROM ${sqlTable('sync_runs')} WHERE id = \\$1 FOR NO KEY UPDATE`), 'after');
    const delivery = h.deliver(dispatch!, h.worker({ db }));
    await within(parked.reached, 5000, 'the dispatch locking its run');
    await terminate(h, await backendParkedAt(h, 'FOR NO KEY UPDATE'));
    parked.release();

    await expect(within(delivery, 5000, 'the dispatch')).rejects.toThrow();
    expect((await h.units(runId)).map((u) => u.status)).toEqual(['planned', 'planned']);
    // The relay had marked the row dispatched; the next pass finds planned units and no pending row.
    const c = await h.pass();
    expect(c).toMatchObject({ materialized_dispatch: 1, relayed_dispatch: 1 });
    expect((await h.settle(runId)).status).toBe('success');
  });
});
