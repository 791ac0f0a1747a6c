/**
 * Contracts of the operator's view of the shared rate-limit budgets: the org's budgets per credential
 * (figures, state, limit responses, deferrals, units waiting), and one budget's samples over time.
 * Read tokens suffice; another org's budgets are never listed, and its keys answer 404.
 */
import { z } from 'zod';
import { TimeOut } from './common.js';
import { AUTH_ERRORS, endpoint, NoParams, V1 } from './endpoint.js';

const Id = z.string().meta({ format: 'uuid' });
const Count = z.number().int().min(0);
const Int = z.number().int().nullable();

/** Longest history window, in hours (the samples' retention: 7 days). */
export const MAX_HISTORY_HOURS = 168;
/** The history window when `hours` is not given. */
export const DEFAULT_HISTORY_HOURS = 24;

export const RateBudgetQuery = z.strictObject({
  provider: z
    .string()
    .regex(/^[a-z][a-z0-9_-]{0,39}$/, 'must be a provider name (lower-case letters, digits, - and _)')
    .optional()
    .meta({ description: "only this provider's budgets (`linear` includes `linear:complexity`)", example: 'github' }),
});

export const RateBudgetHistoryQuery = z.strictObject({
  hours: z
    .string()
    .regex(/^[0-9]{1,3}$/, `must be an integer from 1 to ${MAX_HISTORY_HOURS}`)
    .transform(Number)
    .refine((n) => n >= 1 && n <= MAX_HISTORY_HOURS, `must be an integer from 1 to ${MAX_HISTORY_HOURS}`)
    .optional()
    .meta({ description: `the window: the last this many hours, 1–${MAX_HISTORY_HOURS} (default 24)`, example: '24' }),
});

export const RateBudgetKeyParams = z.strictObject({
  key: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,700}$/, 'must be a budget key as listed')
    .meta({ description: "the budget's `key` from GET /rate-budgets" }),
});

const Windows = z.strictObject({ last_hour: Count, last_day: Count });

const WaitingUnit = z.strictObject({
  id: Id,
  integration_id: Id,
  sync_run_id: Id,
  dataset_key: z.string(),
  rate_limit_deferrals: Count,
  available_at: TimeOut.nullable().meta({ description: 'when the unit is due again' }),
});

export const RateBudget = z
  .strictObject({
    key: z.string().meta({ description: 'opaque key of this budget (for its history)' }),
    provider: z.string().meta({ description: 'the budget: a provider, or one of its budgets (linear:complexity)' }),
    credential: z.strictObject({
      holder: z.string().meta({
        description: "who holds the budget: a credential's id and version, or a GitHub App installation (no secret)",
      }),
      kind: z.enum(['token', 'app_installation', 'other']),
      label: z.string(),
      integrations: z.array(z.strictObject({ id: Id, name: z.string() })).meta({
        description: 'the integrations whose credential holds this budget',
      }),
    }),
    state: z.enum(['limited', 'exhausted', 'ok', 'unknown']).meta({
      description:
        'limited: a limit response lifts at limited_until; exhausted: nothing remains before reset_at; ' +
        'unknown: no remaining count was reported',
    }),
    remaining: Int,
    limit: Int,
    reset_at: TimeOut.nullable(),
    limited_until: TimeOut.nullable().meta({ description: "a limit response's lift time, until a later response" }),
    observed_at: TimeOut.meta({ description: 'the latest response recorded' }),
    limit_responses: Windows.meta({ description: 'recorded observations that carried a limit response' }),
    deferrals: Windows.meta({
      description: 'rate-limit deferrals of the integrations\u2019 units first limited in the window',
    }),
    waiting: z.strictObject({
      units: Count.meta({ description: 'units deferred by a rate limit, waiting now' }),
      next_due_at: TimeOut.nullable(),
      shown: z.array(WaitingUnit).meta({ description: 'the soonest due of them (at most 20)' }),
    }),
  })
  .meta({ id: 'RateBudget' });

export const RateBudgetList = z
  .strictObject({ as_of: TimeOut, items: z.array(RateBudget) })
  .meta({ id: 'RateBudgetList' });

export const RateBudgetSample = z
  .strictObject({
    minute: TimeOut,
    remaining: Int,
    limit: Int,
    reset_at: TimeOut.nullable(),
    limited_until: TimeOut.nullable(),
    observations: Count,
    limit_responses: Count,
  })
  .meta({ id: 'RateBudgetSample' });

export const RateBudgetHistory = z
  .strictObject({
    key: z.string(),
    provider: z.string(),
    holder: z.string(),
    since: TimeOut,
    until: TimeOut,
    samples: z.array(RateBudgetSample).meta({
      description: 'one per minute with recorded observations, oldest first: the budget as recorded then',
    }),
  })
  .meta({ id: 'RateBudgetHistory' });

export const rateBudgetEndpoints = {
  listRateBudgets: endpoint({
    operationId: 'listRateBudgets',
    method: 'GET',
    path: `${V1}/rate-budgets`,
    summary: "The org's shared rate-limit budgets, per credential",
    description:
      'Each budget of a (provider, credential or GitHub App installation) as recorded: remaining of limit ' +
      'until reset, a limit response\u2019s lift time, its state, the limit responses sampled and the ' +
      'rate-limit deferrals of its units over the last hour and day, and the units waiting on it now. ' +
      'Never a secret.',
    tags: ['operations'],
    scope: 'read',
    params: NoParams,
    query: RateBudgetQuery,
    success: { status: 200, description: 'the budgets', schema: RateBudgetList },
    errors: [400, ...AUTH_ERRORS],
  }),
  rateBudgetHistory: endpoint({
    operationId: 'rateBudgetHistory',
    method: 'GET',
    path: `${V1}/rate-budgets/:key/history`,
    summary: "One budget's samples over the last hours",
    description:
      'The budget as recorded, one sample per minute with observations, over the last `hours` (default 24; ' +
      'samples are kept 7 days).',
    tags: ['operations'],
    scope: 'read',
    params: RateBudgetKeyParams,
    query: RateBudgetHistoryQuery,
    success: { status: 200, description: 'the samples', schema: RateBudgetHistory },
    errors: [400, ...AUTH_ERRORS, 404],
  }),
} as const;
