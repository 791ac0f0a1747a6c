/** GET /integrations/:id/freshness: how fresh each source × dataset of an integration is. */
import type { FastifyInstance } from 'fastify';
import type { EngineContext } from '../../context.js';
import type { Db } from '../../db/types.js';
import {
  allowedLagMs,
  countStates,
  freshnessItem,
  longestGapMs,
  sortFreshness,
  type FreshnessItem,
  type FreshnessState,
} from '../../domain/freshness.js';
import { WATERMARK_MODES } from '../../domain/statuses.js';
import { NotFoundError } from '../../errors.js';
import { nextSlot } from '../../planning/scheduleCron.js';
import { readFreshnessFacts } from '../../store/freshness.js';
import { getIntegration, type IntegrationRow } from '../../store/integrations.js';
import { listSchedules, type ScheduleRow } from '../../store/schedules.js';
import { principalOf } from '../auth.js';
import { endpoints } from '../contracts/endpoints.js';
import { mount } from '../mount.js';
import type { RouteDeps } from './deps.js';

/** Slots of a schedule its interval is measured over (a weekday cron's weekend gap included). */
const INTERVAL_SLOTS = 8;

export interface FreshnessSchedule {
  id: string;
  cron: string;
  timezone: string;
  mode: ScheduleRow['mode'];
  enabled: boolean;
  next_run_at: Date | null;
  interval_ms: number | null;
}

/** The report of one integration, as the API answers it (and `syncrelay status --json` prints it). */
export interface IntegrationFreshness {
  integration_id: string;
  name: string;
  provider: string;
  as_of: Date;
  max_lag_ms: number;
  max_lag_basis: 'schedule' | 'setting';
  schedules: FreshnessSchedule[];
  counts: Record<FreshnessState, number>;
  items: FreshnessItem[];
}

/** The longest gap between a schedule's next {@link INTERVAL_SLOTS} slots after `now`. */
function intervalOf(s: ScheduleRow, now: Date): number | null {
  const slots: Date[] = [];
  let at: Date | null = now;
  while (slots.length < INTERVAL_SLOTS && (at = nextSlot(s.cron, s.timezone, at)) !== null) slots.push(at);
  return longestGapMs(slots);
}

/** The provider's work-item datasets (null when the provider is not registered here: every dataset). */
function workItemDatasets(ctx: Pick<EngineContext, 'registry'>, row: IntegrationRow): string[] | null {
  if (!ctx.registry.has(row.provider)) return null;
  const provider = ctx.registry.get(row.provider);
  const info = { id: row.id, orgId: row.org_id, provider: row.provider, name: row.name, config: row.config };
  const specs = provider.datasetsFor?.(info) ?? provider.datasets;
  return specs.filter((s) => s.tier === 'work_item').map((s) => s.key);
}

/**
 * The freshness report of `row` at the clock's now: its facts (src/store/freshness.ts), its
 * schedules and the allowed lag (twice the tightest enabled watermark-moving schedule's interval,
 * else SYNC_FRESHNESS_MAX_LAG_SECONDS), each row's state (src/domain/freshness.ts), worst first.
 */
export async function readIntegrationFreshness(
  ctx: Pick<EngineContext, 'db' | 'clock' | 'registry' | 'settings'>,
  row: IntegrationRow,
): Promise<IntegrationFreshness> {
  const now = ctx.clock.now();
  const datasetKeys = workItemDatasets(ctx, row);
  const facts = await readFreshnessFacts(ctx.db, { orgId: row.org_id, integrationId: row.id, datasetKeys });
  const schedules = (await listSchedules(ctx.db, row.org_id))
    .filter((s) => s.integration_id === row.id)
    .map((s) => ({
      id: s.id,
      cron: s.cron,
      timezone: s.timezone,
      mode: s.mode,
      enabled: s.enabled,
      next_run_at: s.next_run_at,
      interval_ms: intervalOf(s, now),
    }));
  const moving = schedules
    .filter((s) => s.enabled && s.interval_ms !== null && WATERMARK_MODES.includes(s.mode))
    .map((s) => s.interval_ms!);
  const interval = moving.length > 0 ? Math.min(...moving) : null;
  const maxLag = allowedLagMs(interval, ctx.settings.freshnessMaxLagMs);
  const items = sortFreshness(facts.map((f) => freshnessItem(f, now, maxLag)));
  return {
    integration_id: row.id,
    name: row.name,
    provider: row.provider,
    as_of: now,
    max_lag_ms: maxLag,
    max_lag_basis: interval === null ? 'setting' : 'schedule',
    schedules,
    counts: countStates(items),
    items,
  };
}

/** The org's integration `id`; another org's is as unknown as a missing one (404). */
async function requireIntegration(db: Db, orgId: string, id: string): Promise<IntegrationRow> {
  const row = await getIntegration(db, id, { orgId });
  if (!row) throw new NotFoundError('integration', id);
  return row;
}

export function freshnessRoutes(app: FastifyInstance, { ctx }: RouteDeps): void {
  mount(app, endpoints.getIntegrationFreshness, async ({ params, request }) => {
    const { orgId } = principalOf(request);
    return readIntegrationFreshness(ctx, await requireIntegration(ctx.db, orgId, params.id));
  });
}
