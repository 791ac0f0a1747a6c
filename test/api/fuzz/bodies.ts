/**
 * Request bodies per endpoint of the contract table: valid ones (so the fuzz reaches the success
 * paths and builds up ids) and their near misses.
 */
import fc from 'fast-check';
import { idOf, recent, type StateValue } from './state.js';
import { anyJson, anyText, mutated, nastyText, timeLike, wrongValue } from './values.js';

const DATASETS = [
  'teams',
  'members',
  'projects',
  'work-items',
  'work-item-comments',
  'work-item-labels',
  'work-item-history',
];
/** A credential: opaque text, bounded, without control characters. */
const validCredential = fc.record({
  credential: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_]{1,60}$/), fc.constant(`ghp_${'x'.repeat(36)}`)),
});

const credential = mutated(validCredential, {
  credential: fc.oneof(
    nastyText,
    fc.constant('x'.repeat(8193)),
    fc.constantFrom('', 'a\u0000b', 'tab\there'),
    wrongValue,
  ),
});

/** What most generated integrations enable (triggers name them). */
const ENABLED = ['teams', 'work-items'];

const datasetList = fc.oneof(
  fc.subarray(DATASETS, { minLength: 0 }),
  fc.array(fc.oneof(fc.constantFrom(...DATASETS), anyText(12)), { maxLength: 5 }),
  fc.constant(Array(150).fill('teams')),
  wrongValue,
);

const validIntegration = fc.record({
  provider: fc.constant('synthetic'),
  name: fc.oneof(
    fc.string({ minLength: 1, maxLength: 30 }).filter((n) => n.trim() !== ''),
    fc.constant('x'.repeat(200)),
  ),
  sources: fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,11}$/), { maxLength: 3 }),
  datasets: fc.oneof(fc.constant(ENABLED), fc.subarray(DATASETS, { minLength: 1, maxLength: 3 })),
  config: fc.record(
    { itemsPerDay: fc.integer({ min: 0, max: 5 }), seed: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) },
    { requiredKeys: [] },
  ),
});

const integration = mutated(validIntegration, {
  provider: fc.oneof(fc.constantFrom('linear', 'Synthetic', '', 'synthetic '), anyText(10)),
  name: fc.oneof(nastyText, fc.constant('x'.repeat(201)), anyText()),
  sources: fc.oneof(
    fc.constantFrom(['a', 'a'], [''], ['\u0000'], Array(501).fill('s')),
    fc.array(anyText(10), { maxLength: 4 }),
  ),
  datasets: datasetList,
  config: fc.oneof(
    fc.record({ itemsPerDay: fc.oneof(fc.integer({ min: -2, max: 2000 }), anyJson), seed: anyJson }),
    fc.record({
      failRate: fc.double(),
      hangMs: fc.integer(),
      impersonate: fc.oneof(fc.constantFrom('linear', 'Linear', ''), anyText(70)),
      latencyMs: fc.oneof(fc.integer(), fc.double()),
    }),
    fc.dictionary(anyText(6), anyJson, { maxKeys: 3 }),
    fc.constant({ impersonate: 'x\u0000' }),
    wrongValue,
  ),
});

const validSync = fc.record(
  { mode: fc.constantFrom('incremental', 'full_resync'), force: fc.boolean() },
  { requiredKeys: ['mode'] },
);

const sync = mutated(validSync, {
  mode: fc.constantFrom('backfill', 'INCREMENTAL', '', 'full-resync', 'incremental '),
  force: fc.constantFrom('true', 1, null, 'false'),
});

const window = fc
  .tuple(fc.integer({ min: 0, max: 365 }), fc.oneof(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 7, max: 60 })))
  .map(([start, days]) => {
    const since = new Date(Date.UTC(2026, 0, 1) + start * 86_400_000);
    return { since: since.toISOString(), before: new Date(since.getTime() + days * 86_400_000).toISOString() };
  });

const validBackfill = fc
  .tuple(
    window,
    fc.option(fc.subarray(ENABLED, { minLength: 1 }), { nil: undefined }),
    fc.option(fc.boolean(), { nil: undefined }),
  )
  .map(([w, d, f]) => ({ ...w, ...(d ? { datasets: d } : {}), ...(f === undefined ? {} : { force: f }) }));

const backfill = mutated(validBackfill, {
  since: timeLike,
  before: fc.oneof(timeLike, fc.constantFrom('2100-01-01T00:00:00Z', '2027-06-01T00:00:00Z')),
  datasets: datasetList,
  force: fc.constantFrom('yes', 0, null),
});

const cancel = mutated(fc.constant({}), { reason: anyText(), force: fc.boolean() });

