/**
 * Generated requests, one generator per route: every endpoint of the contract table (its method,
 * path ids, query keys and body), the routes outside it (OpenAPI, /metrics, the dashboard) and
 * paths no route has. A generated request is a plan that reads the ids, cursors and tokens the
 * fuzz has so far when it is sent.
 */
import fc from 'fast-check';
import { endpoints, type Endpoint } from '../../../src/api/contracts/endpoints.js';
import { signWebhookBody } from '../../../src/secrets/webhookSecrets.js';
import { bodyOf } from './bodies.js';
import { as, authOf, extraHeaders, type Auth } from './headers.js';
import { queryOf, validQueryOf } from './queries.js';
import { idOf, recent, type FuzzState, type Ids, type StateValue } from './state.js';
import { anyJson, anyText, encode, junkSegment, rawBody, wrongValue } from './values.js';

export interface FuzzRequest {
  /** The route the request was generated for (an operationId, an extra route, or `unknown`). */
  target: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  /** Whose token it carries: `own` (org A), `foreign` (org B) or none that authenticates. */
  org: 'own' | 'foreign' | null;
}

export type Plan = (s: FuzzState) => FuzzRequest;

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'SEARCH'];

/** Whether a request carries a body, and which. */
function payloadOf(body: fc.Arbitrary<StateValue<unknown>> | null): fc.Arbitrary<StateValue<string> | null> {
  const json = (b: fc.Arbitrary<StateValue<unknown>>) => b.map((f) => (s: FuzzState) => JSON.stringify(f(s)) ?? '');
  if (body === null) {
    return fc.oneof(
      { weight: 10, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: json(wrongValue.map((v) => () => v)) },
      { weight: 1, arbitrary: rawBody.map((r) => () => r) },
    );
  }
  return fc.oneof(
    { weight: 14, arbitrary: json(body) },
    { weight: 1, arbitrary: json(wrongValue.map((v) => () => v)) },
    { weight: 3, arbitrary: rawBody.map((r) => () => r) },
    { weight: 1, arbitrary: fc.constant(null) },
  );
}

/** Small damage to a path: a trailing or doubled slash, another case, an extra segment. */
const pathDamage = fc.oneof(
  { weight: 20, arbitrary: fc.constant((p: string) => p) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      (p: string) => `${p}/`,
      (p: string) => `/${p}`,
      (p: string) => p.toUpperCase(),
      (p: string) => `${p}/x`,
      (p: string) => `${p};a=b`,
      (p: string) => p.replace('/api/v1/', '/api/v1//'),
      (p: string) => p.replace('/api/v1/', '/api/v2/'),
      (p: string) => `${p}%`,
    ),
  },
);

/** How a route is reached: its path (with ids and query) and body, hostile or clean. */
interface Parts {
  path: fc.Arbitrary<StateValue<string>>;
  body: fc.Arbitrary<StateValue<unknown>> | null;
}

/** A hostile request on `path`: mostly `method`, any token, odd headers, damaged paths and bodies. */
function hostile(target: string, method: string, parts: Parts, auth: fc.Arbitrary<Auth>): fc.Arbitrary<Plan> {
  const methods = fc.oneof(
    { weight: 14, arbitrary: fc.constant(method) },
    { weight: 2, arbitrary: fc.constantFrom(...METHODS) },
  );
  return fc
    .record({
      method: methods,
      path: parts.path,
      damage: pathDamage,
      auth,
      headers: extraHeaders,
      payload: payloadOf(parts.body),
      typeWithoutBody: fc.boolean(),
    })
    .map((r) => (s: FuzzState): FuzzRequest => {
      const a = r.auth(s);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(r.headers)) if (typeof v === 'string') headers[k] = v;
      if (a.header !== undefined) headers.authorization = a.header;
      const payload = r.payload?.(s);
      if (payload === undefined && !r.typeWithoutBody) delete headers['content-type'];
      return { target, method: r.method, url: r.damage(r.path(s)), headers, payload, org: a.org };
    });
}

/**
 * A clean request: the route's method, a token that may call it, a valid query and body, sometimes
 * a fresh Idempotency-Key. These build up the ids, runs and cursors the hostile requests aim at.
 */
