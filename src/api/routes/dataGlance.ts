/** GET /integrations/:id/data: the integration's normalized rows at a glance. */
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/types.js';
import { NotFoundError } from '../../errors.js';
import {
  countSurfaceRows,
  newestPullRequests,
  newestWorkItems,
  type NewestItem,
} from '../../sinks/normalized/glance.js';
import { getIntegration } from '../../store/integrations.js';
import { principalOf } from '../auth.js';
import { NEWEST_ITEMS } from '../contracts/dataGlance.js';
import { endpoints } from '../contracts/endpoints.js';
import { mount } from '../mount.js';
import type { RouteDeps } from './deps.js';

/** A provider's link as stored, when it is an http(s) URL; anything else is not a link to show. */
function linkOf(url: string | null): string | null {
  if (url === null) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : null;
  } catch {
    return null;
  }
}

function present(items: NewestItem[]): NewestItem[] {
  return items.map((i) => ({ ...i, url: linkOf(i.url) }));
}

async function readIntegrationData(db: Db, orgId: string, id: string) {
  const row = await getIntegration(db, id, { orgId });
  if (!row) throw new NotFoundError('integration', id);
  return {
    integration_id: row.id,
    name: row.name,
    provider: row.provider,
    surfaces: await countSurfaceRows(db, orgId, row.id),
    newest_work_items: present(await newestWorkItems(db, orgId, row.id, NEWEST_ITEMS)),
    newest_pull_requests: present(await newestPullRequests(db, orgId, row.id, NEWEST_ITEMS)),
  };
}

export function dataGlanceRoutes(app: FastifyInstance, { ctx }: RouteDeps): void {
  mount(app, endpoints.getIntegrationData, async ({ params, request }) =>
    readIntegrationData(ctx.db, principalOf(request).orgId, params.id),
  );
}
