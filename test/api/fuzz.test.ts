/**
 * Property-based fuzz of the trigger and admin endpoints: thousands of generated bodies, ids,
 * query strings and headers. Every answer is 2xx or 4xx (never 5xx); every 4xx has the error
 * shape and leaves every table's row count unchanged.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  call,
  isErrorShape,
  openApiHarness,
  SYNTHETIC,
  tableCounts,
  type ApiHarness,
  type TableCounts,
} from './helpers.js';

let h: ApiHarness;
let ids: { integration: string; run: string; foreignIntegration: string; foreignRun: string };
let counts: TableCounts;
/** Runs planned so far (the newest is the usual cancel target). */
const runs: string[] = [];
let answered = 0;
/** Answers per `METHOD route → status`, to show the fuzz reaches success paths too. */
const tally = new Map<string, number>();

beforeAll(async () => {
  h = await openApiHarness();
  const a = await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body: SYNTHETIC });
  const ra = await call(h.url, 'POST', `/api/v1/integrations/${a.body.id}/sync`, {
    token: h.tokens.admin,
    body: { mode: 'incremental' },
  });
  const b = await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.foreign, body: SYNTHETIC });
  const rb = await call(h.url, 'POST', `/api/v1/integrations/${b.body.id}/sync`, {
    token: h.tokens.foreign,
    body: { mode: 'incremental' },
  });
  ids = {
    integration: a.body.id,
    run: ra.body.sync_run_id,
    foreignIntegration: b.body.id,
    foreignRun: rb.body.sync_run_id,
  };
  counts = await tableCounts(h.db);
});
afterAll(async () => {
  await h?.close();
  if (process.env.SYNCRELAY_FUZZ_TALLY)
    console.log(
      [...tally]
        .sort()
        .map(([k, n]) => `${k}: ${n}`)
        .join('\n'),
    );
});

/** At least `n` answers with a status in [lo, hi) on `route`. */
function reached(route: string, lo: number, hi: number): number {
  let n = 0;
  for (const [k, c] of tally) {
    const status = Number(k.split(' ').at(-1));
    if (k.startsWith(`${route} `) && status >= lo && status < hi) n += c;
  }
  return n;
}

// ---- generators -------------------------------------------------------------------------------

const KNOWN_DATASETS = [
  'teams',
  'members',
  'projects',
  'work-items',
  'work-item-comments',
  'work-item-labels',
  'work-item-history',
];

/** Anything JSON can hold, biased towards the wrong types for known fields. */
const anyJson = fc.jsonValue({ maxDepth: 4 });

const isoTime = fc
  .date({ min: new Date('1960-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString());

const timeLike = fc.oneof(
  isoTime,
  isoTime.map((s) => s.replace('Z', '+02:00')),
  isoTime.map((s) => s.slice(0, 19)),
  isoTime.map((s) => s.slice(0, 10)),
  fc.constantFrom(
    '2026-02-30T00:00:00Z',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
    '',
    'now',
    '2026-13-01T00:00:00Z',
  ),
  fc.integer(),
  anyJson,
);

const datasets = fc.oneof(
  fc.subarray(KNOWN_DATASETS, { minLength: 0 }),
  fc.array(fc.oneof(fc.constantFrom(...KNOWN_DATASETS), fc.string({ maxLength: 12 })), { maxLength: 5 }),
  anyJson,
);

/**
 * A valid body, sent as is half of the time; otherwise one to three mutations: a field dropped,
 * a field given a near-miss or arbitrary value, or an unknown field added.
 */
function mutated(valid: fc.Arbitrary<Record<string, unknown>>, nearMiss: Record<string, fc.Arbitrary<unknown>>) {
  const keys = Object.keys(nearMiss);
  const mutation = fc.oneof(
    fc.constantFrom(...keys).map((k) => (b: Record<string, unknown>) => {
      const { [k]: _dropped, ...rest } = b;
      return rest;
    }),
    fc.constantFrom(...keys).chain((k) => nearMiss[k]!.map((v) => (b: Record<string, unknown>) => ({ ...b, [k]: v }))),
    fc.tuple(fc.constantFrom(...keys), anyJson).map(([k, v]) => (b: Record<string, unknown>) => ({ ...b, [k]: v })),
    fc.tuple(fc.string({ maxLength: 8 }), anyJson).map(([k, v]) => (b: Record<string, unknown>) => ({ [k]: v, ...b })),
  );
  return fc.oneof(
    valid,
    fc
      .tuple(valid, fc.array(mutation, { minLength: 1, maxLength: 3 }))
      .map(([b, ms]) => ms.reduce((acc, m) => m(acc), b)),
  );
}

const ENABLED = ['teams', 'work-items'];

const syncBody = mutated(
  fc.record({ mode: fc.constantFrom('incremental', 'full_resync'), force: fc.boolean() }, { requiredKeys: ['mode'] }),
  { mode: fc.constantFrom('backfill', 'INCREMENTAL', '', 'full-resync'), force: fc.constantFrom('true', 1, null) },
);

const validWindow = fc.tuple(fc.integer({ min: 0, max: 365 }), fc.integer({ min: 1, max: 60 })).map(([start, days]) => {
  const since = new Date(Date.UTC(2026, 0, 1) + start * 86_400_000);
  return { since: since.toISOString(), before: new Date(since.getTime() + days * 86_400_000).toISOString() };
});

const backfillBody = mutated(
  fc
    .tuple(
      validWindow,
      fc.option(fc.subarray(ENABLED, { minLength: 1 }), { nil: undefined }),
      fc.option(fc.boolean(), { nil: undefined }),
    )
    .map(([w, d, f]) => ({ ...w, ...(d ? { datasets: d } : {}), ...(f === undefined ? {} : { force: f }) })),
  {
    since: timeLike,
    before: fc.oneof(timeLike, fc.constant('2100-01-01T00:00:00Z')),
    datasets: fc.oneof(
      fc.constant([]),
      fc.constant(['members']),
      fc.array(fc.string({ maxLength: 12 }), { maxLength: 3 }),
      datasets,
    ),
    force: fc.constantFrom('yes', 0, null),
  },
);

const integrationBody = mutated(
  fc.record({
    provider: fc.constant('synthetic'),
    name: fc.string({ minLength: 1, maxLength: 30 }).filter((n) => n.trim() !== ''),
    sources: fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,11}$/), { maxLength: 4 }),
    datasets: fc.subarray(KNOWN_DATASETS, { minLength: 1 }),
    config: fc.record({ itemsPerDay: fc.integer({ min: 0, max: 5 }), seed: fc.integer() }, { requiredKeys: [] }),
  }),
  {
    provider: fc.oneof(fc.constantFrom('linear', 'Synthetic', ''), fc.string({ maxLength: 10 })),
    name: fc.oneof(
      fc.constantFrom('', ' ', 'a\u0000b', 'a\ud800', 'x'.repeat(201)),
      fc.string({ unit: 'binary', maxLength: 10 }),
    ),
    sources: fc.oneof(
      fc.constant(['a', 'a']),
      fc.constant(['']),
      fc.array(fc.string({ maxLength: 10 }), { maxLength: 4 }),
    ),
    datasets: datasets,
    config: fc.oneof(
      fc.record({ itemsPerDay: fc.oneof(fc.integer({ min: -2, max: 5 }), anyJson), seed: anyJson }),
      fc.dictionary(fc.string({ maxLength: 6 }), anyJson, { maxKeys: 3 }),
      fc.constant({ impersonate: 'x\u0000' }),
      anyJson,
    ),
  },
);

