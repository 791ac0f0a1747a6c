/**
 * webhook_deliveries: each signed delivery as received (never its payload). One `received` row per
 * provider and delivery id; a redelivery is recorded `duplicate`, a signed but unreadable delivery
 * `rejected`. The statuses are spelled once, here; statements use the literals rendered from them.
 */
import type { Tx } from '../db/types.js';

export const WEBHOOK_DELIVERY_STATUSES = ['received', 'duplicate', 'rejected'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** What a received delivery did: armed a run, joined one not yet dispatched, waits for a live run, nothing. */
export const WEBHOOK_OUTCOMES = ['armed', 'coalesced', 'pending', 'ignored'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/** The `received` status as SQL text: the predicate of the unique index the insert infers. */
const RECEIVED = `'${WEBHOOK_DELIVERY_STATUSES[0]}'`;

export interface WebhookDeliveryRow {
  id: string;
  org_id: string;
  integration_id: string;
  provider: string;
  delivery_id: string | null;
  event: string | null;
  action: string | null;
  source: string | null;
  status: WebhookDeliveryStatus;
  outcome: WebhookOutcome | null;
  summary: Record<string, unknown>;
  sync_run_id: string | null;
  received_at: Date;
}

export interface NewDelivery {
  orgId: string;
  integrationId: string;
  provider: string;
  deliveryId: string | null;
  event: string | null;
  action: string | null;
  source: string | null;
  /** A few bounded fields of the payload (never the payload). */
  summary: Record<string, unknown>;
}

/**
 * Records a delivery `received`, unless one of the same provider and delivery id was received before.
 * Locks: the new row (a concurrent insert of the same id waits for this transaction).
 * Returns the new row's id, or null for a redelivery.
 */
export async function insertReceivedDelivery(tx: Tx, d: NewDelivery, now: Date): Promise<string | null> {
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO ${tx.schema.webhook_deliveries}
       (org_id, integration_id, provider, delivery_id, event, action, source, status, summary, received_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, ${RECEIVED}, $8::jsonb, $9)
     ON CONFLICT (provider, delivery_id) WHERE status = ${RECEIVED} DO NOTHING
     RETURNING id`,
    [d.orgId, d.integrationId, d.provider, d.deliveryId, d.event, d.action, d.source, JSON.stringify(d.summary), now],
  );
  return rows[0]?.id ?? null;
}

/** A source's datasets to read once no unit of it is open (webhook_pending_runs). */
export interface RememberedRead {
  sourceId: string;
  datasets: readonly string[];
}

/**
 * Records a delivery `received` with what it did already decided (`outcome`, the run it joined),
 * unless one of the same provider and delivery id was received before; with `remember`, also
 * remembers that read in webhook_pending_runs (the source's datasets merged with what is there),
 * only when the delivery row was inserted. One statement.
 * Locks: the new row, then the source's remembered row. Returns the new row's id, or null for a redelivery.
 */
export async function insertDecidedDelivery(
  tx: Tx,
  d: NewDelivery,
  decided: { outcome: WebhookOutcome; runId: string | null; remember: RememberedRead | null },
  now: Date,
): Promise<string | null> {
  const { rows } = await tx.query<{ id: string }>(
    `WITH delivery AS (
       INSERT INTO ${tx.schema.webhook_deliveries}
         (org_id, integration_id, provider, delivery_id, event, action, source, status, summary, received_at,
          outcome, sync_run_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, ${RECEIVED}, $8::jsonb, $9, $10, $11)
       ON CONFLICT (provider, delivery_id) WHERE status = ${RECEIVED} DO NOTHING
       RETURNING id),
     remembered AS (
       INSERT INTO ${tx.schema.webhook_pending_runs} AS p
         (integration_id, source_id, org_id, datasets, first_at, updated_at)
       SELECT $2, $12::uuid, $1, $13::text[], $9, $9 FROM delivery WHERE $12::uuid IS NOT NULL
       ON CONFLICT (integration_id, source_id) DO UPDATE SET
         datasets = ARRAY(SELECT DISTINCT k FROM unnest(p.datasets || EXCLUDED.datasets) AS k ORDER BY k),
         updated_at = EXCLUDED.updated_at)
     SELECT id FROM delivery`,
    [
      d.orgId,
      d.integrationId,
      d.provider,
      d.deliveryId,
      d.event,
      d.action,
      d.source,
      JSON.stringify(d.summary),
      now,
      decided.outcome,
      decided.runId,
      decided.remember?.sourceId ?? null,
      decided.remember ? [...decided.remember.datasets] : null,
    ],
  );
  return rows[0]?.id ?? null;
}

/** Records a delivery that arms nothing (`duplicate` or `rejected`). Locks nothing but the new row. Returns its id. */
export async function insertInertDelivery(
  tx: Tx,
  d: NewDelivery,
  status: Exclude<WebhookDeliveryStatus, 'received'>,
  now: Date,
): Promise<string> {
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO ${tx.schema.webhook_deliveries}
       (org_id, integration_id, provider, delivery_id, event, action, source, status, summary, received_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10)
     RETURNING id`,
    [
      d.orgId,
      d.integrationId,
      d.provider,
      d.deliveryId,
      d.event,
      d.action,
      d.source,
      status,
      JSON.stringify(d.summary),
      now,
    ],
  );
  return rows[0]!.id;
}

/** What the received delivery `id` did, and the run it armed or joined. Locks that row. Returns whether it exists. */
export async function setDeliveryOutcome(
  tx: Tx,
  id: string,
  outcome: WebhookOutcome,
  runId: string | null,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.webhook_deliveries} SET outcome = $2, sync_run_id = $3 WHERE id = $1`,
    [id, outcome, runId],
  );
  return rowCount > 0;
}

/**
 * The integration's received deliveries of `sources` (their keys, any case) remembered for a run
 * (outcome `pending`) → armed with `runId`. Locks those rows. Returns how many.
 */
export async function armPendingDeliveries(
  tx: Tx,
  integrationId: string,
  runId: string,
  sources: readonly string[],
): Promise<number> {
  const { rowCount } = await tx.query(
    `UPDATE ${tx.schema.webhook_deliveries} SET outcome = $3, sync_run_id = $4
      WHERE integration_id = $1 AND status = ${RECEIVED} AND outcome = $2 AND sync_run_id IS NULL
        AND lower(source) = ANY($5::text[])`,
    [
      integrationId,
      'pending' satisfies WebhookOutcome,
      'armed' satisfies WebhookOutcome,
      runId,
      sources.map((k) => k.toLowerCase()),
    ],
  );
  return rowCount;
}

/**
 * Retention: deletes up to `limit` deliveries received before `cutoff`, oldest first, except those
 * still waiting to arm a run (outcome `pending`, no run yet): they stay until the reconciler arms it.
 * Locks: the deleted rows (rows another transaction holds are skipped, left for a later batch).
 * Returns how many it deleted.
 */
export async function pruneWebhookDeliveries(tx: Tx, cutoff: Date, limit: number): Promise<number> {
  const t = tx.schema.webhook_deliveries;
  const { rowCount } = await tx.query(
    `DELETE FROM ${t} WHERE id IN (
       SELECT id FROM ${t}
        WHERE received_at < $1 AND (outcome IS DISTINCT FROM $3 OR sync_run_id IS NOT NULL)
        ORDER BY received_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED)`,
    [cutoff, limit, 'pending' satisfies WebhookOutcome],
  );
  return rowCount;
}
