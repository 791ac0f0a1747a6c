import { afterAll, beforeAll } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { migrate } from '../../src/db/migrator.js';
import { PgliteDb } from '../../src/db/pglite.js';
import type { Db, Tx } from '../../src/db/types.js';
import { LeaseLostError } from '../../src/errors.js';
import type { LeaseGuard } from '../../src/sdk/types.js';
import { normalizedSink, type NormalizedSink } from '../../src/sinks/normalized/index.js';
import { createTestDatabase } from '../helpers/pg.js';

/** The fence the engine's guard implements: the unit row locked FOR SHARE, owner + running + live lease. */
export function testGuard(db: Tx, unitId: string, owner: string, clock: Clock): LeaseGuard {
  const check = async (tx: Tx) => {
    const res = await tx.query(
      `SELECT 1 FROM ${tx.schema.sync_run_units}
        WHERE id = $1 AND lease_owner = $2 AND status = 'running' AND lease_expires_at > $3 FOR SHARE`,
      [unitId, owner, clock.now()],
    );
    if (res.rows.length === 0) throw new LeaseLostError(unitId);
  };
  return { unitId, owner, assertHeld: () => check(db), assertHeldIn: check };
}

/** An integration of `provider` in `org`; returns its id. */
export async function insertIntegration(db: Db, org: string, provider = 'github'): Promise<string> {
  const res = await db.query<{ id: string }>(
    `INSERT INTO ${db.schema.integrations} (org_id, provider, name) VALUES ($1, $2, 'normalized test') RETURNING id`,
    [org, provider],
  );
  return res.rows[0]!.id;
}

/** A running unit (with a run) of `integrationId` leased to `owner` until `leaseUntil`; returns its id. */
export async function insertRunningUnit(
  db: Db,
  org: string,
  integrationId: string,
  owner: string,
  leaseUntil: Date,
): Promise<string> {
  const run = await db.query<{ id: string }>(
    `INSERT INTO ${db.schema.sync_runs} (org_id, integration_id, triggered_by, mode, status)
     VALUES ($1, $2, 'manual', 'backfill', 'dispatching') RETURNING id`,
    [org, integrationId],
  );
  const unit = await db.query<{ id: string }>(
    `INSERT INTO ${db.schema.sync_run_units} (org_id, sync_run_id, integration_id, provider, dataset_key, tier,
                                              cost_class, mode, status, attempts, lease_owner, lease_expires_at)
     VALUES ($1, $2, $3, 'github', 'work-items', 'work_item', 'standard', 'backfill', 'running', 1, $4, $5)
     RETURNING id`,
    [org, run.rows[0]!.id, integrationId, owner, leaseUntil],
  );
  return unit.rows[0]!.id;
}

/** How a suite opens its database: its Db and how to close it. */
export type OpenDb = () => Promise<{ db: Db; close(): Promise<void> }>;

/** A fresh PostgreSQL database cloned from the migrated template. */
export const openPostgres: OpenDb = async () => {
  const t = await createTestDatabase({ poolSize: 2 });
  return { db: t.db, close: () => t.drop() };
};

/** A migrated in-memory PGlite database. */
export const openPglite: OpenDb = async () => {
  const db = await PgliteDb.open();
  await migrate(db);
  return { db, close: () => db.close() };
};

/** What a suite writes with; filled in before its first test (see `useSinkFixture`). */
export class SinkFixture {
  db!: Db;
  sink!: NormalizedSink;
  integrationId!: string;
  unitId!: string;

  constructor(private readonly clock: Clock) {}

  /** The guard of the fixture's unit, leased to `owner-a`. */
  guard(): LeaseGuard {
    return testGuard(this.db, this.unitId, 'owner-a', this.clock);
  }
}

/**
 * Opens a database with `open` before the enclosing suite's tests (closing it after them), with a
 * normalized sink, an integration of `org` and a running unit leased to `owner-a` for an hour past
 * `clock`'s time.
 */
export function useSinkFixture(open: OpenDb, org: string, clock: Clock): SinkFixture {
  const fixture = new SinkFixture(clock);
  let close: () => Promise<void> = async () => {};
  beforeAll(async () => {
    ({ db: fixture.db, close } = await open());
    fixture.sink = normalizedSink(fixture.db);
    fixture.integrationId = await insertIntegration(fixture.db, org);
    fixture.unitId = await insertRunningUnit(
      fixture.db,
      org,
      fixture.integrationId,
      'owner-a',
      new Date(clock.now().getTime() + 3_600_000),
    );
  });
  afterAll(async () => {
    await close();
  });
  return fixture;
}
