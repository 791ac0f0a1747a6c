/**
 * The ground-truth invariant of `syncrelay chaos --provider X`: after the final incremental, the
 * normalized store holds every item the emulator holds, once (the primary key), at its latest
 * version. Rows of items deleted at the provider may stay (tombstones are the verify mode's): they
 * are counted, not failed.
 */
import { quoteIdent } from '../db/schema.js';
import type { Db } from '../db/types.js';
import { finding, type InvariantResult } from './findings.js';
import type { GroundTruth, TruthTable } from './targets/target.js';

interface Outcome {
  expected: number;
  missing: string[];
  stale: string[];
  extra: number;
}

/** Reads one table's rows of the integration (locks nothing) and compares them with the truth. */
async function compareTable(db: Db, orgId: string, integrationId: string, t: TruthTable): Promise<Outcome> {
  const version = t.versionColumn ? quoteIdent(t.versionColumn) : 'NULL::timestamptz';
  const { rows } = await db.query<{ external_id: string; version: Date | null }>(
    `SELECT external_id, ${version} AS version FROM ${db.schema.table(t.table)}
      WHERE org_id = $1 AND integration_id = $2`,
    [orgId, integrationId],
  );
  const stored = new Map(rows.map((r) => [r.external_id, r.version?.getTime() ?? null]));
  const out: Outcome = { expected: t.rows.size, missing: [], stale: [], extra: 0 };
  for (const [id, want] of t.rows) {
    if (!stored.has(id)) out.missing.push(id);
    else if (t.versionColumn && stored.get(id) !== want) {
      out.stale.push(`${id} (stored ${iso(stored.get(id))}, latest ${iso(want)})`);
    }
  }
  for (const id of stored.keys()) if (!t.rows.has(id)) out.extra += 1;
  return out;
}

const iso = (ms: number | null | undefined) => (ms == null ? 'none' : new Date(ms).toISOString());

/**
 * Compares every table of `truth` with the integration's rows, after `finalRun` (the final
 * incremental, which must have succeeded: a failed one is a violation of its own).
 */
export async function checkGroundTruth(
  db: Db,
  orgId: string,
  integrationId: string,
  truth: GroundTruth,
  finalRun?: { id: string; status: string },
): Promise<InvariantResult> {
  const examples: string[] = [];
  const counts: string[] = [];
  let violations = 0;
  if (finalRun && finalRun.status !== 'success') {
    violations += 1;
    examples.push(`final incremental run ${finalRun.id}: ${finalRun.status}, not success`);
  }
  for (const t of truth) {
    const o = await compareTable(db, orgId, integrationId, t);
    violations += o.missing.length + o.stale.length;
    for (const id of o.missing) examples.push(`${t.table} ${id}: at the provider, not in the store`);
    for (const s of o.stale) examples.push(`${t.table} ${s}: stored at an older version`);
    const extra = o.extra > 0 ? ` (+${o.extra} gone at the provider)` : '';
    counts.push(`${t.table} ${o.expected}${extra}`);
  }
  return finding('store_equals_ground_truth', 'the normalized store equals the emulator’s ground truth', {
    checked: counts.join(', '),
    examples,
    violations,
  });
}
