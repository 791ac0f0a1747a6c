/**
 * The GitHub emulator's primary rate limit (headers, exhaustion, reset on an injected clock) and
 * each injectable fault's exact status, headers and body; the request log that proves them.
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/errors.js';
import { parseFaults, parseRateLimit, type GithubEmulator } from '../../../src/emulators/github/index.js';
import { clockedEmulators, get } from './helpers.js';

const START = Date.UTC(2026, 5, 1, 12, 0, 0, 250);
const SCALE = { repos: 1, issues: 20, pulls: 5, directCommits: 5, members: 3, days: 10 };
const PATH = '/repos/emulated-org/api-gateway/issues';
const RATE_DOCS = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';

const emulator = clockedEmulators(START, { seed: 5, scale: SCALE });

function rate(h: Headers) {
  return {
    limit: h.get('x-ratelimit-limit'),
    remaining: h.get('x-ratelimit-remaining'),
    reset: h.get('x-ratelimit-reset'),
    used: h.get('x-ratelimit-used'),
    resource: h.get('x-ratelimit-resource'),
  };
}

describe('primary rate limit', () => {
  it('counts down per token, refuses with 403 until the reset second, then opens a new window', async () => {
    const { e, clock } = await emulator({ rateLimit: '3/10s' });
    const reset = String(Math.ceil((START + 10_000) / 1000));
    for (let i = 1; i <= 3; i++) {
      const r = await get(e, PATH);
      expect(r.status).toBe(200);
      expect(rate(r.headers)).toEqual({
        limit: '3',
        remaining: String(3 - i),
        reset,
        used: String(i),
        resource: 'core',
      });
    }
    const refused = await get(e, PATH);
    expect(refused.status).toBe(403);
    expect(rate(refused.headers)).toMatchObject({ remaining: '0', reset, used: '3' });
    expect(refused.body.message).toMatch(/^API rate limit exceeded for user ID \d+\./);
    expect(refused.body).toMatchObject({ documentation_url: RATE_DOCS, status: '403' });
    expect(refused.headers.get('retry-after')).toBeNull();

    const other = e.tokens.find((t) => t.id === 'public-only')!.token;
    expect((await get(e, PATH, other)).status).toBe(200);
    const overview = await get(e, '/rate_limit');
    expect(overview.status).toBe(200);
    expect(overview.body.rate).toEqual({ limit: 3, remaining: 0, reset: Number(reset), used: 3 });
    expect(overview.body.resources.core).toEqual(overview.body.rate);

    clock.set(Number(reset) * 1000 - 1);
    expect((await get(e, PATH)).status).toBe(403);
    clock.set(Number(reset) * 1000);
    const after = await get(e, PATH);
    expect(after.status).toBe(200);
    expect(rate(after.headers)).toMatchObject({ remaining: '2', used: '1', reset: String(Number(reset) + 10) });
    expect(e.log.filter((l) => l.tokenId === 'demo').map((l) => l.status)).toEqual([200, 200, 200, 403, 200, 403, 200]);
  });

  it('answers 429 when configured to, and /rate_limit itself is free', async () => {
    const { e } = await emulator({ rateLimit: { limit: 1, windowSeconds: 60, status: 429 } });
    expect((await get(e, '/rate_limit')).headers.get('x-ratelimit-remaining')).toBe('1');
    expect((await get(e, PATH)).status).toBe(200);
    const refused = await get(e, PATH);
    expect(refused.status).toBe(429);
    expect(refused.body.status).toBe('429');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('a spent window answers before faults are drawn, so a counted fault waits for the next window', async () => {
    const { e, clock } = await emulator({ rateLimit: '1/10s' });
    expect((await get(e, PATH)).status).toBe(200);
    e.setFaults([{ kind: 'not-found', count: 1 }]);
    const refused = await get(e, PATH);
    expect(refused.status).toBe(403);
    clock.set(Number(refused.headers.get('x-ratelimit-reset')) * 1000);
    expect((await get(e, PATH)).status).toBe(404);
    expect((await get(e, PATH)).status).toBe(403);
  });

  it('parses R/WINDOW forms and names the option when wrong', () => {
    expect(parseRateLimit('5000/3600s')).toEqual({ limit: 5000, windowSeconds: 3600, status: 403 });
    expect(parseRateLimit('100/10s:429')).toEqual({ limit: 100, windowSeconds: 10, status: 429 });
    expect(parseRateLimit('600/5m').windowSeconds).toBe(300);
    expect(() => parseRateLimit('lots')).toThrow(ValidationError);
    expect(() => parseRateLimit('0/10s')).toThrow(/rateLimit/);
  });
});

describe('faults', () => {
  it('secondary-limit: 403 with and without retry-after, then normal answers', async () => {
    const { e } = await emulator({
      faults: [
        { kind: 'secondary-limit', count: 1, retryAfter: 7 },
        { kind: 'secondary-limit', count: 1, path: '/pulls' },
      ],
    });
    const first = await get(e, PATH);
    expect(first.status).toBe(403);
    expect(first.headers.get('retry-after')).toBe('7');
    expect(first.body.message).toMatch(/^You have exceeded a secondary rate limit\. Please wait a few minutes/);
    expect(first.body).toMatchObject({ documentation_url: `${RATE_DOCS}#about-secondary-rate-limits`, status: '403' });
    expect(first.headers.get('x-ratelimit-remaining')).not.toBe('0');
    expect((await get(e, PATH)).status).toBe(200);
    const pulls = await get(e, '/repos/emulated-org/api-gateway/pulls');
    expect(pulls.status).toBe(403);
    expect(pulls.headers.get('retry-after')).toBeNull();
    expect((await get(e, '/repos/emulated-org/api-gateway/pulls')).status).toBe(200);
    expect(e.log.map((l) => l.fault)).toEqual(['secondary-limit', null, 'secondary-limit', null]);
  });

  it('too-many-requests: 429 with the secondary-limit message and retry-after', async () => {
    const { e } = await emulator({ faults: [{ kind: 'too-many-requests', count: 1, retryAfter: 2 }] });
    const r = await get(e, PATH);
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('2');
    expect(r.body.message).toMatch(/secondary rate limit/);
  });

  it('bad-credentials, forbidden and not-found answer with GitHub bodies', async () => {
    const { e } = await emulator({
      faults: [
        { kind: 'bad-credentials', count: 1 },
        { kind: 'forbidden', count: 1, path: '/issues' },
        { kind: 'not-found', count: 1, path: '/pulls' },
      ],
    });
    const unauthorized = await get(e, '/orgs/emulated-org/repos');
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.body).toEqual({
      message: 'Bad credentials',
      documentation_url: 'https://docs.github.com/rest',
      status: '401',
    });
    const forbidden = await get(e, PATH);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({
      message: 'Resource not accessible by personal access token',
      documentation_url: 'https://docs.github.com/rest/issues/issues#list-repository-issues',
      status: '403',
    });
    expect(forbidden.headers.get('x-accepted-github-permissions')).toBe('issues=read');
    const missing = await get(e, '/repos/emulated-org/api-gateway/pulls');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      message: 'Not Found',
      documentation_url: 'https://docs.github.com/rest/pulls/pulls#list-pull-requests',
      status: '404',
    });
  });

  it('server-error: 502 HTML, 503 and 500 JSON', async () => {
    const { e } = await emulator({
      faults: [
        { kind: 'server-error', count: 1, status: 502 },
        { kind: 'server-error', count: 1, status: 503 },
        { kind: 'server-error', count: 1, status: 500 },
      ],
    });
    const bad = await get(e, PATH);
    expect(bad.status).toBe(502);
    expect(bad.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(bad.text).toContain('Unicorn!');
    const unavailable = await get(e, PATH);
    expect(unavailable.status).toBe(503);
    expect(unavailable.body.message).toMatch(/^No server is currently available to service your request/);
    const error = await get(e, PATH);
    expect(error.status).toBe(500);
    expect(error.body).toEqual({ message: 'Server Error' });
    expect((await get(e, PATH)).status).toBe(200);
  });

  it('primary-limit drains the token’s window: every request is refused until the reset', async () => {
    const { e, clock } = await emulator({
      rateLimit: '100/60s',
      faults: [{ kind: 'primary-limit', count: 1, resetSeconds: 5 }],
    });
    const first = await get(e, PATH);
    expect(first.status).toBe(403);
    const reset = Number(first.headers.get('x-ratelimit-reset'));
    expect(reset).toBe(Math.ceil((START + 5000) / 1000));
    expect(first.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(first.body.message).toMatch(/^API rate limit exceeded/);
    expect((await get(e, PATH)).status).toBe(403);
    clock.set(reset * 1000);
    const after = await get(e, PATH);
    expect(after.status).toBe(200);
    expect(after.headers.get('x-ratelimit-remaining')).toBe('99');
  });

  it('slow delays the answer; a path filter leaves other paths alone', async () => {
    const { e } = await emulator({ faults: [{ kind: 'slow', delayMs: 150, path: '/issues' }] });
    const t0 = performance.now();
    expect((await get(e, PATH)).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(145);
    expect((await get(e, '/repos/emulated-org/api-gateway/labels')).status).toBe(200);
    expect(e.log.map((l) => l.fault)).toEqual(['slow', null]);
  });

  it('probability draws are repeatable from the seed; setFaults replaces them', async () => {
    const statuses = async (e: GithubEmulator) => {
      const out: number[] = [];
      for (let i = 0; i < 60; i++) out.push((await get(e, '/repos/emulated-org/api-gateway/labels')).status);
      return out;
    };
    const faults = [{ kind: 'server-error' as const, probability: 0.3, status: 503 }];
    const a = await emulator({ faults });
    const b = await emulator({ faults });
    const first = await statuses(a.e);
    expect(await statuses(b.e)).toEqual(first);
    const failed = first.filter((s) => s === 503).length;
    expect(failed).toBeGreaterThan(5);
    expect(failed).toBeLessThan(40);
    a.e.setFaults([]);
    expect((await statuses(a.e)).every((s) => s === 200)).toBe(true);
    expect(() => a.e.setFaults([{ kind: 'server-error', status: 418 }])).toThrow(/faults\[0\]\.status/);
  });

  it('parses the --faults text form and JSON, naming the bad entry', () => {
    expect(
      parseFaults('secondary-limit:count=2:retryAfter=3,server-error:p=0.05:status=503,slow:delay=200:path=/pulls'),
    ).toEqual([
      { kind: 'secondary-limit', count: 2, retryAfter: 3 },
      { kind: 'server-error', probability: 0.05, status: 503 },
      { kind: 'slow', delayMs: 200, path: '/pulls' },
    ]);
    expect(parseFaults('[{"kind":"not-found","count":1}]')).toEqual([{ kind: 'not-found', count: 1 }]);
    expect(() => parseFaults('meltdown')).toThrow(/faults\[0\]\.kind/);
    expect(() => parseFaults('slow:delay=abc')).toThrow(/faults\[0\]\.delayMs/);
    expect(() => parseFaults('slow:speed=1')).toThrow(/faults\[0\]/);
    expect(() => parseFaults('not-found:p=0.5:count=2')).toThrow(/not both/);
  });
});

describe('request log', () => {
  it('records method, path, token id (never the token), status and rate state', async () => {
    const { e } = await emulator({ rateLimit: '2/60s' });
    await get(e, `${PATH}?per_page=2`);
    await get(e, PATH, null);
    await get(e, PATH);
    await get(e, PATH);
    expect(e.log.map((l) => [l.method, l.path, l.tokenId, l.status, l.rate.remaining])).toEqual([
      ['GET', `${PATH}?per_page=2`, 'demo', 200, 1],
      ['GET', PATH, null, 401, 59],
      ['GET', PATH, 'demo', 200, 0],
      ['GET', PATH, 'demo', 403, 0],
    ]);
    expect(e.log[0]!.at).toBe(new Date(START).toISOString());
    const text = JSON.stringify(e.log);
    for (const t of e.tokens) expect(text).not.toContain(t.token);
  });
});
