/**
 * The Linear emulator: the schema it declares, validation of requests, the workspace's shape,
 * Relay pagination and filters, budget headers and the enforced budgets, faults, options parsing,
 * and data changing between runs. Our own queries validate against its schema.
 */
import { parse, validate } from 'graphql';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { ValidationError } from '../../../src/errors.js';
import { allQueries, LINEAR_PAGE_DEFAULTS } from '../../../src/providers/linear/index.js';
import {
  linearSchema,
  parseLinearEmulatorArgs,
  parseLinearFaults,
  queryComplexity,
  startLinearEmulator,
  type LinearEmulator,
} from '../../../src/emulators/linear/index.js';
import { gql, type Json } from '../../providers/linear/helpers.js';

const T0 = Date.UTC(2026, 2, 2, 12);
let emu: LinearEmulator | null = null;

afterEach(async () => {
  await emu?.close();
  emu = null;
});

const ISSUES = `query Page($first: Int!, $after: String, $teams: [String!]!, $gte: DateTimeOrDuration) {
  issues(filter: { team: { key: { in: $teams } }, updatedAt: { gte: $gte } }, orderBy: updatedAt,
         first: $first, after: $after) {
    nodes {
      id identifier updatedAt state { type } team { key }
      comments(first: 2) { nodes { id } pageInfo { hasNextPage endCursor } }
    }
    pageInfo { hasNextPage endCursor hasPreviousPage startCursor }
  }
}`;

describe('schema and our queries', () => {
  it('every query the provider sends parses and validates against the emulator schema', () => {
    const schema = linearSchema();
    const queries = allQueries();
    expect(queries.length).toBeGreaterThan(10);
    for (const q of queries) {
      const doc = parse(q.text);
      expect(validate(schema, doc).map((e) => e.message)).toEqual([]);
    }
  });

  it('with the default page sizes every query stays under the 10 000 points Linear allows one query', () => {
    const schema = linearSchema();
    const vars = { first: LINEAR_PAGE_DEFAULTS.pageSize, nested: LINEAR_PAGE_DEFAULTS.nestedPageSize };
    for (const q of allQueries()) {
      const op = parse(q.text).definitions[0] as Parameters<typeof queryComplexity>[1];
      expect(queryComplexity(schema, op, [], vars), q.name).toBeLessThan(10_000);
    }
    const family = allQueries().find((x) => x.name === 'SyncIssuesCommentsHistoryLabels')!;
    const op = parse(family.text).definitions[0] as Parameters<typeof queryComplexity>[1];
    expect(queryComplexity(schema, op, [], vars)).toBeGreaterThan(5000);
    expect(queryComplexity(schema, op, [], { first: 100, nested: 50 })).toBeGreaterThan(10_000);
  });
});

