/**
 * A provider's error answer that echoes the credential — a GitHub 400 whose message quotes the
 * token, a text/plain 422 (with a deprecation header quoting it too), a Linear GraphQL error
 * repeating the API key, a Jira 409 echoing the Basic value and the raw token, a Jira 200 that is
 * no JSON — played by a server on 127.0.0.1 against the real provider units. What the unit stores
 * (and the API returns, and the dashboard shows) holds the status, the provider's code and a short
 * summary, bounded, and no form of the credential; every error in the cause chain too. The logs,
 * at every level down to trace, hold no form of it; the body itself only at debug level, redacted.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { classifyError } from '../../src/errors.js';
import { runGithubUnit } from '../../src/providers/github/index.js';
import { runJiraUnit } from '../../src/providers/jira/index.js';
import { ProviderAnswerError } from '../../src/providers/kit/errors.js';
import { SUMMARY_MAX } from '../../src/providers/kit/redact.js';
import { runLinearUnit } from '../../src/providers/linear/index.js';
import type { UnitContext, UnitResult } from '../../src/sdk/types.js';
import { failure } from '../../src/tasks/unitEnd.js';
import { failureOf } from '../helpers/failures.js';
import { canarySecret, findLeaks, memoryLogger } from '../helpers/leakScan.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { unitContext, type UnitSpec } from '../helpers/unitContext.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const WINDOW = { since: new Date(T0 - 30 * 86_400_000), before: new Date(T0) };
const FAST = { retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 } };
const EMAIL = 'ops@acme.io';
/** Far into the body: past any summary, so only the full body (at debug level) can carry it. */
const DEEP = 'DEEP-BODY-MARK-7f3a';
/** Control characters an answer may carry: none of them reaches what is stored. */
const CONTROLS = '\u0000\u0007\u001b[31m\u009b\u200b\u202e';

