/**
 * Property-based fuzz of the whole HTTP API, in process: at least 10,000 generated requests over
 * every route (each endpoint of the contract table, OpenAPI, /metrics, the dashboard, paths no
 * route has), valid and hostile (wrong types, huge and control-character strings, unicode, deep
 * JSON, missing and unknown fields, bad ids and cursors, wrong content types, odd headers, every
 * method). Invariants: never a 5xx; every answer has the security headers and a request id; every
 * error has the documented shape; a 4xx wrote nothing (no row of any table changed); a 2xx of a
 * contract endpoint matches its success schema, and a successful write wrote something.
 */
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Endpoint } from '../../src/api/contracts/endpoints.js';
import { isErrorShape } from './helpers.js';
import { anyRequest, CONTRACT, EXTRA_ROUTES, type FuzzRequest, type Plan } from './fuzz/requests.js';
import { openFuzzServer, type FuzzServer } from './fuzz/server.js';
import type { FuzzState, Ids } from './fuzz/state.js';

/** Requests per run (SYNCRELAY_FUZZ_REQUESTS may ask for more, or fewer while working on the fuzz). */
const REQUESTS = Number(process.env.SYNCRELAY_FUZZ_REQUESTS ?? 10_000);

let server: FuzzServer;
let state: FuzzState;
/** Rows changed so far, as of the last answer. */
let writes = 0;
let sent = 0;
/** Answers by `target|routed endpoint|status`. */
const tally = new Map<string, number>();
/** Error codes by `status code`. */
const codes = new Map<string, number>();

beforeAll(async () => {
  server = await openFuzzServer();
  const ids = (): Ids => ({ integrations: [], runs: [], schedules: [] });
  state = {
    own: ids(),
    foreign: ids(),
    cursors: [],
    tokens: server.tokens,
    github: server.github,
    linear: server.linear,
    jira: server.jira,
    budgets: server.budgets,
    webhookSecrets: {},
  };
  writes = await server.writes();
});
afterAll(async () => {
  await server?.close();
});

/** The contract endpoint that answers `method path` (path without the query), if any. */
function routed(method: string, url: string): [string, Endpoint] | undefined {
  const path = url.split('?')[0]!;
  return CONTRACT.find(([, e]) => {
    if (e.method !== method) return false;
    const re = new RegExp(`^${e.path.replace(/:[a-z_]+/gi, '[^/]+')}$`);
    return re.test(path);
  });
}

function describeExchange(req: FuzzRequest, res: LightMyRequestResponse): string {
  const clip = (s: string) => (s.length > 600 ? `${s.slice(0, 600)}… (${s.length} chars)` : s);
  return [
    `${req.method} ${clip(req.url)}`,
    `headers ${clip(JSON.stringify(req.headers))}`,
    `body ${clip(req.payload ?? '(none)')}`,
    `→ ${res.statusCode} ${clip(res.body)}`,
  ].join('\n');
}

/** What a success teaches: new ids, removed ids, page cursors. */
function learn(name: string, org: 'own' | 'foreign', body: Record<string, unknown>): void {
  const ids = state[org];
  const add = (list: string[], id: unknown) => {
    if (typeof id === 'string' && !list.includes(id)) list.push(id);
  };
  if (name === 'createIntegration') add(ids.integrations, body.id);
  if (name === 'triggerSync' || name === 'triggerBackfill') add(ids.runs, body.sync_run_id);
  if (name === 'createSchedule') add(ids.schedules, body.id);
  if (name === 'deleteSchedule') ids.schedules = ids.schedules.filter((id) => id !== body.id);
  if (name === 'createWebhookSecret' && typeof body.secret === 'string') {
    state.webhookSecrets[body.integration_id as string] = body.secret;
  }
  if (typeof body.next_cursor === 'string') {
    state.cursors.push(body.next_cursor);
    if (state.cursors.length > 50) state.cursors.shift();
  }
}

const WRITES_ON_SUCCESS = new Set([
  'createIntegration',
  'triggerSync',
  'triggerBackfill',
  'createSchedule',
  'updateSchedule',
  'deleteSchedule',
  'createWebhookSecret',
  'receiveGithubWebhook',
  'receiveLinearWebhook',
  'receiveJiraWebhook',
]);

/** Requests between reconciler passes. */
const RECONCILE_EVERY = 500;

