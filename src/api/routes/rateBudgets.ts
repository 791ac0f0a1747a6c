/** GET /rate-budgets and /rate-budgets/:key/history: the org's shared rate-limit budgets, as recorded. */
import type { FastifyInstance } from 'fastify';
import { after } from '../../clock.js';
import { parseBudgetKey } from '../../domain/rateBudgetKeys.js';
import { NotFoundError } from '../../errors.js';
import { listBudgetSamples, type BudgetSampleRow } from '../../store/rateBudgetReport.js';
import { readRateBudget } from '../../store/rateBudgets.js';
import { rateBudgetViews } from '../../store/rateBudgetView.js';
import { principalOf } from '../auth.js';
import { endpoints } from '../contracts/endpoints.js';
import { DEFAULT_HISTORY_HOURS } from '../contracts/rateBudgets.js';
import { mount } from '../mount.js';
import type { RouteDeps } from './deps.js';

const HOUR_MS = 3_600_000;

function presentSample(s: BudgetSampleRow) {
  return {
    minute: s.minute,
    remaining: s.remaining,
    limit: s.request_limit,
    reset_at: s.reset_at,
    limited_until: s.limited_until,
    observations: s.observations,
    limit_responses: s.limit_responses,
  };
}

export function rateBudgetRoutes(app: FastifyInstance, { ctx }: RouteDeps): void {
  mount(app, endpoints.listRateBudgets, async ({ query, request }) => {
    const { orgId } = principalOf(request);
    const now = ctx.clock.now();
    const items = await rateBudgetViews(ctx.db, {
      orgId,
      provider: query.provider ?? null,
      now,
      maxWaitMs: ctx.settings.rateLimitMaxWaitMs,
    });
    return { as_of: now, items };
  });

  mount(app, endpoints.rateBudgetHistory, async ({ params, query, request }) => {
    const { orgId } = principalOf(request);
    // Another org's key (or one naming no budget) is as unknown as a malformed one.
    const key = parseBudgetKey(params.key);
    const known = key && (await readRateBudget(ctx.db, { orgId, provider: key.provider, credentialId: key.holder }));
    if (!key || !known) throw new NotFoundError('rate budget', 'of this key');
    const until = ctx.clock.now();
    const since = after(until, -(query.hours ?? DEFAULT_HISTORY_HOURS) * HOUR_MS);
    const samples = await listBudgetSamples(ctx.db, { orgId, provider: key.provider, credentialId: key.holder, since });
    return {
      key: params.key,
      provider: key.provider,
      holder: key.holder,
      since,
      until,
      samples: samples.map(presentSample),
    };
  });
}