/** The body as sent: JSON of a generated value, or raw text (broken JSON, empty, other types). */
const payload = (body: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { weight: 8, arbitrary: body.map((b) => ({ json: b })) },
    { weight: 1, arbitrary: anyJson.map((b) => ({ json: b })) },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((raw) => ({ raw })) },
  );

/** Path ids: mostly `own` (the right kind in the caller's org), else the other kind, foreign, random or junk. */
const idText = (own: () => string) =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant(null).map(() => own()) },
    { weight: 3, arbitrary: fc.constantFrom(ids.integration, ids.run, ids.foreignIntegration, ids.foreignRun) },
    { weight: 1, arbitrary: fc.constantFrom(ids.integration.toUpperCase(), ids.run.toUpperCase()) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: fc.string({ maxLength: 50 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: fc.constantFrom('', '..', '%00', '%ZZ', "1'%20OR%20'1'='1", '0'.repeat(2000)) },
  );

/** Which own id a path takes. */
const OWN_INTEGRATION = () => ids.integration;
const OWN_RUN = () => runs.at(-1) ?? ids.run;
const OWN = OWN_INTEGRATION;

const token = () =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constant(h.tokens.admin) },
    { weight: 2, arbitrary: fc.constant(h.tokens.trigger) },
    { weight: 1, arbitrary: fc.constantFrom(h.tokens.read, h.tokens.foreign) },
    { weight: 1, arbitrary: fc.constantFrom(null, 'sr_', `${h.tokens.admin.slice(0, -1)}A`, 'Bearer') },
  );

const headers = fc.record({
  idempotencyKey: fc.option(fc.oneof(fc.constantFrom('k1', 'k2', 'k3'), fc.stringMatching(/^[\x20-\x7e]{0,300}$/)), {
    nil: undefined,
    freq: 3,
  }),
  contentType: fc.oneof(
    { weight: 8, arbitrary: fc.constant('application/json') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'text/plain',
        'application/json; charset=utf-8',
        'application/x-www-form-urlencoded',
        'application/json; charset=latin1',
        '',
      ),
    },
  ),
  accept: fc.constantFrom(undefined, 'application/json', '*/*', 'text/html'),
});

// ---- the check --------------------------------------------------------------------------------

interface Sent {
  method: 'GET' | 'POST';
  path: string;
  token: string | null;
  body?: { json?: unknown; raw?: string };
  headers: { idempotencyKey?: string; contentType: string; accept?: string };
}

