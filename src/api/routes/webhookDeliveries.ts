/** GET /integrations/:id/webhook-deliveries and …/summary: an integration's deliveries, as recorded. */
import type { FastifyInstance } from 'fastify';
import { after } from '../../clock.js';
import { NotFoundError } from '../../errors.js';
import { getIntegration } from '../../store/integrations.js';
import {
  listWebhookDeliveries,
  summarizeWebhookDeliveries,
  type DeliveryListRow,
} from '../../store/webhookDeliveryReports.js';
import type { Db } from '../../db/types.js';
import { principalOf } from '../auth.js';
import { DEFAULT_SUMMARY_HOURS } from '../contracts/webhookDeliveries.js';
import { endpoints } from '../contracts/endpoints.js';
import { decodeTimeCursor, encodeTimeCursor } from '../cursors.js';
import { mount } from '../mount.js';
import type { RouteDeps } from './deps.js';

const DEFAULT_LIMIT = 50;
const HOUR_MS = 3_600_000;

/** The integration must be the org's: another org's is as unknown as a missing one (404). */
async function requireIntegration(db: Db, orgId: string, id: string): Promise<void> {
  if (!(await getIntegration(db, id, { orgId }))) throw new NotFoundError('integration', id);
}

/** A delivery as answered: its recorded fields, without the org or the page position. */
function presentDelivery(d: DeliveryListRow) {
  return {
    id: d.id,
    integration_id: d.integration_id,
    provider: d.provider,
    delivery_id: d.delivery_id,
    event: d.event,
    action: d.action,
    source: d.source,
    status: d.status,
    outcome: d.outcome,
    summary: d.summary,
    sync_run_id: d.sync_run_id,
    received_at: d.received_at,
  };
}

export function webhookDeliveryRoutes(app: FastifyInstance, { ctx }: RouteDeps): void {
  mount(app, endpoints.listWebhookDeliveries, async ({ params, query, request }) => {
    const { orgId } = principalOf(request);
    const cursor = query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor);
    await requireIntegration(ctx.db, orgId, params.id);
    const limit = query.limit ?? DEFAULT_LIMIT;
    const rows = await listWebhookDeliveries(ctx.db, {
      orgId,
      integrationId: params.id,
      status: query.status,
      after: cursor,
      limit: limit + 1,
    });
    const items = rows.slice(0, limit);
    const last = items.at(-1);
    const next = rows.length > limit && last ? encodeTimeCursor({ createdUs: last.cursor_us, id: last.id }) : null;
    return { items: items.map(presentDelivery), next_cursor: next };
  });

  mount(app, endpoints.summarizeWebhookDeliveries, async ({ params, query, request }) => {
    const { orgId } = principalOf(request);
    await requireIntegration(ctx.db, orgId, params.id);
    const until = ctx.clock.now();
    const since = after(until, -(query.hours ?? DEFAULT_SUMMARY_HOURS) * HOUR_MS);
    const summary = await summarizeWebhookDeliveries(ctx.db, orgId, params.id, since, until);
    return { integration_id: params.id, since, until, ...summary };
  });
}
