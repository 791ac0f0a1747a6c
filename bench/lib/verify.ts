/**
 * Verify runs over a filled store, under a provider benchmark's budget: one over the unchanged
 * source (what a verify costs when there is nothing to find: requests per item, and wall time
 * against the budget's minimum), then one after half a percent of the issues was deleted at the
 * provider and another half percent lost from the store (what it finds, and what that costs).
 */
import type { Db } from '../../src/db/types.js';
import type { VerifyCounts } from '../../src/domain/verify.js';
import type { Engine } from '../../src/engine.js';
import { readRunView } from '../../src/planning/runView.js';
import { reserveFor } from '../../src/providers/kit/budget.js';
import { round } from './stats.js';
import { timedRun } from './incremental.js';

export interface VerifyTarget {
  engine: Engine;
  db: Db;
  orgId: string;
  integrationId: string;
  /** The emulator's requests so far, whatever the answer (a confirmation's 404 or 410 counts too). */
  requests: () => number;
  /** The datasets the verify runs (the work-item families'); @default every verified one */
  datasets?: readonly string[];
  /** The same by kind (path or operation), where the emulator tells. */
  requestKinds?: () => Record<string, number>;
  note: (line: string) => void;
  /** Items the source holds (the per-item figures' denominator). */
  items: number;
  /** The budget: requests per window of `windowMs`. */
  limit: number;
  windowMs: number;
  /** Deletes `n` issues at the provider; returns their ids as the store keys them. */
  deleteAtProvider: (n: number) => string[];
  /** Resolves when the emulator's next request starts a fresh budget window. */
  freshWindow: () => Promise<void>;
}

interface VerifyPhase {
  status: string;
  requests: number;
  wallMs: number;
  counts: VerifyCounts | null;
  /** The run's requests by kind (where the emulator tells), and each verified dataset's units' checked. */
  byKind: Record<string, number> | null;
  checkedByDataset: Record<string, number>;
}

async function verifyRun(t: VerifyTarget, label: string): Promise<VerifyPhase> {
  // Each verify run is triggered at the start of a fresh budget window, as a budgeted backfill is:
  // the minimum (requests ÷ R × window) counts whole windows from the trigger, and a run started in
  // a window something else has partly spent would first wait out its rest. The wait is not timed.
  await t.freshWindow();
  const kindsBefore = t.requestKinds?.() ?? null;
  const { run, status, requests, wallMs } = await timedRun(t, 'verify', label, t.requests);
  const view = await readRunView(t.db, run.syncRunId);
  const byKind = kindsBefore && t.requestKinds ? kindsSince(kindsBefore, t.requestKinds()) : null;
  const checkedByDataset = await checkedOf(t, run.syncRunId);
  return { status, requests, wallMs, counts: view?.verify ?? null, byKind, checkedByDataset };
}

/** The kinds of request made between two tallies, most first. */
function kindsSince(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const made = Object.entries(after).map(([k, n]) => [k, n - (before[k] ?? 0)] as const);
  return Object.fromEntries(made.filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]));
}

/** Objects checked per dataset of the run's units (a family's unit counts its comments' pass too). */
async function checkedOf(t: VerifyTarget, runId: string): Promise<Record<string, number>> {
  const { rows } = await t.db.query<{ dataset_key: string; checked: number }>(
    `SELECT dataset_key, sum((result->'verify'->>'checked')::bigint)::int AS checked
       FROM ${t.db.schema.sync_run_units} WHERE sync_run_id = $1 GROUP BY dataset_key ORDER BY dataset_key`,
    [runId],
  );
  return Object.fromEntries(rows.map((r) => [r.dataset_key, r.checked ?? 0]));
}

/** A verify with no budget (the emulator's set unlimited): what the verify's own pace is. */
export async function unthrottledVerify(
  t: Pick<
    VerifyTarget,
    'engine' | 'db' | 'orgId' | 'integrationId' | 'requests' | 'note' | 'datasets' | 'requestKinds'
  >,
  label: string,
) {
  const kindsBefore = t.requestKinds?.() ?? null;
  const { run, status, requests, wallMs } = await timedRun(t, 'verify', label, t.requests);
  const view = await readRunView(t.db, run.syncRunId);
  const byKind = kindsBefore && t.requestKinds ? kindsSince(kindsBefore, t.requestKinds()) : null;
  return { status, requests, wallMs, counts: view?.verify ?? null, requests_by_kind: byKind };
}