function clean(target: string, method: string, parts: Parts, auth: Auth): fc.Arbitrary<Plan> {
  const body = parts.body ?? fc.constant(() => undefined);
  return fc
    .record({ path: parts.path, body, key: fc.option(fc.uuid(), { freq: 3 }) })
    .map((r) => (s: FuzzState): FuzzRequest => {
      const a = auth(s);
      const value = r.body(s);
      const headers: Record<string, string> = {};
      if (a.header !== undefined) headers.authorization = a.header;
      if (r.key !== null) headers['idempotency-key'] = r.key;
      if (value !== undefined) headers['content-type'] = 'application/json';
      const payload = value === undefined ? undefined : JSON.stringify(value);
      return { target, method, url: r.path(s), headers, payload, org: a.org };
    });
}

/** Requests for one route: a third clean, the rest hostile. */
function requestOn(
  target: string,
  method: string,
  parts: { clean: Parts; hostile: Parts },
  auth: { clean: Auth; hostile: fc.Arbitrary<Auth> } = { clean: as('admin', 'own'), hostile: authOf() },
): fc.Arbitrary<Plan> {
  return fc.oneof(
    { weight: 1, arbitrary: clean(target, method, parts.clean, auth.clean) },
    { weight: 2, arbitrary: hostile(target, method, parts.hostile, auth.hostile) },
  );
}

/** The path of `e` with its `:id` from `id` and a query from `query`. */
function pathOf(
  e: Endpoint,
  id: fc.Arbitrary<StateValue<string>>,
  query: fc.Arbitrary<StateValue<string>>,
): fc.Arbitrary<StateValue<string>> {
  const segments = e.path.split('/');
  return fc.tuple(id, query).map(
    ([i, q]) =>
      (s: FuzzState) =>
        `${segments.map((seg) => (seg.startsWith(':') ? i(s) : seg)).join('/')}${q(s)}`,
  );
}

/** The ids webhook routes are called with: mostly the GitHub, Linear or Jira integration's, else any integration's. */
function webhookIds(ids: fc.Arbitrary<StateValue<string>>): fc.Arbitrary<StateValue<string>> {
  const of = (pick: (s: FuzzState) => string) => fc.constant(pick);
  return fc.oneof(
    { weight: 3, arbitrary: of((s) => s.github) },
    { weight: 1, arbitrary: of((s) => s.linear) },
    { weight: 1, arbitrary: of((s) => s.jira) },
    { weight: 1, arbitrary: ids },
  );
}

/** Requests for one endpoint of the contract table. */
function endpointRequests(name: string, e: Endpoint): fc.Arbitrary<Plan> {
  if (name === 'receiveGithubWebhook') return webhookRequests(name, e);
  if (name === 'receiveLinearWebhook' || name === 'receiveJiraWebhook') return providerWebhookRequests(name, e);
  if (name === 'rateBudgetHistory') return budgetHistoryRequests(name, e);
  const kind: keyof Ids = e.path.includes('/schedules')
    ? 'schedules'
    : e.path.includes('/sync-runs')
      ? 'runs'
      : 'integrations';
  const webhook = name === 'createWebhookSecret';
  const ownId = fc.nat().map((n) => (s: FuzzState) => recent(s.own[kind], n));
  const body = bodyOf(name);
  return requestOn(name, e.method, {
    clean: { path: pathOf(e, webhook ? webhookIds(ownId) : ownId, validQueryOf(e)), body: body?.valid ?? null },
    hostile: { path: pathOf(e, webhook ? webhookIds(idOf(kind)) : idOf(kind), queryOf(e)), body: body?.any ?? null },
  });
}

/** GET /rate-budgets/:key/history: org A's budget key, org B's, another route's id, junk. */
function budgetHistoryRequests(name: string, e: Endpoint): fc.Arbitrary<Plan> {
  const own = fc.constant((s: FuzzState) => s.budgets.own);
  const key = fc.oneof(
    { weight: 4, arbitrary: own },
    { weight: 2, arbitrary: fc.constant((s: FuzzState) => s.budgets.foreign) },
    { weight: 1, arbitrary: fc.constant((s: FuzzState) => `${s.budgets.own}A`) },
    { weight: 2, arbitrary: idOf('integrations') },
  );
  return requestOn(name, e.method, {
    clean: { path: pathOf(e, own, validQueryOf(e)), body: null },
    hostile: { path: pathOf(e, key, queryOf(e)), body: null },
  });
}

