/**
 * Contract of an integration's freshness report: per enabled source × work-item dataset, how far
 * its data is read, its state (src/domain/freshness.ts) and the schedules the allowed lag follows.
 */
import { z } from 'zod';
import { FRESHNESS_STATES } from '../../domain/freshness.js';
import { SCHEDULE_MODES } from '../../planning/schedules.js';
import { IdParams, NoQuery, TimeOut } from './common.js';
import { AUTH_ERRORS, endpoint, V1 } from './endpoint.js';

const Id = z.string().meta({ format: 'uuid' });
const Count = z.number().int().min(0);
const Ms = z.number().int().min(0);

export const FreshnessItem = z
  .strictObject({
    source_id: Id,
    source_key: z.string().meta({ description: "the source's external key (repository, team, project)" }),
    source_name: z.string(),
    dataset_key: z.string(),
    state: z.enum(FRESHNESS_STATES).meta({
      description:
        'failing (the latest finished unit failed) > deferred_by_budget (an open unit waits for a rate limit) > ' +
        'never_synced > catching_up (lag over max_lag_ms) > fresh: the first that holds',
    }),
    watermark_at: TimeOut.nullable().meta({ description: 'the data is read up to here (null: no watermark yet)' }),
    lag_ms: Ms.nullable().meta({
      description: "as_of − the watermark (without one, the end of the last successful unit's window)",
    }),
    last_success_at: TimeOut.nullable().meta({ description: 'when the newest successful unit ended' }),
    last_success_run_id: Id.nullable(),
    last_error_category: z.string().nullable().meta({ description: 'the latest finished unit failed: its category' }),
    last_error_run_id: Id.nullable(),
    last_error_at: TimeOut.nullable(),
    deferred_until: TimeOut.nullable().meta({ description: 'deferred_by_budget: when the deferred unit is due' }),
    in_progress_run_id: Id.nullable().meta({ description: 'the run of the newest unfinished unit, if any' }),
    catch_up_eta: TimeOut.nullable().meta({
      description:
        'catching_up: as_of + lag ÷ (r − 1), r = Σ window ÷ Σ duration of the recent successful units ' +
        '(null when r is unknown or ≤ 1)',
    }),
  })
  .meta({ id: 'FreshnessItem' });

export const FreshnessSchedule = z
  .strictObject({
    id: Id,
    cron: z.string(),
    timezone: z.string(),
    mode: z.enum(SCHEDULE_MODES),
    enabled: z.boolean(),
    next_run_at: TimeOut.nullable(),
    interval_ms: Ms.nullable().meta({ description: 'the longest gap between its next slots' }),
  })
  .meta({ id: 'FreshnessSchedule' });

export const IntegrationFreshness = z
  .strictObject({
    integration_id: Id,
    name: z.string(),
    provider: z.string(),
    as_of: TimeOut,
    max_lag_ms: Ms.meta({ description: 'the lag a fresh row may have' }),
    max_lag_basis: z.enum(['schedule', 'setting']).meta({
      description:
        'schedule: twice the interval of the tightest enabled incremental or full_resync schedule; ' +
        'setting: SYNC_FRESHNESS_MAX_LAG_SECONDS (no such schedule)',
    }),
    schedules: z.array(FreshnessSchedule),
    counts: z.strictObject(
      Object.fromEntries(FRESHNESS_STATES.map((s) => [s, Count])) as Record<
        (typeof FRESHNESS_STATES)[number],
        typeof Count
      >,
    ),
    items: z.array(FreshnessItem).meta({ description: 'worst first: by state, then the larger lag' }),
  })
  .meta({ id: 'IntegrationFreshness' });

export const freshnessEndpoints = {
  getIntegrationFreshness: endpoint({
    operationId: 'getIntegrationFreshness',
    method: 'GET',
    path: `${V1}/integrations/:id/freshness`,
    summary: 'How fresh each source × dataset of the integration is',
    description:
      'Per enabled source and enabled work-item dataset: the watermark, the lag behind it, the last successful ' +
      'sync (time, run), the state (fresh, catching_up with an estimate, deferred_by_budget with its time, ' +
      "failing with the last error category, never_synced) and the integration's schedules.",
    tags: ['integrations'],
    scope: 'read',
    params: IdParams,
    query: NoQuery,
    success: { status: 200, description: 'the report', schema: IntegrationFreshness },
    errors: [400, ...AUTH_ERRORS, 404],
  }),
};