/** `n` live work items of the integration, not among `except`, removed from the store (rows only). */
async function loseFromStore(t: VerifyTarget, n: number, except: readonly string[]): Promise<string[]> {
  const table = t.db.schema.table('work_items');
  const { rows } = await t.db.query<{ external_id: string }>(
    `DELETE FROM ${table} WHERE integration_id = $1 AND external_id IN (
       SELECT external_id FROM ${table}
        WHERE integration_id = $1 AND deleted_at IS NULL AND NOT (external_id = ANY($2::text[]))
        ORDER BY md5(external_id) LIMIT $3)
     RETURNING external_id`,
    [t.integrationId, [...except], n],
  );
  return rows.map((r) => r.external_id);
}

/**
 * The run's figures: wall against the budget's minimum (requests ÷ R × window), and, for reading
 * it, against the minimum of what the engine spends of each window — R less the reserve it never
 * spends (budget.ts `reserveFor`: 1 %, at least 10), a large share of the small windows a run of a
 * few hundred requests needs to span several.
 */
function figures(t: VerifyTarget, p: VerifyPhase) {
  const minimumMs = (p.requests / t.limit) * t.windowMs;
  const usable = Math.max(1, t.limit - reserveFor(t.limit));
  const usableMs = (p.requests / usable) * t.windowMs;
  return {
    status: p.status,
    requests: p.requests,
    // Per object the verify checked (listed or confirmed: issues, pull requests, comments — every
    // surface a verified dataset lists), or per item of the source when the run reports none.
    items_checked: p.counts?.checked ?? null,
    requests_per_item: Math.round((p.requests / Math.max(1, p.counts?.checked ?? t.items)) * 10_000) / 10_000,
    wall_s: round(p.wallMs / 1000),
    minimum_s: round(minimumMs / 1000),
    ratio: round(p.wallMs / Math.max(1, minimumMs)),
    reserve: t.limit - usable,
    ratio_to_budget_less_reserve: round(p.wallMs / Math.max(1, usableMs)),
    counts: p.counts,
    checked_by_dataset: p.checkedByDataset,
    requests_by_kind: p.byKind,
  };
}

/** The verify over unchanged data, then the one after 0.5 % deleted at the provider and 0.5 % lost. */
export async function verifyCost(t: VerifyTarget, label: string) {
  const unchanged = await verifyRun(t, `${label}: verify of unchanged data`);
  const n = Math.max(1, Math.round(t.items * 0.005));
  const deleted = t.deleteAtProvider(n);
  const lost = await loseFromStore(t, n, deleted);
  const found = await verifyRun(t, `${label}: verify after ${n} deleted and ${lost.length} lost`);
  return {
    verify_unchanged: { ...figures(t, unchanged), nothing_found: nothingFound(unchanged.counts) },
    verify_one_percent: {
      ...figures(t, found),
      deleted_at_provider: deleted.length,
      lost_from_store: lost.length,
      found_all: found.status === 'success' && (await foundAll(t, deleted, lost)),
    },
  };
}

/**
 * Whether the store shows what was done, read from `work_items` itself (the run's counts also hold
 * what other verified surfaces found, e.g. the comments of the deleted issues): every issue deleted
 * at the provider marked deleted, every one lost from the store written again.
 */
async function foundAll(t: VerifyTarget, deleted: readonly string[], lost: readonly string[]): Promise<boolean> {
  const table = t.db.schema.table('work_items');
  const { rows } = await t.db.query<{ marked: number; back: number }>(
    `SELECT count(*) FILTER (WHERE external_id = ANY($2::text[]) AND deleted_at IS NOT NULL)::int AS marked,
            count(*) FILTER (WHERE external_id = ANY($3::text[]) AND deleted_at IS NULL)::int AS back
       FROM ${table} WHERE integration_id = $1`,
    [t.integrationId, [...deleted], [...lost]],
  );
  return rows[0]!.marked === deleted.length && rows[0]!.back === lost.length;
}

function nothingFound(c: VerifyCounts | null): boolean {
  return c !== null && c.missing === 0 && c.stale === 0 && c.deleted === 0 && c.restored === 0;
}

/** `n` of `items`, evenly spread (each at most once). */
export function spread<T>(items: readonly T[], n: number): T[] {
  const step = items.length / Math.max(1, n);
  return Array.from({ length: Math.min(n, items.length) }, (_, k) => items[Math.floor(k * step)]!);
}
