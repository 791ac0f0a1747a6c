/**
 * SPEC §12, second bullet, from history: the audit log gives every lease a unit ever had — from the
 * claim that set its owner to the moment the unit left that owner or the last expiry granted to it,
 * whichever came first. A lease another owner's claim took over while it was still live lasted, for
 * its holder, until that expiry. No two leases of a unit may overlap; every provider execution must
 * run under a lease that was granted; every sink row write must have happened, by the database's
 * clock, inside its writer's lease: after its claim and before the change that handed the unit on.
 */
import type { Db } from '../db/types.js';
import { auditTables } from './database.js';
import type { InvariantResult } from './findings.js';
import { finding } from './findings.js';

/** Materializes the lease intervals once (chaos_leases) for the checks below. */
export async function buildLeaseTable(db: Db): Promise<number> {
  const a = auditTables(db.schema);
  await db.query(`DROP TABLE IF EXISTS ${a.leases}`);
  // left_*: the first change after the claim that moved the unit away from this owner (its end,
  // an expiry, a cancellation, or another owner's claim); last_expiry: the last expiry granted.
  await db.query(`
    CREATE TABLE ${a.leases} AS
    WITH claims AS (
      SELECT unit_id, new_owner AS owner, min(id) AS claim_id, min(at) AS start_at
        FROM ${a.unitEvents}
       WHERE new_status = 'running' AND new_owner IS NOT NULL
         AND (old_status IS DISTINCT FROM 'running' OR old_owner IS DISTINCT FROM new_owner)
       GROUP BY unit_id, new_owner
    )
    SELECT c.unit_id, c.owner, c.claim_id, c.start_at, x.left_at, x.left_status, x.left_to,
           (SELECT e.lease_expires_at FROM ${a.unitEvents} e
             WHERE e.unit_id = c.unit_id AND e.id >= c.claim_id AND e.new_status = 'running'
               AND e.new_owner = c.owner
             ORDER BY e.id DESC LIMIT 1) AS last_expiry
      FROM claims c
      LEFT JOIN LATERAL (
        SELECT e.at AS left_at, e.new_status AS left_status, e.new_owner AS left_to FROM ${a.unitEvents} e
         WHERE e.unit_id = c.unit_id AND e.id > c.claim_id
           AND (e.new_status <> 'running' OR e.new_owner IS DISTINCT FROM c.owner)
         ORDER BY e.id LIMIT 1) x ON true`);
  await db.query(`ALTER TABLE ${a.leases} ADD COLUMN end_at timestamptz, ADD COLUMN handed_at timestamptz`);
  await db.query(
    `UPDATE ${a.leases}
        SET end_at = CASE WHEN left_status = 'running' THEN COALESCE(last_expiry, 'infinity')
                          ELSE LEAST(COALESCE(left_at, 'infinity'), COALESCE(last_expiry, 'infinity')) END,
            handed_at = COALESCE(left_at, 'infinity')`,
  );
  await db.query(`CREATE INDEX ON ${a.leases} (unit_id, owner)`);
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${a.leases}`);
  return rows[0]!.n;
}

export async function checkNoOverlappingLeases(db: Db, leases: number): Promise<InvariantResult> {
  const s = db.schema;
  const a = auditTables(s);
  type Overlap = { unit_id: string; a: string; b: string; ms: number; taken: boolean };
  const { rows: overlaps } = await db.query<Overlap>(`
    SELECT a.unit_id, a.owner AS a, b.owner AS b, a.left_to IS NOT DISTINCT FROM b.owner AS taken,
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
      ...overlaps.map(
        (o) =>
          `unit ${o.unit_id}: leases ${o.a} and ${o.b} overlap by ${o.ms} ms` +
          (o.taken ? ` (${o.b} claimed the unit while ${o.a} still held it)` : ''),
      ),
      ...orphans.map((o) => `unit ${o.unit_id}: execution ${o.id} ran under ${o.lease_owner}, a lease never granted`),
      ...open.map((o) => `unit ${o.unit_id}: lease ${o.owner} never ended`),
    ],
  });
}

/**
 * Every row write of the sink (chaos_item_writes, one entry per row per statement, timed by the
 * database) inside its writer's lease. The fence locks the unit row FOR SHARE until the write
 * commits, so a fenced write always precedes the change that hands the unit on; judged against
 * that change, a legitimate write never needs a tolerance.
 */
export async function checkNoFencedOutWrites(db: Db): Promise<InvariantResult> {
  const a = auditTables(db.schema);
  type Row = {
    unit_id: string;
    lease_owner: string;
    rows: number;
    first_key: string;
    at: Date;
    start_at: Date | null;
    handed_at: Date | null;
    left_status: string | null;
    why: 'unknown' | 'early' | 'late';
  };
  const { rows } = await db.query<Row>(`
    SELECT w.unit_id, w.lease_owner, count(*)::int AS rows, min(w.item_key) AS first_key, max(w.at) AS at,
           l.start_at, l.handed_at, l.left_status,
           CASE WHEN l.owner IS NULL THEN 'unknown' WHEN min(w.at) < l.start_at THEN 'early' ELSE 'late' END AS why
      FROM ${a.itemWrites} w
      LEFT JOIN ${a.leases} l ON l.unit_id = w.unit_id AND l.owner = w.lease_owner
     WHERE l.owner IS NULL OR w.at < l.start_at OR w.at >= l.handed_at
     GROUP BY w.tx, w.unit_id, w.lease_owner, l.owner, l.start_at, l.handed_at, l.left_status
     ORDER BY max(w.at)`);
  const { rows: count } = await db.query<{ n: number; writes: number }>(
    `SELECT count(*)::int AS n, count(DISTINCT tx)::int AS writes FROM ${a.itemWrites}`,
  );
  const ms = (x: Date, y: Date) => x.getTime() - y.getTime();
  const describe = (r: Row): string => {
    const what = `unit ${r.unit_id}: ${r.rows} row(s) (${r.first_key}…) written by ${r.lease_owner}`;
    if (r.why === 'unknown') return `${what}, an owner that never held a lease of that unit`;
    if (r.why === 'early') return `${what} before its lease began (${r.start_at!.toISOString()})`;
    return (
      `${what} at ${r.at.toISOString()}, ${ms(r.at, r.handed_at!)} ms after the unit left that lease ` +
      `(${r.left_status ?? '?'} at ${r.handed_at!.toISOString()})`
    );
  };
  return finding('no_fenced_out_writes', 'no sink row written by a fenced-out worker', {
    checked: `${count[0]!.n} row writes in ${count[0]!.writes} transactions, timed by the database`,
    examples: rows.map(describe),
  });
}