const CRONS = ['@hourly', '@daily', '0 * * * *', '*/5 * * * *', '0 6 * * 1-5', '30 2 1 * *', '0 0 29 2 *'];
const cron = fc.oneof(
  fc.constantFrom(
    '',
    '* * *',
    '61 * * * *',
    '@never',
    '0 0 30 2 *',
    '0 0 31 4 *',
    '* * * * * * *',
    '0 0 * * 8',
    '*/0 * * * *',
    '1-0 * * * *',
    '0 0 L * *',
    '0 0 ? * *',
    'x'.repeat(201),
    '* * * * *\u0000',
  ),
  anyText(30),
);
const timezone = fc.oneof(
  fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kathmandu', 'Etc/GMT+12', 'Pacific/Kiritimati'),
  fc.constantFrom('', 'utc', 'Mars/Olympus', '+02:00', 'EST5EDT', 'Europe/Berlin ', 'x'.repeat(101)),
  anyText(20),
);

const scheduleFields = {
  cron: fc.oneof(fc.constantFrom(...CRONS), cron),
  timezone,
  mode: fc.oneof(fc.constantFrom('incremental', 'full_resync'), fc.constantFrom('backfill', '', 'INCREMENTAL')),
  enabled: fc.oneof(fc.boolean(), fc.constantFrom('true', 1, null)),
};

const validScheduleRest = fc.record(
  {
    cron: fc.constantFrom(...CRONS),
    timezone: fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York'),
    mode: fc.constantFrom('incremental', 'full_resync'),
    enabled: fc.boolean(),
  },
  { requiredKeys: ['cron'] },
);

const scheduleRest = mutated(validScheduleRest, scheduleFields);

/** A new schedule: mostly for one of the caller's integrations, its id sometimes wrong or missing. */
const newSchedule: fc.Arbitrary<StateValue<unknown>> = fc
  .tuple(
    fc.oneof(
      { weight: 8, arbitrary: idOf('integrations') },
      { weight: 1, arbitrary: wrongValue.map((v) => () => v) },
      { weight: 1, arbitrary: fc.constant(() => undefined) },
    ),
    scheduleRest,
  )
  .map(([id, rest]) => (s) => ({ integration_id: id(s), ...rest }));

const validPatch = fc
  .record(
    {
      cron: fc.constantFrom(...CRONS),
      timezone: fc.constantFrom('UTC', 'Asia/Tokyo'),
      mode: fc.constantFrom('incremental', 'full_resync'),
      enabled: fc.boolean(),
    },
    { requiredKeys: [] },
  )
  .filter((p) => Object.keys(p).length > 0);

const schedulePatch = mutated(validPatch, scheduleFields);

const fixed = (a: fc.Arbitrary<unknown>): fc.Arbitrary<StateValue<unknown>> => a.map((v) => () => v);

/** An endpoint's bodies: valid ones, and anything from valid to near misses. */
export interface Bodies {
  valid: fc.Arbitrary<StateValue<unknown>>;
  any: fc.Arbitrary<StateValue<unknown>>;
}

const both = (valid: fc.Arbitrary<unknown>, any: fc.Arbitrary<unknown>): Bodies => ({
  valid: fixed(valid),
  any: fixed(any),
});

/** A new schedule, for one of the caller's integrations. */
const validSchedule: fc.Arbitrary<StateValue<unknown>> = fc
  .tuple(fc.nat(), validScheduleRest)
  .map(([n, rest]) => (s) => ({ integration_id: recent(s.own.integrations, n), ...rest }));

/** The bodies of each endpoint (by operation name in the contract table); null when it reads none. */
const BODIES: Record<string, Bodies | null> = {
  createIntegration: both(validIntegration, integration),
  triggerSync: both(validSync, sync),
  triggerBackfill: both(validBackfill, backfill),
  cancelRun: both(fc.constant({}), cancel),
  createSchedule: { valid: validSchedule, any: newSchedule },
  updateSchedule: both(validPatch, schedulePatch),
  listIntegrations: null,
  getIntegration: null,
  listJobRuns: null,
  getRun: null,
  listUnits: null,
  outboxStats: null,
  reconcilerPasses: null,
  healthz: null,
  readyz: null,
  listSchedules: null,
  getSchedule: null,
  deleteSchedule: null,
  deleteIntegration: null,
  putIntegrationCredential: both(validCredential, credential),
  deleteIntegrationCredential: null,
  listWebhookDeliveries: null,
  summarizeWebhookDeliveries: null,
  getActivity: null,
  listRateBudgets: null,
  rateBudgetHistory: null,
  getIntegrationFreshness: null,
  getIntegrationData: null,
  createWebhookSecret: both(
    fc.constantFrom({ rotate: true }, { rotate: true }, { rotate: false }, {}),
    fc.oneof(
      fc.constant({ rotate: true }),
      fc.record({ rotate: wrongValue }),
      fc.constant({ rotate: true, other: 1 }),
      anyJson,
    ),
  ),
  receiveGithubWebhook: both(fc.constant({ zen: 'Keep it simple.' }), anyJson),
  receiveLinearWebhook: both(fc.constant({ action: 'update', type: 'Issue', data: {} }), anyJson),
  receiveJiraWebhook: both(fc.constant({ webhookEvent: 'jira:issue_updated', timestamp: 1 }), anyJson),
};

export function bodyOf(name: string): Bodies | null {
  if (!(name in BODIES)) throw new Error(`no body generator for endpoint ${name}: add one to the fuzz`);
  return BODIES[name]!;
}
