/**
 * GET /outbox/stats (the caller's org only), /reconciler/passes (system-wide: admin tokens only),
 * /healthz and /readyz.
 */
import type { FastifyInstance } from 'fastify';
import {
  countOutboxByKindStatus,
  listRecentOutboxErrors,
  listReconcilerPasses,
  summarizePendingOutbox,
} from '../../store/admin.js';
import { principalOf } from '../auth.js';
import { endpoints } from '../contracts/endpoints.js';
import { ApiError } from '../errors.js';
import { mount } from '../mount.js';
import { presentPass } from '../present.js';
import type { RouteDeps } from './deps.js';

const RECENT_ERRORS = 20;
const DEFAULT_PASSES = 20;

/** Resolves 'ok' when `check` settles in time, or the reason it did not. */
async function probe(check: () => Promise<unknown>, timeoutMs: number): Promise<'ok' | 'unreachable' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    return await Promise.race([check().then(() => 'ok' as const), timeout]);
  } catch {
    return 'unreachable';
  } finally {
    clearTimeout(timer);
  }
}

export function operationsRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { ctx } = deps;

  mount(app, endpoints.outboxStats, async ({ request }) => {
    const { orgId } = principalOf(request);
    const now = ctx.clock.now();
    const counts = await countOutboxByKindStatus(ctx.db, orgId);
    const pending = await summarizePendingOutbox(ctx.db, orgId, now);
    const errors = await listRecentOutboxErrors(ctx.db, orgId, RECENT_ERRORS);
    return { counts, ...pending, recent_errors: errors };
  });

  // Passes are system-wide (every org's counters, raw error text): an org's read token may not see them.
  mount(app, endpoints.reconcilerPasses, async ({ query }) => {
    const rows = await listReconcilerPasses(ctx.db, query.limit ?? DEFAULT_PASSES);
    return { items: rows.map(presentPass) };
  });

  mount(app, endpoints.healthz, async () => ({
    status: 'ok',
    uptime_seconds: Math.round((Date.now() - deps.startedAtMs) / 1000),
  }));

  mount(app, endpoints.readyz, async ({ request }) => {
    const [database, broker] = await Promise.all([
      probe(() => ctx.db.query('SELECT 1'), deps.readinessTimeoutMs),
      probe(() => ctx.broker.ping(), deps.readinessTimeoutMs),
    ]);
    if (database === 'ok' && broker === 'ok') return { status: 'ready', checks: { database, broker } };
    const down = [database === 'ok' ? null : 'database', broker === 'ok' ? null : 'broker'].filter(Boolean);
    request.log.warn({ database, broker }, 'not ready');
    throw new ApiError(503, 'not_ready', `not ready: ${down.join(' and ')}`, { checks: { database, broker } });
  });
}
