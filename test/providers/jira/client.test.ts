/** The Jira client with an injected fetch: headers sent, failures classified, aborts honoured. */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { classifyError, NonRetryableError, RateLimitError } from '../../../src/errors.js';
import { createJiraClient, authorizationFor } from '../../../src/providers/jira/index.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const SECRET = 'me@acme.io:ATATT-very-secret-token';

type Answer = { status: number; body: string; headers?: Record<string, string> } | Error;

function client(answers: Answer[], signal = new AbortController().signal) {
  const seen: { url: string; init: RequestInit }[] = [];
  const fake = (async (url: string | URL | Request, init?: RequestInit) => {
    seen.push({ url: url instanceof Request ? url.url : url.toString(), init: init ?? {} });
    const a = answers.shift() ?? { status: 200, body: '{}' };
    if (a instanceof Error) throw a;
    return new Response(a.body, { status: a.status, headers: a.headers });
  }) as typeof fetch;
  const jira = createJiraClient({
    siteUrl: 'https://acme.atlassian.net',
    authorization: authorizationFor(SECRET, 'jira integration "acme"'),
    subject: 'jira integration "acme"',
    clock: new ManualClock(T0),
    signal,
    logger: pino({ level: 'silent' }),
    budget: null,
    retry: { baseDelayMs: 1, maxDelayMs: 2 },
    fetch: fake,
  });
  return { jira, seen };
}

async function failure(p: Promise<unknown>): Promise<Error> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  expect((err as Error).message).not.toContain('ATATT-very-secret-token');
  return err as Error;
}

describe('Jira client', () => {
  it('sends basic auth, JSON bodies and repeated query keys', async () => {
    const { jira, seen } = client([
      { status: 200, body: '{"ok":1}' },
      { status: 200, body: '[]' },
    ]);
    expect(await jira.post('/rest/api/3/search/jql', { jql: 'x' })).toEqual({ ok: 1 });
    await jira.get('/rest/api/3/project/search', { keys: ['A', 'B'], startAt: 0, skip: undefined });
    const headers = seen[0]!.init.headers as Record<string, string>;
    expect(headers.authorization).toBe(`Basic ${Buffer.from(SECRET).toString('base64')}`);
    expect(headers['content-type']).toBe('application/json');
    expect(seen[0]!.init.body).toBe('{"jql":"x"}');
    expect(seen[1]!.url).toBe('https://acme.atlassian.net/rest/api/3/project/search?keys=A&keys=B&startAt=0');
  });

  it('a 400 is a provider_error carrying Jira’s message; a non-JSON answer too', async () => {
    const body = JSON.stringify({ errorMessages: ["Field 'x' does not exist."], errors: { jql: 'bad' } });
    const bad = await failure(client([{ status: 400, body }]).jira.get('/rest/api/3/search/jql'));
    expect((bad as NonRetryableError).category).toBe('provider_error');
    expect(bad.message).toContain("Field 'x' does not exist.");
    expect(bad.message).toContain('GET /rest/api/3/search/jql');
    const html = await failure(client([{ status: 200, body: '<html>' }]).jira.get('/rest/api/3/myself'));
    expect(classifyError(html)).toBe('provider_error');
  });

  it('network failures and 5xx are retried in place, then provider_error', async () => {
    const flaky = client([
      new TypeError('fetch failed'),
      { status: 502, body: 'bad gateway' },
      { status: 200, body: '1' },
    ]);
    expect(await flaky.jira.get('/x')).toBe(1);
    expect(flaky.seen).toHaveLength(3);
    const down = client(Array.from({ length: 4 }, () => ({ status: 503, body: '' })));
    const err = await failure(down.jira.get('/x'));
    expect((err as NonRetryableError).category).toBe('provider_error');
    expect(down.seen).toHaveLength(4);
  });

  it('401, 403 → auth; 404 → not_found; 429 → RateLimitError, none retried', async () => {
    for (const [status, category] of [
      [401, 'auth'],
      [403, 'auth'],
      [404, 'not_found'],
    ] as const) {
      const c = client([{ status, body: '{"errorMessages":[],"errors":{}}' }]);
      const err = await failure(c.jira.get('/rest/api/3/project/ENG'));
      expect(classifyError(err)).toBe(category);
      expect(err.message).toContain('jira integration "acme"');
      expect(c.seen).toHaveLength(1);
    }
    const c = client([{ status: 429, body: '', headers: { 'retry-after': '12' } }]);
    const err = await failure(c.jira.get('/x'));
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).liftsAt!.getTime()).toBe(T0 + 12_000);
    expect(c.seen).toHaveLength(1);
  });

  it('an aborted unit stops its request with the abort reason', async () => {
    const ac = new AbortController();
    const jira = createJiraClient({
      siteUrl: 'https://acme.atlassian.net',
      authorization: 'Bearer t',
      subject: 's',
      clock: new ManualClock(T0),
      signal: ac.signal,
      logger: pino({ level: 'silent' }),
      budget: null,
      fetch: (_u: unknown, init?: RequestInit) =>
        new Promise((_resolve, reject) => {
          const abort = () => reject(new DOMException('aborted', 'AbortError'));
          if (init?.signal?.aborted) abort();
          init?.signal?.addEventListener('abort', abort);
        }),
    });
    const reason = new Error('unit cancelled');
    const p = jira.get('/slow');
    setTimeout(() => ac.abort(reason), 20);
    await expect(p).rejects.toBe(reason);
  });
});
