/**
 * The webhook invariant of a `--webhooks` chaos run, from the rows and the audit log, held to what
 * the API answered the producer:
 *
 * - every delivery answered 202 has exactly one `received` row, and at least as many rows
 *   (received + duplicate) as 202 answers; a duplicate row arms nothing;
 * - every received delivery that armed, joined or was remembered ends covered: its row names a run
 *   (remembered ones get theirs when the reconciler arms it) that planned a unit of the delivery's
 *   source (its source key, compared case-blind with the integration's: a GitHub repository, a
 *   Linear team, a Jira project), whose reading of it started after the delivery was received, and
 *   that ended
 *   (success, or failed / partial_failed under the usual rules; never cancelled or open);
 * - no delivery id names two runs, and every webhook-armed run is named by a delivery;
 * - coalescing: for each source, the webhook runs its deliveries name are at most its groups —
 *   deliveries in received order, a new group when one comes a debounce interval or more after the
 *   group's first, or after a run of that source left `planned` (a later delivery cannot join a
 *   dispatched run; it may arm the next one);
 * - no webhook_pending_runs row is left.
 */
import type { Db } from '../db/types.js';
import { auditTables } from './database.js';
import { finding, type InvariantResult } from './findings.js';

/**
 * For the group split only (never for coverage): a run's dispatch is stamped by PostgreSQL's clock
 * before it commits, a delivery's receipt by the API's a few statements before it looks for a run to
 * join; a dispatch this close after a receipt may still be what the delivery saw. Well under the
 * debounce interval, so the split still tells one group from two.
 */
const SPLIT_SLACK_MS = 250;
const COVERING = new Set(['success', 'partial_failed', 'failed']);
const ACTING = new Set(['armed', 'coalesced', 'pending']);

export interface WebhookCheckInput {
  integrationId: string;
  debounceMs: number;
  /** Delivery id → how many times the API answered it 202 (every delivery the producer sent). */
  accepted: ReadonlyMap<string, number>;
  /** What the producer did, for the report line. */
  summary: string;
}

export interface DeliveryRow {
  delivery_id: string | null;
  status: string;
  outcome: string | null;
  source: string | null;
  sync_run_id: string | null;
  received_at: Date;
}

export interface WebhookRunRow {
  id: string;
  status: string;
  triggered_by: string;
  /** When it left `planned` (audit log), or null. */
  left_planned: Date | null;
}

/** First `running` of each of the run's units, per (run, source key, lower-cased). */
export type ReadStarts = Map<string, Date | null>;

export interface WebhookFacts {
  deliveries: DeliveryRow[];
  runs: Map<string, WebhookRunRow>;
  /** `${runId} ${source key, lower-cased}` → the earliest start of a unit of it (null: planned, never started). */
  reads: ReadStarts;
  pendingRows: number;
}