/** A GitHub delivery's event and payload: ones that arm a run of the integration's repository, and others. */
const delivery = fc.oneof(
  fc.constant({ event: 'ping', payload: { zen: 'Keep it simple.', hook_id: 1 } }),
  fc.record({
    event: fc.constantFrom('issues', 'issue_comment', 'pull_request', 'star'),
    payload: fc.record({
      action: fc.constantFrom('opened', 'edited', 'closed', 'labeled'),
      issue: fc.record({ number: fc.integer({ min: 1, max: 50 }) }),
      repository: fc.record({ full_name: fc.constantFrom('acme/widgets', 'acme/other') }),
    }),
  }),
);

/**
 * Deliveries to POST /webhooks/github/:id: a third signed with the secret the fuzz was last shown
 * (202, or 401 before any), the rest hostile: any headers and body, or GitHub's headers with a
 * signature of something else.
 */
function webhookRequests(name: string, e: Endpoint): fc.Arbitrary<Plan> {
  const signed = fc
    .record({ d: delivery, id: fc.oneof(fc.uuid(), fc.constant('fuzz-redelivery')) })
    .map(({ d, id }) => (s: FuzzState): FuzzRequest => {
      const payload = JSON.stringify(d.payload);
      const secret = s.webhookSecrets[s.github] ?? 'no secret shown yet';
      const headers = {
        'content-type': 'application/json',
        'x-github-event': d.event,
        'x-github-delivery': id,
        'x-hub-signature-256': signWebhookBody(payload, secret),
      };
      return { target: name, method: 'POST', url: `${V1_WEBHOOKS}${s.github}`, headers, payload, org: null };
    });
  const forged = fc
    .record({
      d: delivery,
      sig: fc.oneof(fc.stringMatching(/^sha256=[0-9a-f]{64}$/), anyText(80)),
      id: idOf('integrations'),
    })
    .map(({ d, sig, id }) => (s: FuzzState): FuzzRequest => {
      const headers = {
        'content-type': 'application/json',
        'x-github-event': d.event,
        'x-github-delivery': 'fuzz-forged',
        'x-hub-signature-256': sig,
      };
      const url = `${V1_WEBHOOKS}${id(s)}`;
      return { target: name, method: 'POST', url, headers, payload: JSON.stringify(d.payload), org: null };
    });
  const body = bodyOf(name);
  const generic = requestOn(name, e.method, {
    clean: { path: pathOf(e, webhookIds(idOf('integrations')), validQueryOf(e)), body: body?.valid ?? null },
    hostile: { path: pathOf(e, webhookIds(idOf('integrations')), queryOf(e)), body: body?.any ?? null },
  });
  return fc.oneof(
    { weight: 3, arbitrary: signed },
    { weight: 1, arbitrary: forged },
    { weight: 4, arbitrary: generic },
  );
}

const V1_WEBHOOKS = '/api/v1/webhooks/github/';

/** Linear's and Jira's signature header, its prefix and the delivery id header. */
const PROVIDER_HEADERS: Readonly<Record<string, { signature: string; prefix: string; id: string }>> = {
  receiveLinearWebhook: { signature: 'linear-signature', prefix: '', id: 'linear-delivery' },
  receiveJiraWebhook: { signature: 'x-hub-signature', prefix: 'sha256=', id: 'x-atlassian-webhook-identifier' },
};

/** A Linear or Jira payload: ones that arm a run of the integration's source, and others. */
function providerPayload(name: string): fc.Arbitrary<Record<string, unknown>> {
  if (name === 'receiveLinearWebhook') {
    return fc.record({
      action: fc.constantFrom('create', 'update', 'remove'),
      type: fc.constantFrom('Issue', 'Comment', 'Cycle'),
      data: fc.record({ id: fc.uuid(), team: fc.record({ key: fc.constantFrom('ENG', 'OTHER') }) }),
    });
  }
  return fc.record({
    webhookEvent: fc.constantFrom('jira:issue_updated', 'jira:issue_deleted', 'comment_created', 'sprint_started'),
    timestamp: fc.nat(),
    issue: fc.record({
      id: fc.integer({ min: 1, max: 99_999 }).map(String),
      key: fc.constantFrom('PROJ-1', 'OTHER-2'),
    }),
  });
}

/**
 * Deliveries to POST /webhooks/{linear,jira}/:id: signed with the secret the fuzz was last shown for
 * that integration (Linear's stamped with the time it is sent), or forged: the provider's headers
 * with a digest of something else, or any path, headers and body.
 */