async function check(s: Sent): Promise<void> {
  const extra: Record<string, string> = {};
  if (s.headers.idempotencyKey !== undefined) extra['idempotency-key'] = s.headers.idempotencyKey;
  if (s.headers.accept) extra.accept = s.headers.accept;
  if (s.body) extra['content-type'] = s.headers.contentType;
  const raw = s.body ? (s.body.raw ?? JSON.stringify(s.body.json)) : undefined;
  const r = await call(h.url, s.method, s.path, { token: s.token, raw, headers: extra });
  answered++;
  const route = s.path.split('?')[0]!.replace(/\/api\/v1\/(integrations|sync-runs)\/[^/]+/, '/api/v1/$1/:id');
  const key = `${s.method} ${route} ${r.status}`;
  tally.set(key, (tally.get(key) ?? 0) + 1);
  const what = `${s.method} ${s.path} ${raw ?? ''} → ${r.status} ${JSON.stringify(r.body)}`;
  expect(r.status >= 500, what).toBe(false);
  expect(r.status >= 200 && r.status < 500, what).toBe(true);
  const now = await tableCounts(h.db);
  if (r.status >= 400) {
    expect(isErrorShape(r.body), what).toBe(true);
    expect(now, what).toEqual(counts);
  } else {
    expect(r.body !== null && typeof r.body === 'object', what).toBe(true);
    if (r.status === 202 && typeof r.body.job_run_id === 'string') runs.push(r.body.sync_run_id);
  }
  counts = now;
}

const SETTINGS = { numRuns: 0, endOnFailure: true } as const;

it('fuzzes POST /integrations/:id/sync, /backfill and /sync-runs/:id/cancel', async () => {
  const sent = fc.oneof(
    fc
      .record({ id: idText(OWN), body: payload(syncBody) })
      .map((x) => ({ path: `/api/v1/integrations/${x.id}/sync`, body: x.body })),
    fc
      .record({ id: idText(OWN), body: payload(backfillBody) })
      .map((x) => ({ path: `/api/v1/integrations/${x.id}/backfill`, body: x.body })),
    fc
      .record({ id: idText(OWN_RUN), body: fc.option(payload(fc.constant({})), { nil: undefined }) })
      .map((x) => ({ path: `/api/v1/sync-runs/${x.id}/cancel`, body: x.body })),
  );
  await fc.assert(
    fc.asyncProperty(sent, token(), headers, async (x, t, hd) =>
      check({ method: 'POST', path: x.path, body: x.body, token: t, headers: hd }),
    ),
    { ...SETTINGS, numRuns: 1400 },
  );
  for (const route of [
    'POST /api/v1/integrations/:id/sync',
    'POST /api/v1/integrations/:id/backfill',
    'POST /api/v1/sync-runs/:id/cancel',
  ]) {
    expect(reached(route, 200, 300), route).toBeGreaterThan(5);
    expect(reached(route, 400, 500), route).toBeGreaterThan(50);
  }
});

it('fuzzes POST /integrations', async () => {
  await fc.assert(
    fc.asyncProperty(payload(integrationBody), token(), headers, async (body, t, hd) =>
      check({ method: 'POST', path: '/api/v1/integrations', body, token: t, headers: hd }),
    ),
    { ...SETTINGS, numRuns: 700 },
  );
  expect(reached('POST /api/v1/integrations', 200, 300)).toBeGreaterThan(5);
});

it('fuzzes the read endpoints: ids, filters, cursors and limits', async () => {
  const queryValue = fc.oneof(
    fc.constantFrom('1', '50', '100', '101', '0', '-1', 'pending', 'api', 'backfill', 'failed'),
    isoTime,
    fc.uuid(),
    fc.string({ maxLength: 30 }).map(encodeURIComponent),
    fc.base64String({ maxLength: 40 }).map((s) => s.replace(/=+$/, '')),
  );
  const query = fc
    .dictionary(
      fc.constantFrom(
        'status',
        'integration_id',
        'triggered_by',
        'created_after',
        'created_before',
        'cursor',
        'limit',
        'sort',
        'org_id',
      ),
      queryValue,
      { maxKeys: 3 },
    )
    .map((q) =>
      Object.keys(q).length
        ? `?${Object.entries(q)
            .map(([k, v]) => `${k}=${v}`)
            .join('&')}`
        : '',
    );
  const path = fc.oneof(
    query.map((q) => `/api/v1/job-runs${q}`),
    query.map((q) => `/api/v1/integrations${q}`),
    fc.tuple(idText(OWN), query).map(([id, q]) => `/api/v1/integrations/${id}${q}`),
    fc.tuple(idText(OWN_RUN), query).map(([id, q]) => `/api/v1/sync-runs/${id}${q}`),
    fc.tuple(idText(OWN_RUN), query).map(([id, q]) => `/api/v1/sync-runs/${id}/units${q}`),
    query.map((q) => `/api/v1/outbox/stats${q}`),
    query.map((q) => `/api/v1/reconciler/passes${q}`),
  );
  await fc.assert(
    fc.asyncProperty(path, token(), headers, async (p, t, hd) =>
      check({ method: 'GET', path: p, token: t, headers: hd }),
    ),
    { ...SETTINGS, numRuns: 600 },
  );
  expect(answered).toBeGreaterThanOrEqual(2700);
});
