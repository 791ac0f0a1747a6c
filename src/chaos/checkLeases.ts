/**
 * SPEC §12, second bullet, from history: the audit log gives every lease a unit ever had — from the
 * claim that set its owner to the moment the unit left that owner or the last expiry granted to it,
 * whichever came first. No two leases of a unit may overlap; every provider execution must run under
 * a lease that was granted; every sink row must have been written inside its writer's live lease.
 */
import type { Db } from '../db/types.js';
import { auditTables } from './database.js';
import type { InvariantResult } from './findings.js';
import { finding } from './findings.js';

/** Materializes the lease intervals once (chaos_leases) for the checks below. */
export async function buildLeaseTable(db: Db): Promise<number> {
  const a = auditTables(db.schema);
  await db.query(`DROP TABLE IF EXISTS ${a.leases}`);
  await db.query(`
    CREATE TABLE ${a.leases} AS
    WITH claims AS (
      SELECT unit_id, new_owner AS owner, min(id) AS claim_id, min(at) AS start_at
        FROM ${a.unitEvents}
       WHERE new_status = 'running' AND new_owner IS NOT NULL
         AND (old_status IS DISTINCT FROM 'running' OR old_owner IS DISTINCT FROM new_owner)
       GROUP BY unit_id, new_owner
    )
    SELECT c.unit_id, c.owner, c.claim_id, c.start_at,
           (SELECT min(e.at) FROM ${a.unitEvents} e
             WHERE e.unit_id = c.unit_id AND e.id > c.claim_id
               AND (e.new_status <> 'running' OR e.new_owner IS DISTINCT FROM c.owner)) AS left_at,
           (SELECT e.lease_expires_at FROM ${a.unitEvents} e
             WHERE e.unit_id = c.unit_id AND e.id >= c.claim_id AND e.new_status = 'running'
               AND e.new_owner = c.owner
             ORDER BY e.id DESC LIMIT 1) AS last_expiry
      FROM claims c`);
  await db.query(`ALTER TABLE ${a.leases} ADD COLUMN end_at timestamptz`);
  await db.query(
    `UPDATE ${a.leases} SET end_at = LEAST(COALESCE(left_at, 'infinity'), COALESCE(last_expiry, 'infinity'))`,
  );
  await db.query(`CREATE INDEX ON ${a.leases} (unit_id, owner)`);
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${a.leases}`);
  return rows[0]!.n;
}

export async function checkNoOverlappingLeases(db: Db, leases: number): Promise<InvariantResult> {
  const s = db.schema;
  const a = auditTables(s);
  const { rows: overlaps } = await db.query<{ unit_id: string; a: string; b: string; ms: number }>(`
    SELECT a.unit_id, a.owner AS a, b.owner AS b,
           (extract(epoch FROM (LEAST(a.end_at, b.end_at) - GREATEST(a.start_at, b.start_at))) * 1000)::int AS ms
      FROM ${a.leases} a JOIN ${a.leases} b ON a.unit_id = b.unit_id AND a.claim_id < b.claim_id
     WHERE a.start_at < b.end_at AND b.start_at < a.end_at
     ORDER BY a.unit_id LIMIT 50`);
  const { rows: orphans } = await db.query<{ unit_id: string; lease_owner: string; id: string }>(`
    SELECT x.id::text, x.unit_id, x.lease_owner FROM ${s.table('synthetic_executions')} x
     WHERE NOT EXISTS (SELECT 1 FROM ${a.leases} l WHERE l.unit_id = x.unit_id AND l.owner = x.lease_owner)
     ORDER BY x.id LIMIT 50`);
  const { rows: open } = await db.query<{ unit_id: string; owner: string }>(
    `SELECT unit_id, owner FROM ${a.leases} WHERE end_at = 'infinity' LIMIT 50`,
  );
  const { rows: exec } = await db.query<{ n: number; owners: number }>(
    `SELECT count(*)::int AS n, count(DISTINCT (unit_id, lease_owner))::int AS owners
       FROM ${s.table('synthetic_executions')}`,
  );
  return finding('no_overlapping_live_leases', 'no unit executed by two workers with overlapping live leases', {
    checked: `${leases} leases, ${exec[0]!.n} provider executions`,
    examples: [
      ...overlaps.map((o) => `unit ${o.unit_id}: leases ${o.a} and ${o.b} overlap by ${o.ms} ms`),
      ...orphans.map((o) => `unit ${o.unit_id}: execution ${o.id} ran under ${o.lease_owner}, a lease never granted`),
      ...open.map((o) => `unit ${o.unit_id}: lease ${o.owner} never ended`),
    ],
  });
}

export async function checkNoFencedOutWrites(db: Db): Promise<InvariantResult> {
  const s = db.schema;
  const a = auditTables(s);
  const items = s.table('synthetic_items');
  type Row = { unit_id: string; lease_owner: string; item_key: string; written_at: Date; why: string };
  const { rows } = await db.query<Row>(`
    SELECT i.unit_id, i.lease_owner, i.item_key, i.written_at,
           CASE WHEN l.owner IS NULL THEN 'by an owner that never held a lease of that unit'
                WHEN i.written_at < date_trunc('milliseconds', l.start_at) THEN 'before its lease began'
                ELSE 'after its lease had ended (' || to_char(l.end_at, 'HH24:MI:SS.MS') || ')' END AS why
      FROM ${items} i
      LEFT JOIN ${a.leases} l ON l.unit_id = i.unit_id AND l.owner = i.lease_owner
     WHERE l.owner IS NULL OR i.written_at < date_trunc('milliseconds', l.start_at) OR i.written_at >= l.end_at
     LIMIT 50`);
  const { rows: count } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${items}`);
  return finding('no_fenced_out_writes', 'no sink row written by a fenced-out worker', {
    checked: `${count[0]!.n} synthetic_items rows`,
    examples: rows.map(
      (r) =>
        `unit ${r.unit_id}: item ${r.item_key} written by ${r.lease_owner} at ${r.written_at.toISOString()} ${r.why}`,
    ),
  });
}
