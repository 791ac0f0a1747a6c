/**
 * What a unit's end reads does not grow with its run. The terminal CAS statement asks whether the
 * run has another open unit, whether it still has planned units and which run waits longest in the
 * bucket; every unit that already passed through `planned`, `dispatching` and `running` left index
 * entries behind under those statuses. Measured as the statement's buffer reads (EXPLAIN ANALYZE,
 * BUFFERS) on a run of 20,000 units against one of 200, in the same state: a ratio, not a time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, Tx } from '../../src/db/types.js';
import { finishUnits } from '../../src/store/units.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { at, SEC, seedIntegration, seedRun } from './seed.js';

const OWNER = '11111111-1111-4111-8111-111111111111';
const NOW = new Date('2030-06-01T12:00:00.000Z');
const U = 'syncrelay.sync_run_units';

let t: TestDatabase;
let db: Db;

beforeAll(async () => {
  t = await createTestDatabase();
  db = t.db;
});
afterAll(async () => {
  await t?.drop();
});

type Shape = 'planned units left' | 'all dispatched';

/**
 * A run of `size` units in mid-flight: all but the newest went planned → dispatching → running →
 * success, statement by statement as dispatch slices and end batches move them; of the newest,
 * two are running and (shape 'planned units left') ten are still planned. Returns a running unit.
 */
async function runInFlight(org: string, size: number, shape: Shape): Promise<{ runId: string; unitId: string }> {
  const integ = await seedIntegration(db, org);
  const runId = await seedRun(db, integ, { status: 'dispatching' });
  await db.query(
    `INSERT INTO ${U} (org_id, sync_run_id, integration_id, provider, dataset_key, tier, cost_class, mode)
     SELECT $1, $2, $3, 'synthetic', 'work-items', 'work_item', 'standard', 'backfill' FROM generate_series(1, $4)`,
    [integ.orgId, runId, integ.integrationId, size],
  );
  const planned = shape === 'planned units left' ? 10 : 0;
  const newest = `(SELECT id FROM ${U} WHERE sync_run_id = $1 ORDER BY id DESC LIMIT ${planned + 2})`;
  const slice = Math.max(1, Math.floor(size / 10));
  for (const [from, to] of [
    ['planned', 'dispatching'],
    ['dispatching', 'running'],
    ['running', 'success'],
  ] as const) {
    for (;;) {
      const { rowCount } = await db.query(
        `UPDATE ${U} SET status = $2 WHERE id IN (SELECT id FROM ${U} WHERE sync_run_id = $1 AND status = $3
                                                     AND id NOT IN ${newest} ORDER BY id LIMIT $4)`,
        [runId, to, from, slice],
      );
      if (rowCount === 0) break;
    }
  }
  const { rows } = await db.query<{ id: string }>(
    `UPDATE ${U} SET status = 'running', lease_owner = $2, started_at = $3, lease_expires_at = $4, attempts = 1
      WHERE id IN (SELECT id FROM ${U} WHERE sync_run_id = $1 ORDER BY id DESC LIMIT 2) RETURNING id`,
    [runId, OWNER, NOW, at(NOW, 60 * SEC)],
  );
  // As planning and dispatch keep it: the run's count of planned units.
  await db.query(
    `UPDATE syncrelay.sync_runs
        SET planned_units = (SELECT count(*) FROM ${U} WHERE sync_run_id = $1 AND status = 'planned')
      WHERE id = $1`,
    [runId],
  );
  return { runId, unitId: rows[0]!.id };
}

/**
 * Shared buffers (hit + read) the terminal CAS statement of `unitId` touches, executed in a
 * transaction that is rolled back (so the same end can be measured again).
 */
async function endStatementBuffers(unitId: string): Promise<number> {
  let buffers = -1;
  const rollback = new Error('rollback');
  const end = { unitId, owner: OWNER, status: 'success' as const, result: {}, error: null, touchedSurfaces: [] };
  await db
    .transaction(async (tx) => {
      const explaining = {
        schema: tx.schema,
        query: async (text: string, params?: unknown[]) => {
          const r = await tx.query<{ 'QUERY PLAN': [{ Plan: Record<string, number> }] }>(
            `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
            params,
          );
          const plan = r.rows[0]!['QUERY PLAN'][0].Plan;
          buffers = (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
          return { rows: [], rowCount: 0 };
        },
      } as unknown as Tx;
      await finishUnits(explaining, [end], at(NOW, SEC));
      throw rollback;
    })
    .catch((err: unknown) => {
      if (err !== rollback) throw err;
    });
  expect(buffers).toBeGreaterThan(0);
  return buffers;
}

describe('the end statement on a large run', () => {
  for (const shape of ['planned units left', 'all dispatched'] as const) {
    it(`reads about as much on 20,000 units as on 200 (${shape})`, async () => {
      const key = shape.replace(/ /g, '-');
      const small = await runInFlight(`org-probe-small-${key}`, 200, shape);
      const large = await runInFlight(`org-probe-large-${key}`, 20_000, shape);
      // Warm both once (hint bits, killed index entries), then compare a second end of each.
      await endStatementBuffers(small.unitId);
      await endStatementBuffers(large.unitId);
      const smallReads = await endStatementBuffers(small.unitId);
      const largeReads = await endStatementBuffers(large.unitId);
      expect(largeReads / smallReads).toBeLessThan(2);
    }, 120_000);
  }
});
