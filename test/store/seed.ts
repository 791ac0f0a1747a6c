/** Rows for store tests: an integration, runs and units in chosen states (set directly, not through the engine). */
import { quoteIdent, type Db } from '../../src/db/types.js';
import type { RunStatus } from '../../src/domain/statuses.js';
import { insertIntegration } from '../../src/store/integrations.js';
import type { UnitRow } from '../../src/store/rows.js';
import { insertRun } from '../../src/store/runs.js';

/** A fixed instant; store statements take `now` as a parameter, so tests run on virtual time. */
export const T0 = new Date('2030-01-01T00:00:00.000Z');

export function at(base: Date, ms: number): Date {
  return new Date(base.getTime() + ms);
}

export const SEC = 1000;

export async function seedIntegration(db: Db, orgId = 'org-s'): Promise<{ orgId: string; integrationId: string }> {
  const row = await insertIntegration(db, { orgId, provider: 'synthetic', name: 'store-test', config: {} }, T0);
  return { orgId, integrationId: row.id };
}

/** A run (planned, or moved to `status` with `completedAt` when terminal). Returns its id. */
export async function seedRun(
  db: Db,
  i: { orgId: string; integrationId: string },
  opts: { status?: RunStatus; completedAt?: Date } = {},
): Promise<string> {
  const run = await insertRun(
    db,
    { orgId: i.orgId, integrationId: i.integrationId, triggeredBy: 'manual', mode: 'backfill' },
    T0,
  );
  if (opts.status && opts.status !== 'planned') await setRunStatus(db, run.id, opts.status, opts.completedAt ?? null);
  return run.id;
}

export async function setRunStatus(
  db: Db,
  runId: string,
  status: RunStatus,
  completedAt: Date | null = null,
): Promise<void> {
  await db.query('UPDATE syncrelay.sync_runs SET status = $2, completed_at = $3 WHERE id = $1', [
    runId,
    status,
    completedAt,
  ]);
}

export interface UnitSpec {
  provider?: string;
  costClass?: string;
  tier?: 'reference' | 'work_item';
  orgId?: string;
  /** Columns set after the insert (status, lease_owner, updated_at …). */
  set?: Partial<Record<keyof UnitRow, unknown>>;
}

/** Inserts one planned unit per spec into the run, then applies each spec's `set`. Returns ids in spec order. */
export async function seedUnits(
  db: Db,
  i: { orgId: string; integrationId: string },
  runId: string,
  specs: readonly UnitSpec[],
): Promise<string[]> {
  const ids: string[] = [];
  for (const s of specs) {
    const reference = s.tier === 'reference';
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO syncrelay.sync_run_units (org_id, sync_run_id, integration_id, provider, dataset_key, tier,
                                   cost_class, mode, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'backfill', $8, $8) RETURNING id`,
      [
        s.orgId ?? i.orgId,
        runId,
        i.integrationId,
        s.provider ?? 'synthetic',
        reference ? 'teams' : 'work-items',
        reference ? 'reference' : 'work_item',
        s.costClass ?? 'standard',
        T0,
      ],
    );
    const id = rows[0]!.id;
    if (s.set) await setUnit(db, id, s.set);
    ids.push(id);
  }
  return ids;
}

/** Sets columns of one unit; names are quoted identifiers, values are bound. */
export async function setUnit(db: Db, unitId: string, set: Partial<Record<keyof UnitRow, unknown>>): Promise<void> {
  const entries = Object.entries(set);
  if (entries.length === 0) return;
  const assignments = entries.map(([col], n) => `${quoteIdent(col)} = $${n + 2}`).join(', ');
  await db.query(`UPDATE syncrelay.sync_run_units SET ${assignments} WHERE id = $1`, [
    unitId,
    ...entries.map(([, v]) => v),
  ]);
}

export async function unit(db: Db, unitId: string): Promise<UnitRow> {
  const { rows } = await db.query<UnitRow>('SELECT * FROM syncrelay.sync_run_units WHERE id = $1', [unitId]);
  return rows[0]!;
}