let t: TestDatabase;
const servers: Server[] = [];

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
});
afterAll(async () => {
  await t.drop();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

type Answer = (req: IncomingMessage, res: ServerResponse) => void;

/** A hostile provider on 127.0.0.1: every request gets `answer`. */
async function hostile(answer: Answer): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    answer(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');

/** The token in every form an answer might echo it (and foreign tokens, shaped like well-known ones). */
function echoes(token: string): string {
  return [
    `raw ${token}`,
    `token ${token}`,
    `Bearer ${token}`,
    `base64 ${b64(token)}`,
    `url ${encodeURIComponent(`${token}/`)}`,
    `HEX ${hex(token).toUpperCase()}`,
    `Basic ${b64(`${EMAIL}:${token}`)}`,
    `foreign ghp_${'A1b2C3d4'.repeat(5)} github_pat_11ABCDEFG0123456789_xyz lin_api_${'Zz9'.repeat(12)}`,
    `ATATT3xFfGF0${'q7'.repeat(30)}=0A1B2C3D`,
  ].join(' | ');
}

/** Foreign token-shaped strings `echoes` adds: redacted though no integration's own. */
const FOREIGN = [`ghp_${'A1b2C3d4'.repeat(5)}`, 'github_pat_11ABCDEFG0123456789_xyz', `lin_api_${'Zz9'.repeat(12)}`];

interface Run {
  err: Error;
  /** What the unit stores in `sync_units.error` (what the API returns and the dashboard shows). */
  stored: string;
  logs: string;
  /** What went to the console meanwhile (a library's own warnings). */
  console: string;
}

/** Everything written through `console` while `fn` runs. */
async function consoleOf<T>(fn: () => Promise<T>): Promise<{ value: T; text: string }> {
  const said: unknown[][] = [];
  const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((m) =>
    vi.spyOn(console, m).mockImplementation((...args: unknown[]) => void said.push(args)),
  );
  try {
    const value = await fn();
    return { value, text: said.map((args) => args.map((a) => String(a)).join(' ')).join('\n') };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

/** Runs a unit whose provider answers with `answer`; its logs at trace level. */
async function runHostile(
  run: (ctx: UnitContext) => Promise<UnitResult>,
  spec: Omit<UnitSpec, 'db' | 'clock'>,
): Promise<Run> {
  const mem = memoryLogger('trace');
  const ctx = { ...unitContext({ ...spec, ...WINDOW, db: t.db, clock: new ManualClock(T0) }), logger: mem.logger };
  const { value: err, text } = await consoleOf(() => failureOf(run(ctx)));
  mem.logger.flush();
  return { err, stored: failure(classifyError(err), err).error ?? '', logs: mem.text(), console: text };
}

/** Every message, stack and field of the error and of each cause, as one text. */
function causeChain(err: Error): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    parts.push(e.message, e.stack ?? '', JSON.stringify({ ...e }));
  }
  return parts.join('\n');
}

interface LogLine {
  level: number;
  text: string;
}

function logLines(logs: string): LogLine[] {
  return logs
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => ({ level: (JSON.parse(l) as { level: number }).level, text: l }));
}

/** What every attack must show: no leak anywhere, the status/code/summary kept, the body at debug only. */
function expectSafe(r: Run, secrets: readonly string[], shows: { status: number; code?: string; words: string }) {
  for (const secret of secrets) {
    expect(
      findLeaks(secret, { stored: r.stored, causes: causeChain(r.err), logs: r.logs, console: r.console }),
    ).toEqual([]);
  }
  for (const foreign of FOREIGN) expect(`${r.stored}\n${r.logs}\n${causeChain(r.err)}`).not.toContain(foreign);

  expect(classifyError(r.err)).toBe('provider_error');
  expect(r.stored).toContain(`HTTP ${shows.status}`);
  if (shows.code) expect(r.stored).toContain(shows.code);
  expect(r.stored).toContain(shows.words);
  expect(r.stored).toContain('[redacted]');
  expect(r.stored).not.toMatch(/[\p{Cc}\p{Cf}]/u);
  expect(r.stored).not.toContain(DEEP);
  expect(r.stored.length).toBeLessThan(600);
  const answer = r.err.cause;
  expect(answer).toBeInstanceOf(ProviderAnswerError);
  expect((answer as ProviderAnswerError).status).toBe(shows.status);
  expect((answer as ProviderAnswerError).summary.length).toBeLessThanOrEqual(SUMMARY_MAX);

  const lines = logLines(r.logs);
  const withBody = lines.filter((l) => l.text.includes(DEEP));
  expect(withBody.length).toBeGreaterThan(0);
  expect(withBody.every((l) => l.level === 20)).toBe(true); // debug
  expect(withBody.every((l) => l.text.includes('[redacted]'))).toBe(true);
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

describe('a provider’s error answer never shows the credential', () => {
  it('GitHub: a 400 whose message and errors echo the token', async () => {
    const token = canarySecret('gh');
    const gh = await hostile((_req, res) =>
      json(res, 400, {
        message: `Problems parsing the token ${token} you sent ${CONTROLS} ${echoes(token)} ${'x'.repeat(400)} ${DEEP}`,
        errors: [{ resource: 'Issue', field: 'auth', code: 'invalid', message: `rejected ${echoes(token)}` }],
        documentation_url: `https://docs.github.com/rest?token=${token}`,
      }),
    );
    const r = await runHostile((ctx) => runGithubUnit(ctx, FAST), {
      provider: 'github',
      config: { baseUrl: gh.url },
      token,
      sourceKey: 'acme/app',
      datasetKey: 'work-items',
    });
    expectSafe(r, [token], { status: 400, code: 'invalid', words: 'Problems parsing the token [redacted]' });
    expect(gh.requests()).toBe(1);
  });

  it('GitHub: a text/plain 422, with a deprecation notice quoting the token', async () => {
    const token = canarySecret('gh');
    const gh = await hostile((_req, res) =>
      res
        .writeHead(422, {
          'content-type': 'text/plain; charset=utf-8',
          deprecation: 'true',
          sunset: `never, token ${token}`,
          link: `<https://example.invalid/${token}>; rel="deprecation"`,
        })
        .end(`Unprocessable:${CONTROLS}\n${echoes(token)}\n${'y'.repeat(5000)}\n${DEEP}`),
    );
    const r = await runHostile((ctx) => runGithubUnit(ctx, FAST), {
      provider: 'github',
      config: { baseUrl: gh.url },
      token,
      sourceKey: 'acme/app',
      datasetKey: 'work-items',
    });
    expectSafe(r, [token], { status: 422, words: 'Unprocessable: raw [redacted] | token [redacted] |' });
    const deprecation = logLines(r.logs).find((l) => l.text.includes('is deprecated'));
    expect(deprecation?.level).toBe(40); // warn: said, with the token redacted
    expect(r.stored).toContain('…');
  });

  it('Linear: a GraphQL error repeating the API key', async () => {
    const key = canarySecret('lin');
    const linear = await hostile((_req, res) =>
      json(res, 400, {
        errors: [
          {
            message: `Argument Validation Error: key ${key} is not valid ${CONTROLS} ${echoes(key)} ${DEEP}`,
            extensions: { code: 'INVALID_INPUT', userPresentableMessage: `Your key ${key}` },
          },
          { message: `also ${key}` },
        ],
      }),
    );
    const r = await runHostile((ctx) => runLinearUnit(ctx, FAST), {
      provider: 'linear',
      config: { apiUrl: `${linear.url}/graphql` },
      token: key,
      sourceKey: 'ENG',
      datasetKey: 'teams',
      tier: 'reference',
    });
    expectSafe(r, [key], {
      status: 400,
      code: 'INVALID_INPUT',
      words: 'Argument Validation Error: key [redacted] is not valid',
    });
    const warned = logLines(r.logs).find((l) => l.text.includes('linear_query_failed'));
    expect(warned?.text).toContain('INVALID_INPUT');
  });

  it('Jira: a 409 echoing the Basic value (base64 of email:token) and the raw token', async () => {
    const token = canarySecret('ATATT');
    const basic = b64(`${EMAIL}:${token}`);
    const jira = await hostile((req, res) =>
      json(res, 409, {
        errorMessages: [
          `Conflict: request with ${req.headers.authorization ?? ''} ${CONTROLS} was refused`,
          `token ${token}; ${echoes(token)} ${DEEP}`,
        ],
        errors: { credential: `${EMAIL}:${token}`, header: `Basic ${basic}` },
      }),
    );
    const r = await runHostile((ctx) => runJiraUnit(ctx, FAST), {
      provider: 'jira',
      config: { siteUrl: jira.url },
      token: `${EMAIL}:${token}`,
      sourceKey: 'ENG',
      datasetKey: 'work-items',
    });
    expectSafe(r, [token, `${EMAIL}:${token}`, basic], {
      status: 409,
      words: 'Conflict: request with [redacted] was refused',
    });
  });

  it('Jira: a 200 that is not JSON, quoting the token, is refused without its text', async () => {
    const token = canarySecret('jira');
    const jira = await hostile((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(`${token} ${echoes(token)} ${DEEP}`),
    );
    const r = await runHostile((ctx) => runJiraUnit(ctx, FAST), {
      provider: 'jira',
      config: { siteUrl: jira.url },
      token: `${EMAIL}:${token}`,
      sourceKey: 'ENG',
      datasetKey: 'work-items',
    });
    for (const secret of [token, `${EMAIL}:${token}`]) {
      expect(findLeaks(secret, { stored: r.stored, causes: causeChain(r.err), logs: r.logs })).toEqual([]);
    }
    expect(r.stored).toContain('the answer is not JSON');
    expect(r.stored).toContain('HTTP 200');
    expect(
      logLines(r.logs)
        .filter((l) => l.text.includes(DEEP))
        .every((l) => l.level === 20),
    ).toBe(true);
  });
});
