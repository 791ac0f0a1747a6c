/**
 * Read queries over an integration's webhook deliveries: a newest-first page and a summary over a
 * window (counts by status and outcome, runs armed, time from delivery to data). Every statement
 * reads through `org_id = $1`, so one org never sees another's deliveries; none locks anything.
 * Statuses and outcomes are rendered from the constants of webhookDeliveries.ts, never spelled here.
 */
import type { Tx } from '../db/types.js';
import type { TimeCursor } from './admin.js';
import { sqlLit } from './sql.js';
import {
  WEBHOOK_DELIVERY_STATUSES,
  WEBHOOK_OUTCOMES,
  type WebhookDeliveryRow,
  type WebhookDeliveryStatus,
  type WebhookOutcome,
} from './webhookDeliveries.js';

/** A constant of the statement as a SQL string literal (a status, an outcome, a key). */
function lit(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

const RECEIVED = lit(WEBHOOK_DELIVERY_STATUSES[0] satisfies WebhookDeliveryStatus);
/** The run status whose end counts as the delivery's data being written. */
const RUN_SUCCEEDED = sqlLit('success');

/** A jsonb object of one count per member of `values`: the rows (matching `where`) whose `column` is it. */
function countsBy(column: string, values: readonly string[], where = 'true'): string {
  const pairs = values.map((v) => `${lit(v)}, count(*) FILTER (WHERE ${where} AND ${column} = ${lit(v)})::int`);
  return `jsonb_build_object(${pairs.join(', ')})`;
}

/** The counts keyed in the constants' order (jsonb keeps its own key order). */
function inOrder<K extends string>(keys: readonly K[], counts: Record<K, number>): Record<K, number> {
  return Object.fromEntries(keys.map((k) => [k, counts[k] ?? 0])) as Record<K, number>;
}

export interface DeliveryListFilter {
  orgId: string;
  integrationId: string;
  status?: WebhookDeliveryStatus;
  /** The last row of the previous page: its received_at (µs) and id. */
  after?: TimeCursor;
  limit: number;
}

/** A delivery as listed: every column but the org, with received_at in µs for the next page's cursor. */
export interface DeliveryListRow extends Omit<WebhookDeliveryRow, 'org_id'> {
  cursor_us: string;
}

/**
 * The integration's deliveries (of one status, when given), newest first, after the cursor.
 * Locks nothing. Returns at most `limit` rows (reached through the (integration_id, received_at) index).
 */
export async function listWebhookDeliveries(tx: Tx, f: DeliveryListFilter): Promise<DeliveryListRow[]> {
  const { rows } = await tx.query<DeliveryListRow>(
    `SELECT id, integration_id, provider, delivery_id, event, action, source, status, outcome, summary,
            sync_run_id, received_at, (extract(epoch FROM received_at) * 1000000)::bigint::text AS cursor_us
       FROM ${tx.schema.webhook_deliveries}
      WHERE org_id = $1 AND integration_id = $2
        AND ($3::text IS NULL OR status = $3)
        AND ($4::bigint IS NULL
             OR (received_at, id) < ('epoch'::timestamptz + $4::bigint * interval '1 microsecond', $5::uuid))
      ORDER BY received_at DESC, id DESC
      LIMIT $6`,
    [f.orgId, f.integrationId, f.status ?? null, f.after?.createdUs ?? null, f.after?.id ?? null, f.limit],
  );
  return rows;
}

/** Time from a delivery to its data, in ms, over the received deliveries whose run succeeded. */
export interface DeliveryToData {
  /** How many deliveries were measured. */
  samples: number;
  /** Nearest-rank percentiles (a measured value each); null without samples. */
  p50_ms: number | null;
  p95_ms: number | null;
  max_ms: number | null;
}

export interface DeliverySummary {
  statuses: Record<WebhookDeliveryStatus, number>;
  /** Of the received deliveries. */
  outcomes: Record<WebhookOutcome, number>;
  /** Distinct runs the window's received deliveries armed or joined. */
  runs_armed: number;
  delivery_to_data: DeliveryToData;
}

/**
 * The summary of the integration's deliveries received in [since, until]: counts by status, received
 * ones by outcome, distinct runs, and for received deliveries whose run ended `success`, the run's
 * completed_at − received_at (never below 0: the two times come from different processes' clocks).
 * Locks nothing. Returns one row (zero counts, null times for a window without deliveries).
 */
export async function summarizeWebhookDeliveries(
  tx: Tx,
  orgId: string,
  integrationId: string,
  since: Date,
  until: Date,
): Promise<DeliverySummary> {
  const s = tx.schema;
  const { rows } = await tx.query<{
    statuses: Record<WebhookDeliveryStatus, number>;
    outcomes: Record<WebhookOutcome, number>;
    runs_armed: number;
    samples: number;
    p50_ms: string | null;
    p95_ms: string | null;
    max_ms: string | null;
  }>(
    `WITH d AS (
       SELECT d.status, d.outcome, d.sync_run_id,
              CASE WHEN d.status = ${RECEIVED} AND r.status = ${RUN_SUCCEEDED} AND r.completed_at IS NOT NULL
                   THEN greatest(0, round(extract(epoch FROM r.completed_at - d.received_at) * 1000))::bigint
              END AS to_data_ms
         FROM ${s.webhook_deliveries} d
         LEFT JOIN ${s.sync_runs} r ON r.id = d.sync_run_id AND r.org_id = d.org_id
        WHERE d.org_id = $1 AND d.integration_id = $2 AND d.received_at >= $3 AND d.received_at <= $4
     )
     SELECT ${countsBy('status', WEBHOOK_DELIVERY_STATUSES)} AS statuses,
            ${countsBy('outcome', WEBHOOK_OUTCOMES, `status = ${RECEIVED}`)} AS outcomes,
            count(DISTINCT sync_run_id) FILTER (WHERE status = ${RECEIVED})::int AS runs_armed,
            count(to_data_ms)::int AS samples,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY to_data_ms) AS p50_ms,
            percentile_disc(0.95) WITHIN GROUP (ORDER BY to_data_ms) AS p95_ms,
            max(to_data_ms) AS max_ms
       FROM d`,
    [orgId, integrationId, since, until],
  );
  const r = rows[0]!;
  const ms = (v: string | number | null) => (v === null ? null : Number(v));
  return {
    statuses: inOrder(WEBHOOK_DELIVERY_STATUSES, r.statuses),
    outcomes: inOrder(WEBHOOK_OUTCOMES, r.outcomes),
    runs_armed: r.runs_armed,
    delivery_to_data: { samples: r.samples, p50_ms: ms(r.p50_ms), p95_ms: ms(r.p95_ms), max_ms: ms(r.max_ms) },
  };
}