function providerWebhookRequests(name: string, e: Endpoint): fc.Arbitrary<Plan> {
  const h = PROVIDER_HEADERS[name]!;
  const target = (s: FuzzState) => (name === 'receiveLinearWebhook' ? s.linear : s.jira);
  const signed = fc
    .record({ payload: providerPayload(name), id: fc.oneof(fc.uuid(), fc.constant('fuzz-redelivery')) })
    .map(({ payload, id }) => (s: FuzzState): FuzzRequest => {
      const stamped = name === 'receiveLinearWebhook' ? { ...payload, webhookTimestamp: Date.now() } : payload;
      const body = JSON.stringify(stamped);
      const secret = s.webhookSecrets[target(s)] ?? 'no secret shown yet';
      const headers = {
        'content-type': 'application/json',
        [h.signature]: signWebhookBody(body, secret, h.prefix),
        [h.id]: id,
      };
      const url = e.path.replace(':id', target(s));
      return { target: name, method: 'POST', url, headers, payload: body, org: null };
    });
  const forged = fc
    .record({
      payload: anyJson,
      sig: fc.oneof(fc.stringMatching(/^(sha256=)?[0-9a-f]{64}$/), anyText(80)),
      id: idOf('integrations'),
    })
    .map(({ payload, sig, id }) => (s: FuzzState): FuzzRequest => {
      const headers = { 'content-type': 'application/json', [h.signature]: sig, [h.id]: 'fuzz-forged' };
      const url = e.path.replace(':id', id(s));
      return { target: name, method: 'POST', url, headers, payload: JSON.stringify(payload), org: null };
    });
  const body = bodyOf(name);
  const generic = requestOn(name, e.method, {
    clean: { path: pathOf(e, idOf('integrations'), validQueryOf(e)), body: body?.valid ?? null },
    hostile: { path: pathOf(e, idOf('integrations'), queryOf(e)), body: body?.any ?? null },
  });
  return fc.oneof(
    { weight: 3, arbitrary: signed },
    { weight: 1, arbitrary: forged },
    { weight: 2, arbitrary: generic },
  );
}

/** Routes outside the contract table, each with its method. */
export const EXTRA_ROUTES: ReadonlyArray<readonly [string, string]> = [
  ['GET', '/api/v1/openapi.json'],
  ['GET', '/openapi.json'],
  ['GET', '/metrics'],
  ['GET', '/'],
  ['GET', '/dashboard'],
  ['GET', '/dashboard/'],
  ['GET', '/dashboard/app.js'],
  ['GET', '/dashboard/style.css'],
  ['GET', '/dashboard/favicon.svg'],
  ['GET', '/dashboard/activity.js'],
  ['GET', '/dashboard/charts.js'],
  ['GET', '/dashboard/vendor/uPlot.esm.js'],
  ['GET', '/dashboard/vendor/uPlot.min.css'],
  ['GET', '/dashboard/session'],
];

function extraRequests(method: string, url: string): fc.Arbitrary<Plan> {
  const query = fc.oneof(
    fc.constant(''),
    anyText(20).map((t) => `?q=${encode(t)}`),
  );
  // /metrics takes its own token, not an API token.
  const auth =
    url === '/metrics'
      ? { clean: as('metrics', null), hostile: fc.oneof(fc.constant(as('metrics', null)), authOf()) }
      : { clean: as('read', 'own'), hostile: authOf() };
  const path = { path: query.map((q) => () => `${url}${q}`), body: null };
  return requestOn(`${method} ${url}`, method, { clean: path, hostile: path }, auth);
}

/** Paths no route has. */
const unknownPath = {
  path: fc.tuple(fc.constantFrom('/api/v1/', '/', '/api/', '/dashboard/', '/api/v1/integrations/x/'), junkSegment).map(
    ([prefix, seg]) =>
      () =>
        `${prefix}${seg}`,
  ),
  body: null,
};
const unknownRequests = requestOn('unknown', 'GET', { clean: unknownPath, hostile: unknownPath });

export const CONTRACT = Object.entries(endpoints) as [string, Endpoint][];

/** Every route's requests: weighted towards the writes, whose failures must write nothing. */
export function anyRequest(): fc.Arbitrary<Plan> {
  const writes = new Set(['POST', 'PATCH', 'DELETE']);
  return fc.oneof(
    ...CONTRACT.map(([name, e]) => ({ weight: writes.has(e.method) ? 6 : 3, arbitrary: endpointRequests(name, e) })),
    ...EXTRA_ROUTES.map(([m, u]) => ({ weight: 1, arbitrary: extraRequests(m, u) })),
    { weight: 2, arbitrary: unknownRequests },
  );
}