export async function loadWebhookFacts(db: Db, integrationId: string): Promise<WebhookFacts> {
  const s = db.schema;
  const a = auditTables(s);
  const { rows: deliveries } = await db.query<DeliveryRow>(
    `SELECT delivery_id, status, outcome, source, sync_run_id, received_at FROM ${s.webhook_deliveries}
      WHERE integration_id = $1 ORDER BY received_at, id`,
    [integrationId],
  );
  const { rows: runRows } = await db.query<WebhookRunRow>(
    `SELECT r.id, r.status, r.triggered_by,
            (SELECT min(e.at) FROM ${a.runEvents} e
              WHERE e.run_id = r.id AND e.old_status = 'planned' AND e.new_status <> 'planned') AS left_planned
       FROM ${s.sync_runs} r
      WHERE r.integration_id = $1
        AND (r.triggered_by = 'webhook' OR r.id IN (SELECT sync_run_id FROM ${s.webhook_deliveries}
                                                    WHERE integration_id = $1 AND sync_run_id IS NOT NULL))`,
    [integrationId],
  );
  const { rows: reads } = await db.query<{ run_id: string; source: string; started: Date | null }>(
    `SELECT u.sync_run_id AS run_id, lower(src.external_key) AS source,
            min((SELECT min(e.at) FROM ${a.unitEvents} e
                  WHERE e.unit_id = u.id AND e.new_status = 'running')) AS started
       FROM ${s.sync_run_units} u JOIN ${s.integration_sources} src ON src.id = u.source_id
      WHERE u.integration_id = $1 AND u.sync_run_id = ANY($2::uuid[])
      GROUP BY u.sync_run_id, lower(src.external_key)`,
    [integrationId, runRows.map((r) => r.id)],
  );
  const { rows: pending } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${s.webhook_pending_runs} WHERE integration_id = $1`,
    [integrationId],
  );
  return {
    deliveries,
    runs: new Map(runRows.map((r) => [r.id, r])),
    reads: new Map(reads.map((r) => [`${r.run_id} ${r.source}`, r.started])),
    pendingRows: pending[0]!.n,
  };
}

export async function checkWebhooks(db: Db, input: WebhookCheckInput): Promise<InvariantResult> {
  return judgeWebhooks(await loadWebhookFacts(db, input.integrationId), input);
}

/** The invariant over loaded facts (pure: a test can hand it rows of its own). */
export function judgeWebhooks(f: WebhookFacts, input: WebhookCheckInput): InvariantResult {
  const examples = [
    ...acknowledged(f, input.accepted),
    ...covered(f),
    ...oneRunPerId(f),
    ...coalesced(f, input.debounceMs),
  ];
  if (f.pendingRows > 0) examples.push(`${f.pendingRows} webhook_pending_runs row(s) left at the end`);
  const received = f.deliveries.filter((d) => d.status === 'received');
  const webhookRuns = [...f.runs.values()].filter((r) => r.triggered_by === 'webhook').length;
  const outcomes: Record<string, number> = {};
  for (const d of received) outcomes[d.outcome ?? '-'] = (outcomes[d.outcome ?? '-'] ?? 0) + 1;
  return finding(
    'webhook_deliveries_covered',
    'every acknowledged webhook delivery recorded once and covered by one run',
    {
      checked:
        `${input.summary}; rows: ${received.length} received ` +
        `(${Object.entries(outcomes)
          .map(([k, n]) => `${n} ${k}`)
          .join(', ')}), ${f.deliveries.filter((d) => d.status === 'duplicate').length} duplicate; ` +
        `${webhookRuns} webhook runs`,
      examples,
    },
  );
}

function byId(f: WebhookFacts): Map<string, DeliveryRow[]> {
  const out = new Map<string, DeliveryRow[]>();
  for (const d of f.deliveries) {
    if (d.delivery_id === null) continue;
    const list = out.get(d.delivery_id) ?? [];
    list.push(d);
    out.set(d.delivery_id, list);
  }
  return out;
}

function acknowledged(f: WebhookFacts, accepted: ReadonlyMap<string, number>): string[] {
  const rows = byId(f);
  const out: string[] = [];
  for (const [id, n] of accepted) {
    if (n === 0) continue;
    const mine = rows.get(id) ?? [];
    const received = mine.filter((d) => d.status === 'received').length;
    const recorded = mine.filter((d) => d.status === 'received' || d.status === 'duplicate').length;
    if (received !== 1) out.push(`delivery ${id}: answered 202 ${n} time(s), ${received} received row(s)`);
    else if (recorded < n) out.push(`delivery ${id}: answered 202 ${n} time(s), only ${recorded} row(s)`);
  }
  for (const d of f.deliveries) {
    if (d.status === 'duplicate' && (d.sync_run_id !== null || d.outcome !== null)) {
      out.push(
        `delivery ${d.delivery_id ?? '-'}: a duplicate row names ${d.outcome ?? '-'} run ${d.sync_run_id ?? '-'}`,
      );
    }
  }
  return out;
}

function covered(f: WebhookFacts): string[] {
  const out: string[] = [];
  for (const d of f.deliveries) {
    if (d.status !== 'received' || !ACTING.has(d.outcome ?? '')) continue;
    const when = d.received_at.toISOString();
    const what = `delivery ${d.delivery_id ?? '-'} (${d.outcome ?? '-'}, ${d.source ?? '-'}, received ${when})`;
    const run = d.sync_run_id === null ? undefined : f.runs.get(d.sync_run_id);
    if (!run) {
      out.push(`${what}: no run covers it${d.sync_run_id ? ` (run ${d.sync_run_id} not found)` : ''}`);
      continue;
    }
    if (!COVERING.has(run.status)) {
      out.push(`${what}: its run ${run.id} ended ${run.status}`);
      continue;
    }
    const key = `${run.id} ${(d.source ?? '').toLowerCase()}`;
    if (!f.reads.has(key)) {
      out.push(`${what}: its run ${run.id} planned no unit of ${d.source ?? '-'}`);
      continue;
    }
    const started = f.reads.get(key) ?? null;
    if (started === null && run.status === 'success')
      out.push(`${what}: its run ${run.id} succeeded without reading it`);
    if (started !== null && started.getTime() < d.received_at.getTime()) {
      out.push(`${what}: its run ${run.id} started reading ${d.source ?? '-'} at ${started.toISOString()}, before`);
    }
  }
  return out;
}

function oneRunPerId(f: WebhookFacts): string[] {
  const out: string[] = [];
  for (const [id, rows] of byId(f)) {
    const runs = new Set(rows.map((d) => d.sync_run_id).filter((r): r is string => r !== null));
    if (runs.size > 1) out.push(`delivery ${id}: names ${runs.size} runs (${[...runs].join(', ')})`);
  }
  const named = new Set(f.deliveries.map((d) => d.sync_run_id));
  for (const r of f.runs.values()) {
    if (r.triggered_by === 'webhook' && !named.has(r.id)) out.push(`webhook run ${r.id}: no delivery names it`);
  }
  return out;
}

/** Per source: the runs its deliveries name ≤ its groups (see the module's comment). */
function coalesced(f: WebhookFacts, debounceMs: number): string[] {
  const bySource = new Map<string, DeliveryRow[]>();
  for (const d of f.deliveries) {
    if (d.status !== 'received' || !ACTING.has(d.outcome ?? '') || d.source === null) continue;
    const key = d.source.toLowerCase();
    bySource.set(key, [...(bySource.get(key) ?? []), d]);
  }
  const out: string[] = [];
  for (const [source, list] of bySource) {
    const runs = new Set(list.map((d) => d.sync_run_id).filter((r): r is string => r !== null));
    const dispatches = [...runs]
      .map((id) => f.runs.get(id)?.left_planned?.getTime())
      .filter((t): t is number => t !== undefined);
    let groups = 0;
    let start = Number.NEGATIVE_INFINITY;
    for (const d of list) {
      const at = d.received_at.getTime();
      const split = dispatches.some((t) => t > start - SPLIT_SLACK_MS && t <= at + SPLIT_SLACK_MS);
      if (at - start >= debounceMs || split) {
        groups += 1;
        start = at;
      }
    }
    if (runs.size > groups) {
      out.push(`${source}: its deliveries name ${runs.size} runs, more than its ${groups} debounce group(s)`);
    }
  }
  return out;
}
