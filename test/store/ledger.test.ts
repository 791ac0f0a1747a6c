/**
 * The once-only ledger (sync_run_post_dispatches): a second insert for the same (run, kind) reports
 * false, and a finalize that finds the run's row already there finalizes the run but arms no post_sync.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineContext } from '../../src/context.js';
import type { Db } from '../../src/db/types.js';
import { createLogger } from '../../src/logger.js';
import { insertLedgerRow } from '../../src/store/ledger.js';
import { getOutboxRow } from '../../src/store/outbox.js';
import { finalizeInTx } from '../../src/tasks/finalizeSyncRun.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { at, SEC, seedIntegration, seedRun, seedUnits, T0 } from './seed.js';

let t: TestDatabase;
let db: Db;
let integ: { orgId: string; integrationId: string };
// finalizeInTx reads nothing of the context but its logger.
const ctx = { logger: createLogger('silent') } as EngineContext;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 4 });
  db = t.db;
  integ = await seedIntegration(db);
});
afterAll(async () => {
  await t?.drop();
});

/** A dispatching run whose two units both succeeded: ready to finalize. */
async function finishedRun(): Promise<string> {
  const runId = await seedRun(db, integ, { status: 'dispatching' });
  await seedUnits(db, integ, runId, [{ set: { status: 'success' } }, { set: { status: 'success' } }]);
  return runId;
}

const ledgerRows = async (runId: string) =>
  (
    await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM syncrelay.sync_run_post_dispatches WHERE sync_run_id = $1',
      [runId],
    )
  ).rows[0]!.n;

describe('sync_run_post_dispatches', () => {
  it('a second insert of the same run and kind returns false and adds nothing', async () => {
    const runId = await seedRun(db, integ);
    expect(await insertLedgerRow(db, integ.orgId, runId, 'post_sync', T0)).toBe(true);
    expect(await insertLedgerRow(db, integ.orgId, runId, 'post_sync', at(T0, SEC))).toBe(false);
    expect(await ledgerRows(runId)).toBe(1);
  });

  it('a finalize that inserts the row arms post_sync once', async () => {
    const runId = await finishedRun();
    expect(await db.transaction((tx) => finalizeInTx(ctx, tx, runId, at(T0, SEC)))).toBe('finalized');
    expect(await ledgerRows(runId)).toBe(1);
    expect(await getOutboxRow(db, runId, 'post_sync')).toMatchObject({ status: 'pending' });
  });

  it('a finalize that finds the row already there finalizes the run and arms nothing', async () => {
    const runId = await finishedRun();
    expect(await insertLedgerRow(db, integ.orgId, runId, 'post_sync', T0)).toBe(true);
    expect(await db.transaction((tx) => finalizeInTx(ctx, tx, runId, at(T0, SEC)))).toBe('finalized');
    const { rows } = await db.query<{ status: string }>('SELECT status FROM syncrelay.sync_runs WHERE id = $1', [
      runId,
    ]);
    expect(rows[0]!.status).toBe('success');
    expect(await ledgerRows(runId)).toBe(1);
    expect(await getOutboxRow(db, runId, 'post_sync')).toBeNull();
  });
});