describe('Linear emulator', () => {
  it('serves the seeded workspace in Linear shapes, deterministic for a seed', async () => {
    emu = await startLinearEmulator({ seed: 7, now: new Date(T0) });
    const r = await gql(emu, '{ teams { nodes { id key name } pageInfo { hasNextPage } } viewer { id email } }');
    expect(r.status).toBe(200);
    expect(r.body.data.teams.nodes.map((t: Json) => t.key).sort()).toEqual(['DES', 'ENG']);
    expect(r.body.data.teams.pageInfo).toEqual({ hasNextPage: false });
    const again = await startLinearEmulator({ seed: 7, now: new Date(T0), token: emu.token });
    try {
      expect(again.data.issues.map((i) => i.id)).toEqual(emu.data.issues.map((i) => i.id));
      expect(again.token).toBe(emu.token);
    } finally {
      await again.close();
    }
    const other = await startLinearEmulator({ seed: 8, now: new Date(T0) });
    expect(other.data.issues[0]!.id).not.toBe(emu.data.issues[0]!.id);
    await other.close();
    // Every issue's state history ends in its current state, and startedAt is the first move into started.
    for (const i of emu.data.issues) {
      const moves = i.history.filter((h) => h.toStateId);
      if (moves.length > 0) expect(moves[moves.length - 1]!.toStateId).toBe(i.stateId);
    }
  });

  it('rejects an unknown field, a bad query and a missing key, as GraphQL errors', async () => {
    emu = await startLinearEmulator({ now: new Date(T0) });
    const unknown = await gql(emu, '{ issues { nodes { id nonsense } } }');
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(unknown.body.errors[0].message).toMatch(/nonsense/);
    const syntax = await gql(emu, '{ issues { ');
    expect(syntax.body.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
    const anonymous = await gql(emu, '{ viewer { id } }', {}, null);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors[0].extensions).toMatchObject({ code: 'AUTHENTICATION_ERROR' });
    // The OAuth token is accepted as a bearer only; the API key only bare.
    expect((await gql(emu, '{ viewer { id } }', {}, `Bearer ${emu.oauthToken}`)).status).toBe(200);
    expect((await gql(emu, '{ viewer { id } }', {}, `Bearer ${emu.token}`)).status).toBe(401);
    expect(emu.requestLog.every((e) => !JSON.stringify(e).includes(emu!.token))).toBe(true);
  });

  it('pages issues by updatedAt, newest first, with Relay cursors: every matching issue once, in order', async () => {
    emu = await startLinearEmulator({ now: new Date(T0), scale: { teams: 2, issues: 260 } });
    const gte = new Date(T0 - 20 * 86_400_000).toISOString();
    const seen: Json[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const r = await gql(emu, ISSUES, { first: 20, after, teams: ['ENG'], gte });
      expect(r.status).toBe(200);
      const conn = r.body.data.issues;
      seen.push(...conn.nodes);
      pages++;
      if (!conn.pageInfo.hasNextPage) break;
      after = conn.pageInfo.endCursor;
    }
    const expected = emu.data.issues.filter(
      (i) => emu!.data.teams.find((t) => t.id === i.teamId)!.key === 'ENG' && i.updatedAt >= Date.parse(gte),
    );
    expect(pages).toBeGreaterThanOrEqual(5);
    expect(seen.map((i) => i.id)).toEqual(expected.map((i) => i.id).reverse()); // newest first, as Linear
    expect(seen.every((i) => i.team.key === 'ENG')).toBe(true);
    const times = seen.map((i) => Date.parse(i.updatedAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('reports both budgets on every response and enforces the request budget with RATELIMITED', async () => {
    const clock = new ManualClock(T0);
    emu = await startLinearEmulator({ clock, rateLimit: { limit: 3, windowSeconds: 60 } });
    const first = await gql(emu, '{ viewer { id } }');
    expect(first.headers.get('x-ratelimit-requests-limit')).toBe('3');
    expect(first.headers.get('x-ratelimit-requests-remaining')).toBe('2');
    // A leaky bucket refilled at 3 per 60 s: full again 20 s after one request.
    expect(first.headers.get('x-ratelimit-requests-reset')).toBe(String(T0 + 20_000));
    expect(Number(first.headers.get('x-ratelimit-complexity-remaining'))).toBeGreaterThan(0);
    expect(first.headers.get('x-complexity')).toBe('2');
    await gql(emu, '{ viewer { id } }');
    await gql(emu, '{ viewer { id } }');
    const limited = await gql(emu, '{ viewer { id } }');
    expect(limited.status).toBe(400);
    expect(limited.body.errors[0].extensions.code).toBe('RATELIMITED');
    expect(limited.headers.get('x-ratelimit-requests-remaining')).toBe('0');
    expect(limited.headers.get('retry-after')).toBeNull(); // Linear's 400 answer
    clock.set(T0 + 19_999);
    expect((await gql(emu, '{ viewer { id } }')).status).toBe(400); // not one whole request refilled yet
    clock.set(T0 + 20_000); // one request refilled, not the whole bucket (no fixed window)
    expect((await gql(emu, '{ viewer { id } }')).status).toBe(200);
    expect((await gql(emu, '{ viewer { id } }')).status).toBe(400);
  });

  it('answers a spent budget with 429 and retry-after when asked; endpoint buckets report their own', async () => {
    const clock = new ManualClock(T0);
    emu = await startLinearEmulator({
      clock,
      rateLimit: {
        requests: { limit: 100, windowSeconds: 60 },
        endpoints: { issues: { limit: 2, windowSeconds: 60 } },
        status: 429,
      },
    });
    const q = '{ issues(first: 1) { nodes { id } } }';
    const first = await gql(emu, q);
    expect(first.headers.get('x-ratelimit-endpoint-name')).toBe('issues');
    expect(first.headers.get('x-ratelimit-endpoint-requests-limit')).toBe('2');
    expect(first.headers.get('x-ratelimit-endpoint-requests-remaining')).toBe('1');
    expect(first.headers.get('x-ratelimit-endpoint-requests-reset')).toBe(String(T0 + 30_000));
    expect((await gql(emu, '{ viewer { id } }')).headers.get('x-ratelimit-endpoint-name')).toBeNull();
    await gql(emu, q);
    const limited = await gql(emu, q);
    expect(limited.status).toBe(429);
    expect(limited.body.errors[0].extensions.code).toBe('RATELIMITED');
    expect(limited.headers.get('retry-after')).toBe('30'); // one request of 2 per 60 s refills in 30 s
    expect(Number(limited.headers.get('x-ratelimit-requests-remaining'))).toBeGreaterThan(90); // not the spent one
    expect((await gql(emu, '{ viewer { id } }')).status).toBe(200); // other fields are not limited
    clock.set(T0 + 30_000);
    expect((await gql(emu, q)).status).toBe(200);
  });

  it('enforces the complexity budget and the per-query maximum', async () => {
    const clock = new ManualClock(T0);
    emu = await startLinearEmulator({
      clock,
      rateLimit: { complexity: { limit: 500, windowSeconds: 60 }, maxQueryComplexity: 400 },
    });
    const big = await gql(emu, '{ issues(first: 250) { nodes { id title comments(first: 50) { nodes { id } } } } }');
    expect(big.body.errors[0].extensions.code).toBe('QUERY_TOO_COMPLEX');
    const q = '{ issues(first: 100) { nodes { id title } } }';
    const ok = await gql(emu, q);
    expect(ok.status).toBe(200);
    const cost = Number(ok.headers.get('x-complexity'));
    expect(cost).toBeGreaterThan(100);
    while ((await gql(emu, q)).status === 200);
    const limited = await gql(emu, q);
    expect(limited.body.errors[0].extensions.code).toBe('RATELIMITED');
    expect(Number(limited.headers.get('x-ratelimit-complexity-remaining'))).toBeLessThan(cost);
  });

  it('injects 429, RATELIMITED, complexity, 401, 5xx and slow answers', async () => {
    const clock = new ManualClock(T0);
    emu = await startLinearEmulator({
      clock,
      faults: parseLinearFaults(
        'too-many-requests:count=1:resetSeconds=0,ratelimited:count=1:status=200:resetSeconds=0,complexity:count=1,' +
          'unauthenticated:count=1,server-error:count=1:status=503',
      ),
    });
    const statuses: [number, string | undefined][] = [];
    for (let i = 0; i < 6; i++) {
      if (i === 5) emu.setFaults(parseLinearFaults('slow:count=1:delay=30'));
      clock.set(T0 + i * 60_000); // an injected limit empties the bucket: a minute refills it
      const r = await gql(emu, '{ viewer { id } }');
      statuses.push([r.status, r.body?.errors?.[0]?.extensions?.code]);
    }
    expect(statuses).toEqual([
      [429, 'RATELIMITED'],
      [200, 'RATELIMITED'],
      [400, 'QUERY_TOO_COMPLEX'],
      [401, 'AUTHENTICATION_ERROR'],
      [503, undefined],
      [200, undefined],
    ]);
    expect(emu.requestLog.map((e) => e.fault)).toEqual([
      'too-many-requests',
      'ratelimited',
      'complexity',
      'unauthenticated',
      'server-error',
      'slow',
    ]);
  });

  it('mutate() changes issues at the clock time: an updatedAt filter finds exactly them', async () => {
    const clock = new ManualClock(T0);
    emu = await startLinearEmulator({ clock });
    clock.set(T0 + 3_600_000);
    const m = emu.mutate();
    expect(m.updated.length + m.created.length).toBeGreaterThan(1);
    const r = await gql(
      emu,
      `query($gte: DateTimeOrDuration) { issues(first: 250, filter: { updatedAt: { gte: $gte } }) { nodes { id } } }`,
      { gte: new Date(T0).toISOString() },
    );
    expect(new Set(r.body.data.issues.nodes.map((i: Json) => i.id))).toEqual(new Set([...m.updated, ...m.created]));
  });

  it('builds the bench workspace of 20 000 issues', async () => {
    emu = await startLinearEmulator({ now: new Date(T0), scale: 'bench' });
    expect(emu.data.issues.length).toBe(20_000);
    const r = await gql(emu, '{ issues(first: 5, orderBy: updatedAt) { nodes { id } pageInfo { hasNextPage } } }');
    expect(r.body.data.issues.pageInfo.hasNextPage).toBe(true);
  });

  it('parses command-line options, naming a bad one', () => {
    expect(
      parseLinearEmulatorArgs({
        port: '0',
        seed: '3',
        scale: 'issues=500,teams=3',
        rateLimit: '100/10s',
        complexityLimit: '50000/60s',
        faults: 'ratelimited:count=2',
      }),
    ).toMatchObject({
      port: 0,
      seed: 3,
      scale: { issues: 500, teams: 3 },
      rateLimit: { requests: { limit: 100, windowSeconds: 10 }, complexity: { limit: 50_000, windowSeconds: 60 } },
      faults: [{ kind: 'ratelimited', count: 2 }],
    });
    expect(() => parseLinearEmulatorArgs({ rateLimit: 'lots' })).toThrow(ValidationError);
    expect(() => parseLinearEmulatorArgs({ scale: 'bogus=1' })).toThrow(/scale/);
    expect(() => parseLinearEmulatorArgs({ faults: 'explode' })).toThrow(/faults\[0\]\.kind/);
    // `syncrelay emulate linear` passes --partial-rate 0.02 unless told otherwise.
    expect(
      parseLinearEmulatorArgs({
        faults: 'slow:count=1',
        partialRate: '0.02',
        endpointLimit: 'issues=30/60s',
        churn: '2',
      }),
    ).toMatchObject({
      faults: [{ kind: 'slow' }, { kind: 'partial', operation: 'Issue', probability: 0.02 }],
      rateLimit: { endpoints: { issues: { limit: 30, windowSeconds: 60 } } },
      churn: { editsPerSecond: 2 },
    });
    expect(parseLinearEmulatorArgs({ partialRate: '0' }).faults).toBeUndefined();
    expect(() => parseLinearEmulatorArgs({ partialRate: 'often' })).toThrow(/partialRate/);
  });
});
