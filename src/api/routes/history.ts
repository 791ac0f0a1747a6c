/** GET /job-runs: the admin history surface, newest first, with filters and cursor pagination. */
import type { FastifyInstance } from 'fastify';
import { listJobRunViews } from '../../store/admin.js';
import { principalOf } from '../auth.js';
import { endpoints } from '../contracts/endpoints.js';
import { mount } from '../mount.js';
import { decodeTimeCursor, encodeTimeCursor } from '../cursors.js';
import { presentJobRunItem } from '../present.js';
import type { RouteDeps } from './deps.js';

const DEFAULT_LIMIT = 50;

export function historyRoutes(app: FastifyInstance, { ctx }: RouteDeps): void {
  mount(app, endpoints.listJobRuns, async ({ query, request }) => {
    const limit = query.limit ?? DEFAULT_LIMIT;
    const rows = await listJobRunViews(ctx.db, {
      orgId: principalOf(request).orgId,
      status: query.status,
      integrationId: query.integration_id,
      triggeredBy: query.triggered_by,
      createdAfter: query.created_after,
      createdBefore: query.created_before,
      after: query.cursor === undefined ? undefined : decodeTimeCursor(query.cursor),
      limit: limit + 1,
    });
    const items = rows.slice(0, limit);
    const last = items.at(-1);
    const next = rows.length > limit && last ? encodeTimeCursor({ createdUs: last.cursor_us, id: last.id }) : null;
    return { items: items.map(presentJobRunItem), next_cursor: next };
  });
}
