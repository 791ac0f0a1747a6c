/**
 * Contracts of the webhook-delivery reports of an integration: a newest-first page of its deliveries,
 * and a summary over a window (counts, runs armed, time from delivery to data). Read tokens suffice.
 */
import { z } from 'zod';
import {
  WEBHOOK_DELIVERY_STATUSES,
  WEBHOOK_OUTCOMES,
  type WebhookDeliveryStatus,
  type WebhookOutcome,
} from '../../store/webhookDeliveries.js';
import { CursorText, IdParams, Limit, page, TimeOut } from './common.js';
import { AUTH_ERRORS, endpoint, V1 } from './endpoint.js';

const Id = z.string().meta({ format: 'uuid' });
const Count = z.number().int().min(0);
const Ms = z.number().int().min(0).nullable();

/** Longest summary window, in hours (30 days). */
export const MAX_SUMMARY_HOURS = 720;
/** The summary window when `hours` is not given. */
export const DEFAULT_SUMMARY_HOURS = 24;

/** One count per member of `keys`, in their order. */
function counts<K extends string>(keys: readonly K[]) {
  return z.strictObject(Object.fromEntries(keys.map((k) => [k, Count])) as Record<K, typeof Count>);
}

export const WebhookDeliveryQuery = z.strictObject({
  status: z.enum(WEBHOOK_DELIVERY_STATUSES).optional().meta({ description: 'only deliveries of this status' }),
  cursor: CursorText.optional(),
  limit: Limit.optional(),
});

export const WebhookDeliverySummaryQuery = z.strictObject({
  hours: z
    .string()
    .regex(/^[0-9]{1,3}$/, `must be an integer from 1 to ${MAX_SUMMARY_HOURS}`)
    .transform(Number)
    .refine((n) => n >= 1 && n <= MAX_SUMMARY_HOURS, `must be an integer from 1 to ${MAX_SUMMARY_HOURS}`)
    .optional()
    .meta({ description: `the window: the last this many hours, 1–${MAX_SUMMARY_HOURS} (default 24)`, example: '24' }),
});

export const WebhookDelivery = z
  .strictObject({
    id: Id,
    integration_id: Id,
    provider: z.string(),
    delivery_id: z.string().nullable().meta({ description: "the provider's delivery id (null when unreadable)" }),
    event: z.string().nullable(),
    action: z.string().nullable(),
    source: z.string().nullable().meta({ description: 'the source (e.g. repository) the delivery named' }),
    status: z.enum(WEBHOOK_DELIVERY_STATUSES),
    outcome: z.enum(WEBHOOK_OUTCOMES).nullable().meta({ description: 'what a received delivery did; else null' }),
    summary: z.record(z.string(), z.unknown()).meta({ description: 'a few bounded fields (never the payload)' }),
    sync_run_id: Id.nullable().meta({ description: 'the run it armed or joined' }),
    received_at: TimeOut,
  })
  .meta({ id: 'WebhookDelivery' });

export const WebhookDeliveryPage = page(WebhookDelivery).meta({ id: 'WebhookDeliveryPage' });

export const WebhookDeliverySummary = z
  .strictObject({
    integration_id: Id,
    since: TimeOut.meta({ description: 'window start (inclusive)' }),
    until: TimeOut.meta({ description: 'window end (inclusive): the time of the answer' }),
    statuses: counts<WebhookDeliveryStatus>(WEBHOOK_DELIVERY_STATUSES).meta({
      description: 'deliveries received in the window, by status',
    }),
    outcomes: counts<WebhookOutcome>(WEBHOOK_OUTCOMES).meta({
      description: 'received deliveries by what they did',
    }),
    runs_armed: Count.meta({ description: 'distinct runs the received deliveries armed or joined' }),
    delivery_to_data: z
      .strictObject({
        samples: Count.meta({ description: 'received deliveries whose run ended success' }),
        p50_ms: Ms,
        p95_ms: Ms,
        max_ms: Ms,
      })
      .meta({
        description:
          "the run's completed_at − the delivery's received_at, in ms, over received deliveries whose run " +
          'ended success (nearest-rank percentiles; null without samples)',
      }),
  })
  .meta({ id: 'WebhookDeliverySummary' });

export const webhookDeliveryEndpoints = {
  listWebhookDeliveries: endpoint({
    operationId: 'listWebhookDeliveries',
    method: 'GET',
    path: `${V1}/integrations/:id/webhook-deliveries`,
    summary: "The integration's webhook deliveries, newest first",
    description:
      'Every signed delivery as recorded (received, duplicate or rejected), what it did and the run it armed ' +
      'or joined; never its payload. Deliveries older than SYNC_WEBHOOK_DELIVERY_RETENTION_HOURS are pruned.',
    tags: ['webhooks'],
    scope: 'read',
    params: IdParams,
    query: WebhookDeliveryQuery,
    success: { status: 200, description: 'one page', schema: WebhookDeliveryPage },
    errors: [400, ...AUTH_ERRORS, 404],
  }),
  summarizeWebhookDeliveries: endpoint({
    operationId: 'summarizeWebhookDeliveries',
    method: 'GET',
    path: `${V1}/integrations/:id/webhook-deliveries/summary`,
    summary: "Counts of the integration's webhook deliveries and their time to data, over the last hours",
    description:
      'Over the deliveries received in the last `hours` (default 24): counts by status, received ones by ' +
      'outcome, distinct runs they armed or joined, and the time from a delivery to its data (its run ended ' +
      'success: completed_at − received_at) as p50, p95 and max in ms.',
    tags: ['webhooks'],
    scope: 'read',
    params: IdParams,
    query: WebhookDeliverySummaryQuery,
    success: { status: 200, description: 'the summary', schema: WebhookDeliverySummary },
    errors: [400, ...AUTH_ERRORS, 404],
  }),
} as const;
