/**
 * What a unit's end reads does not grow with its run. The terminal CAS statement asks whether the
 * run has another open unit, whether it still has planned units and which run waits longest in the
 * bucket; every unit that already passed through `planned`, `dispatching` and `running` left index
 * entries behind under those statuses. Measured as the statement's buffer reads (EXPLAIN ANALYZE,
 * BUFFERS) on a run of 20,000 units against one of 200, in the same state: a ratio, not a time.
 *
 * The statements that find a unit by its id (claim, heartbeat, fence, end) must reach it through
 * the primary key however stale the statistics: the table is analyzed as autovacuum would after a
 * large plan (every unit planned), which makes the in-flight and lease indexes look empty. The
 * end's probes are measured with no statistics at all (the table is never analyzed); they are
 * written so that only their own partial indexes serve them cheaply whatever the statistics
 * (migration 0023; none, stale and fresh ones were checked by EXPLAIN on these shapes).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Tx } from '../../src/db/types.js';
import { claimUnits, extendLease, finishUnits, lockLeaseIfHeld } from '../../src/store/units.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { at, SEC, seedIntegration, seedRun } from './seed.js';

const OWNER = '11111111-1111-4111-8111-111111111111';
const NOW = new Date('2030-06-01T12:00:00.000Z');
const U = 'syncrelay.sync_run_units';

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
  // No autovacuum between building a run and measuring it: every entry the moved units left behind
  // stays in the indexes, and the statistics stay as the test made them (none here; the keyed
  // statements' test analyzes explicitly, `staleStatistics`).
  await t.db.exec(`ALTER TABLE ${U} SET (autovacuum_enabled = false)`);
});
afterAll(async () => {
  await t?.drop();
});

type Shape = 'planned units left' | 'all dispatched';

/** A second connection holding a snapshot of the database until `release()`. */
async function holdSnapshot(url: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  await client.query('SELECT 1');
  return {
    async release() {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

/**
 * A run of `size` units in mid-flight: all but the newest went planned → dispatching → running →
 * success, statement by statement as dispatch slices and end batches move them; of the newest,
 * two are running and (shape 'planned units left') ten are still planned. Returns a running unit.
 */
async function runInFlight(
  org: string,
  size: number,
  shape: Shape,
  staleStatistics = false,
  on: TestDatabase = t,
): Promise<{ runId: string; unitId: string }> {
  const db = on.db;
  const integ = await seedIntegration(db, org);
  const runId = await seedRun(db, integ, { status: 'dispatching' });
  await db.query(
    `INSERT INTO ${U} (org_id, sync_run_id, integration_id, provider, dataset_key, tier, cost_class, mode)
     SELECT $1, $2, $3, 'synthetic', 'work-items', 'work_item', 'standard', 'backfill' FROM generate_series(1, $4)`,
    [integ.orgId, runId, integ.integrationId, size],
  );
  // As on a busy database: statistics from right after the plan, and every entry the units leave
  // behind still in the indexes (an older snapshot keeps them from being cleaned up as they go).
  const holder = staleStatistics ? await holdSnapshot(on.url) : null;
  if (staleStatistics) {
    await db.query(`ALTER TABLE ${U} SET (autovacuum_enabled = false)`);
    await db.query(`ANALYZE ${U}`);
  }
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
  await holder?.release();
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
 * Shared buffers (hit + read) the statement `run` sends touches (or its sub-plan named `part`, e.g.
 * `CTE changed`), executed in a transaction that is rolled back (so it can be measured again).
 */
async function statementBuffers(
  run: (tx: Tx) => Promise<unknown>,
  part?: string,
  on: TestDatabase = t,
): Promise<number> {
  const db = on.db;
  let buffers = -1;
  const rollback = new Error('rollback');
  await db
    .transaction(async (tx) => {
      const explaining = {
        schema: tx.schema,
        query: async (text: string, params?: unknown[]) => {
          const r = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
            `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
            params,
          );
          const whole = r.rows[0]!['QUERY PLAN'][0].Plan;
          const plan = part ? findSubplan(whole, part) : whole;
          if (!plan) throw new Error(`no sub-plan ${String(part)}`);
          buffers = (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
          return { rows: [], rowCount: 0 };
        },
      } as unknown as Tx;
      await run(explaining);
      throw rollback;
    })
    .catch((err: unknown) => {
      if (err !== rollback) throw err;
    });
  expect(buffers).toBeGreaterThan(0);
  return buffers;
}

type PlanNode = Record<string, number> & { 'Subplan Name'?: string; Plans?: PlanNode[] };

/** The sub-plan named `name` (depth first), or null. */
function findSubplan(node: PlanNode, name: string): PlanNode | null {
  if (node['Subplan Name'] === name) return node;
  for (const child of node.Plans ?? []) {
    const found = findSubplan(child, name);
    if (found) return found;
  }
  return null;
}

/** The terminal CAS statement of `unitId`. */
function endStatementBuffers(unitId: string): Promise<number> {
  const end = { unitId, owner: OWNER, status: 'success' as const, result: {}, error: null, touchedSurfaces: [] };
  return statementBuffers((tx) => finishUnits(tx, [end], at(NOW, SEC)));
}

/** Statements on one unit by its id: the claim CAS (which finds it already running), heartbeat, the sink's fence. */
const KEYED_STATEMENTS = {
  claim: (tx: Tx, unitId: string) =>
    claimUnits(tx, [{ unitId, owner: OWNER }], { now: at(NOW, SEC), leaseMs: 60_000, maxLifetimeMs: 3_600_000 }),
  heartbeat: (tx: Tx, unitId: string) =>
    extendLease(tx, { unitId, owner: OWNER, now: at(NOW, SEC), leaseMs: 60_000, maxLifetimeMs: 3_600_000 }),
  fence: (tx: Tx, unitId: string) => lockLeaseIfHeld(tx, unitId, OWNER, at(NOW, SEC)),
};

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

describe('statements that find a unit by id, on a large run with stale statistics', () => {
  // Each run in a database of its own: a statement that scans a whole index would read as much for
  // a small run as for a large one sharing its table.
  let alone: TestDatabase;
  let big: TestDatabase;
  beforeAll(async () => {
    alone = await createTestDatabase();
    big = await createTestDatabase();
  });
  afterAll(async () => {
    await alone?.drop();
    await big?.drop();
  });

  it('read about as much on 20,000 units as on 200 (claim, heartbeat, fence, end)', async () => {
    const small = await runInFlight('org-key-small', 200, 'all dispatched', true, alone);
    const large = await runInFlight('org-key-large', 20_000, 'all dispatched', true, big);
    const end = { unitId: '', owner: OWNER, status: 'success' as const, result: {}, error: null, touchedSurfaces: [] };
    const statements: Record<string, [(tx: Tx, unitId: string) => Promise<unknown>, string?]> = {
      claim: [KEYED_STATEMENTS.claim],
      heartbeat: [KEYED_STATEMENTS.heartbeat],
      fence: [KEYED_STATEMENTS.fence],
      // The end statement's own CAS (its probes are measured above).
      end: [(tx, unitId) => finishUnits(tx, [{ ...end, unitId }], at(NOW, SEC)), 'CTE changed'],
    };
    for (const [name, [statement, part]] of Object.entries(statements)) {
      await statementBuffers((tx) => statement(tx, small.unitId), part, alone);
      await statementBuffers((tx) => statement(tx, large.unitId), part, big);
      const smallReads = await statementBuffers((tx) => statement(tx, small.unitId), part, alone);
      const largeReads = await statementBuffers((tx) => statement(tx, large.unitId), part, big);
      expect(largeReads / smallReads, name).toBeLessThan(2);
    }
  }, 120_000);
});