async function check(plan: Plan): Promise<void> {
  if (sent > 0 && sent % RECONCILE_EVERY === 0) {
    await server.reconcile();
    writes = await server.writes();
  }
  const req = plan(state);
  const res = await server.app.inject({
    method: req.method as 'GET',
    url: req.url,
    headers: req.headers,
    ...(req.payload === undefined ? {} : { payload: req.payload }),
  });
  sent++;
  const status = res.statusCode;
  // A read that succeeded is taken to have written nothing (were it to write, the next refusal
  // would see rows changed and fail): only other answers pay for the count.
  const read = status < 400 && (req.method === 'GET' || req.method === 'HEAD');
  const now = read ? writes : await server.writes();
  const before = writes;
  writes = now;
  const hit = routed(req.method, req.url);
  const key = `${req.target}|${hit?.[0] ?? '-'}|${status}`;
  tally.set(key, (tally.get(key) ?? 0) + 1);
  const what = describeExchange(req, res);

  expect(status < 500, what).toBe(true);
  expect(res.headers['x-content-type-options'], what).toBe('nosniff');
  expect(res.headers['x-frame-options'], what).toBeTruthy();
  expect(res.headers['x-request-id'], what).toBeTruthy();
  const bodied = req.method !== 'HEAD';
  if (status >= 400) {
    expect(now, `a ${status} changed rows\n${what}`).toBe(before);
    if (!bodied) return;
    const body: unknown = JSON.parse(res.body);
    expect(isErrorShape(body), what).toBe(true);
    const code = `${status} ${(body as { error: { code: string } }).error.code}`;
    codes.set(code, (codes.get(code) ?? 0) + 1);
    return;
  }
  expect(status >= 200 && status < 400, what).toBe(true);
  if (!hit || !bodied) return;
  const [name, e] = hit;
  const body: unknown = JSON.parse(res.body);
  const parsed = e.success.schema.safeParse(body);
  expect(parsed.success, `${what}\n${parsed.error?.message ?? ''}`).toBe(true);
  const replayed = res.headers['idempotent-replayed'] === 'true';
  if (WRITES_ON_SUCCESS.has(name) && !replayed) expect(now, `a ${name} wrote nothing\n${what}`).toBeGreaterThan(before);
  if (req.org) learn(name, req.org, body as Record<string, unknown>);
}

/** Answers for `target` (or any target when null) routed to `routedTo` with a status in [lo, hi). */
function answers(target: string | null, routedTo: string | null, lo: number, hi: number): number {
  let n = 0;
  for (const [k, c] of tally) {
    const [t, r, s] = k.split('|') as [string, string, string];
    if ((target === null || t === target) && (routedTo === null || r === routedTo) && +s >= lo && +s < hi) n += c;
  }
  return n;
}

it('the row-change counter sees committed writes only, and not a token being stamped as used', async () => {
  const db = server.db;
  const start = await server.writes();
  await db.query(`UPDATE ${db.schema.api_tokens} SET last_used_at = now()`);
  expect(await server.writes()).toBe(start);
  await expect(
    db.transaction(async (tx) => {
      await tx.query(`UPDATE ${tx.schema.api_tokens} SET name = name || '.'`);
      throw new Error('roll back');
    }),
  ).rejects.toThrow('roll back');
  expect(await server.writes()).toBe(start);
  const { rowCount } = await db.query(`UPDATE ${db.schema.api_tokens} SET name = name || '.'`);
  expect(rowCount).toBeGreaterThan(0);
  expect(await server.writes()).toBe(start + rowCount);
  writes = await server.writes();
});

it(
  `fuzzes every route with ${REQUESTS} generated requests`,
  async () => {
    const started = Date.now();
    // A failure prints its seed; SYNCRELAY_FUZZ_SEED replays that run.
    const seed = process.env.SYNCRELAY_FUZZ_SEED;
    await fc.assert(fc.asyncProperty(anyRequest(), check), {
      numRuns: REQUESTS,
      endOnFailure: true,
      ...(seed === undefined ? {} : { seed: Number(seed) }),
    });
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `API fuzz: ${sent} requests in ${seconds.toFixed(1)} s (${Math.round(sent / seconds)}/s), ` +
        `${writes} rows written; answers by status and code: ` +
        [...codes]
          .sort()
          .map(([c, n]) => `${c}: ${n}`)
          .join(', '),
    );
    if (process.env.SYNCRELAY_FUZZ_TALLY)
      console.log(
        [...tally]
          .sort()
          .map(([k, n]) => `${k}: ${n}`)
          .join('\n'),
      );

    expect(sent).toBeGreaterThanOrEqual(REQUESTS);
    if (process.env.SYNCRELAY_FUZZ_REQUESTS === undefined) expect(sent).toBeGreaterThanOrEqual(10_000);
    // Every endpoint answered successes and refusals; every other route answered.
    for (const [name] of CONTRACT) {
      expect(answers(null, name, 200, 300), `${name} 2xx`).toBeGreaterThan(0);
      expect(answers(name, null, 400, 500), `${name} 4xx`).toBeGreaterThan(0);
    }
    for (const [method, url] of EXTRA_ROUTES) {
      expect(answers(`${method} ${url}`, null, 200, 400), `${method} ${url} 2xx/3xx`).toBeGreaterThan(0);
    }
  },
  15 * 60_000,
);
