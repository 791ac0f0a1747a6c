/**
 * The ground-truth invariants of `syncrelay chaos --provider X`. After the final incremental, the
 * normalized store holds every item the emulator holds, once (the primary key), at its latest
 * version, none of them marked deleted; rows of items deleted at the provider may stay (the
 * incremental cannot know). After the final verify, deleted at the emulator ⇔ `deleted_at` set:
 * each stored row of an item the provider deleted carries it, and no row of a live item does.
 */
import { quoteIdent } from '../db/schema.js';
import type { Db } from '../db/types.js';
import { DELETED_AT, isTombstoneSurface } from '../sinks/normalized/surfaces.js';
import { finding, type InvariantResult } from './findings.js';
import type { GroundTruth, TruthTable } from './targets/target.js';

interface StoredRow {
  version: number | null;
  deleted: boolean;
}

/** Reads one table's rows of the integration (locks nothing): external id → version, tombstoned (where it can be). */
async function storedRows(
  db: Db,
  orgId: string,
  integrationId: string,
  t: TruthTable,
): Promise<Map<string, StoredRow>> {
  const version = t.versionColumn ? quoteIdent(t.versionColumn) : 'NULL::timestamptz';
  const deleted = isTombstoneSurface(t.table) ? `${quoteIdent(DELETED_AT)} IS NOT NULL` : 'false';
  const { rows } = await db.query<{ external_id: string; version: Date | null; deleted: boolean }>(
    `SELECT external_id, ${version} AS version, ${deleted} AS deleted
       FROM ${db.schema.table(t.table)}
      WHERE org_id = $1 AND integration_id = $2`,
    [orgId, integrationId],
  );
  return new Map(rows.map((r) => [r.external_id, { version: r.version?.getTime() ?? null, deleted: r.deleted }]));
}

interface Outcome {
  expected: number;
  violations: string[];
  extra: number;
}

/** The live items of `t` against the stored rows: missing, stale, or marked deleted while live. */
function compareLive(t: TruthTable, stored: ReadonlyMap<string, StoredRow>): Outcome {
  const out: Outcome = { expected: t.rows.size, violations: [], extra: 0 };
  for (const [id, want] of t.rows) {
    const row = stored.get(id);
    if (!row) out.violations.push(`${t.table} ${id}: at the provider, not in the store`);
    else if (t.versionColumn && row.version !== want) {
      out.violations.push(
        `${t.table} ${id} (stored ${iso(row.version)}, latest ${iso(want)}): stored at an older version`,
      );
    } else if (row.deleted) out.violations.push(`${t.table} ${id}: at the provider, marked deleted in the store`);
  }
  for (const id of stored.keys()) if (!t.rows.has(id)) out.extra += 1;
  return out;
}

const iso = (ms: number | null | undefined) => (ms == null ? 'none' : new Date(ms).toISOString());

/** A final run that must have succeeded: a violation of its own otherwise. */
function finalRunViolation(label: string, run: { id: string; status: string } | undefined): string[] {
  return run && run.status !== 'success' ? [`${label} run ${run.id}: ${run.status}, not success`] : [];
}

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
  const examples = finalRunViolation('final incremental', finalRun);
  const counts: string[] = [];
  for (const t of truth) {
    const o = compareLive(t, await storedRows(db, orgId, integrationId, t));
    examples.push(...o.violations);
    const extra = o.extra > 0 ? ` (+${o.extra} gone at the provider)` : '';
    counts.push(`${t.table} ${o.expected}${extra}`);
  }
  return finding('store_equals_ground_truth', 'the normalized store equals the emulator’s ground truth', {
    checked: counts.join(', '),
    examples,
  });
}

/**
 * After `finalVerify` (which must have succeeded), for each table whose truth names the provider's
 * deletions: every stored row of a deleted item carries `deleted_at`, no row of a live item does.
 * An item deleted before any read stored it has no row, and needs none.
 */
export async function checkDeletions(
  db: Db,
  orgId: string,
  integrationId: string,
  truth: GroundTruth,
  finalVerify: { id: string; status: string },
): Promise<InvariantResult> {
  const examples = finalRunViolation('final verify', finalVerify);
  const counts: string[] = [];
  for (const t of truth) {
    if (!t.deleted) continue;
    const stored = await storedRows(db, orgId, integrationId, t);
    let marked = 0;
    for (const id of t.deleted) {
      const row = stored.get(id);
      if (row?.deleted) marked += 1;
      else if (row) examples.push(`${t.table} ${id}: deleted at the provider, not marked deleted`);
    }
    for (const id of t.rows.keys()) {
      if (stored.get(id)?.deleted) examples.push(`${t.table} ${id}: at the provider, marked deleted`);
    }
    counts.push(`${t.table} ${t.deleted.size} deleted at the provider, ${marked} marked`);
  }
  return finding('deletions_equal_ground_truth', 'after a verify, deleted at the provider ⇔ deleted_at set', {
    checked: counts.join(', ') || 'no table the provider deletes from',
    examples,
  });
}
