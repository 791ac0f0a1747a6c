import type { Clock } from '../../src/clock.js';
import type { Db, Tx } from '../../src/db/types.js';
import { LeaseLostError } from '../../src/errors.js';
import type { LeaseGuard } from '../../src/sdk/types.js';

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
