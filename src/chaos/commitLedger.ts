/**
 * "Nothing committed is lost" across a PostgreSQL crash or stop. Right before a PostgreSQL fault
 * halts the cluster, the audit log's committed rows are counted (each table's rows up to its
 * highest id, in one snapshot); afterwards every one of them must still be there — the audit rows
 * are written by triggers in the engine's own transactions, so a lost commit would lose one. Every
 * run whose trigger was acknowledged must exist too.
 */
import type { Db } from '../db/types.js';
import { auditTables } from './database.js';
import { finding, type InvariantResult } from './findings.js';

interface Snapshot {
  at: number;
  /** table → rows committed (count) with id ≤ maxId. */
  tables: { table: string; count: number; maxId: string }[];
}

export class CommitLedger {
  readonly snapshots: Snapshot[] = [];

  private static tables(db: Db): string[] {
    const a = auditTables(db.schema);
    return [a.unitEvents, a.runEvents, a.jobRunEvents, a.watermarkEvents, a.outboxEvents];
  }

  /** Counts what is committed now (one statement, one snapshot); a failure leaves no snapshot. */
  async snapshot(db: Db): Promise<void> {
    const tables = CommitLedger.tables(db);
    const cols = tables.map((t, i) => `(SELECT count(*)::int FROM ${t}) AS c${i}, (SELECT max(id) FROM ${t}) AS m${i}`);
    const at = Date.now();
    const { rows } = await db.query<Record<string, number | string | null>>(`SELECT ${cols.join(', ')}`);
    const row = rows[0]!;
    this.snapshots.push({
      at,
      tables: tables.map((table, i) => ({ table, count: Number(row[`c${i}`]), maxId: String(row[`m${i}`] ?? '0') })),
    });
  }

  /** Every counted row still there, every acknowledged trigger's run there. */
  async check(db: Db, orgId: string, runs: ReadonlyMap<string, number>): Promise<InvariantResult> {
    const examples: string[] = [];
    let rowsChecked = 0;
    for (const s of this.snapshots) {
      for (const t of s.tables) {
        const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.table} WHERE id <= $1`, [
          t.maxId,
        ]);
        rowsChecked += t.count;
        const now = rows[0]!.n;
        if (now < t.count) {
          examples.push(`${t.table}: ${t.count} rows committed before the fault at ${iso(s.at)}, ${now} after`);
        }
      }
    }
    const { rows: missing } = await db.query<{ id: string }>(
      `SELECT h.id::text AS id FROM unnest($1::uuid[]) AS h(id)
        WHERE NOT EXISTS (SELECT 1 FROM ${db.schema.sync_runs} r WHERE r.id = h.id AND r.org_id = $2)`,
      [[...runs.keys()], orgId],
    );
    for (const m of missing) examples.push(`run ${m.id}: its trigger was acknowledged, the run is gone`);
    return finding('nothing_committed_lost', 'nothing committed was lost to a PostgreSQL crash or stop', {
      checked: `${this.snapshots.length} snapshots (${rowsChecked} audit rows), ${runs.size} acknowledged triggers`,
      examples,
    });
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
