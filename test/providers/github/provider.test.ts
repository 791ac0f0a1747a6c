/**
 * The GitHub provider against a local GitHub stand-in (fakeGithub.ts) on 127.0.0.1, writing through
 * the normalized sink into the normalized tables of the test's own database.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { classifyError, LeaseLostError, NonRetryableError } from '../../../src/errors.js';
import {
  createGithubProvider,
  runGithubUnit,
  type GithubProviderOptions,
} from '../../../src/providers/github/index.js';
import { validateIntegration } from '../../../src/planning/integrations.js';
import { defaultRegistry } from '../../../src/providers/registry.js';
import type { UnitContext } from '../../../src/sdk/types.js';
import type { TestDatabase } from '../../helpers/pg.js';
import { FakeGithub, type FakeIssue } from './fakeGithub.js';
import { count, rows, TestGuard, TOKEN, unitContext, useGithubDatabase, type UnitSpec } from './support.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const FAST: GithubProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 } };

const database = useGithubDatabase();
let t: TestDatabase;
let clock: ManualClock;
let gh: FakeGithub;

beforeEach(async () => {
  t = database();
  clock = new ManualClock(T0);
  gh = await new FakeGithub({ token: TOKEN, clock }).start();
});
afterEach(async () => {
  await gh.close();
});

function ctx(spec: Partial<UnitSpec> & { datasetKey: string }): UnitContext & { lease: TestGuard } {
  return unitContext({ db: t.db, clock, baseUrl: gh.url, ...spec });
}

function issue(n: number, updatedMs: number, extra: Partial<FakeIssue> = {}): FakeIssue {
  return {
    number: n,
    title: `issue ${n}`,
    state: 'open',
    created_at: iso(T0 - 60 * DAY),
    updated_at: iso(updatedMs),
    ...extra,
  };
}

async function failureOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the unit to fail');
}

describe('GitHub provider: reading and writing', () => {
  it('reads issues across 6 pages, leaves pull requests out, and maps them onto work_items', async () => {
    for (let n = 1; n <= 560; n++) gh.issues.push(issue(n, T0 - 10 * DAY + n * 60_000, { pull: n % 10 === 0 }));
    gh.issues[0] = issue(1, T0 - 10 * DAY, { labels: ['bug', 'In Progress'], assignees: ['dev1'] });
    gh.issues[1] = issue(2, T0 - 10 * DAY, { state: 'closed', state_reason: 'not_planned', closed_at: iso(T0) });
    gh.issues[2] = issue(3, T0 - 10 * DAY, { state: 'closed', state_reason: 'completed', closed_at: iso(T0 - DAY) });
    const c = ctx({ datasetKey: 'work-items', mode: 'backfill', since: new Date(T0 - 20 * DAY), before: new Date(T0) });
    const result = await runGithubUnit(c, FAST);

    expect(gh.requests('/repos/acme/app/issues')).toHaveLength(6);
    expect(result).toMatchObject({ items: 504, touchedSurfaces: ['work_items'] });
    expect(await count(t.db, 'work_items')).toBe(504);
    expect(c.lease.writes).toBe(6); // one fenced write per page
    const byNumber = new Map((await rows<Record<string, unknown>>(t.db, 'work_items')).map((r) => [r.number, r]));
    expect(byNumber.get('1')).toMatchObject({
      external_id: 'acme/app#1',
      status: 'in_progress',
      labels: ['bug', 'In Progress'],
      assignees: ['dev1'],
      container: 'acme/app',
      provider: 'github',
    });
    expect(byNumber.get('2')).toMatchObject({ status: 'cancelled', completed_at: new Date(T0) });
    expect(byNumber.get('3')).toMatchObject({ status: 'done', completed_at: new Date(T0 - DAY) });
    expect(byNumber.has('10')).toBe(false);
  });

  it('a backfill reads [since, before): items updated at or after before are left to later units', async () => {
    gh.issues.push(issue(1, T0 - 5 * DAY), issue(2, T0 - DAY), issue(3, T0), issue(4, T0 + DAY));
    const c = ctx({ datasetKey: 'work-items', since: new Date(T0 - 2 * DAY), before: new Date(T0) });
    expect(await runGithubUnit(c, FAST)).toMatchObject({ items: 1 });
    expect((await rows<{ number: string }>(t.db, 'work_items')).map((r) => r.number)).toEqual(['2']);
  });

  it('incremental after a backfill, with items updated in between: no gap, no duplicate', async () => {
    for (let n = 1; n <= 150; n++) gh.issues.push(issue(n, T0 - 3 * DAY + n * 60_000));
    const backfill = ctx({ datasetKey: 'work-items', since: new Date(T0 - 7 * DAY), before: new Date(T0) });
    expect(await runGithubUnit(backfill, FAST)).toMatchObject({ items: 150 });

    clock.set(T0 + 3600_000);
    for (const n of [5, 77, 150])
      Object.assign(gh.issues[n - 1]!, { title: `edited ${n}`, updated_at: iso(T0 + 60_000) });
    gh.issues.push(issue(151, T0 + 120_000), issue(152, T0 + 180_000));
    const incremental = ctx({
      datasetKey: 'work-items',
      mode: 'incremental',
      since: new Date(T0),
      before: clock.now(),
    });
    const result = await runGithubUnit(incremental, FAST);

    expect(result.items).toBe(5);
    expect(result.watermark).toBeUndefined(); // read to the end: the engine moves it to `before`
    expect(gh.requests('/repos/acme/app/issues').at(-1)!.path).toContain(
      `since=${encodeURIComponent(new Date(T0).toISOString())}`,
    );
    const all = await rows<{ number: string; title: string }>(t.db, 'work_items');
    expect(all).toHaveLength(152);
    expect(new Set(all.map((r) => r.number)).size).toBe(152);
    expect(
      all
        .filter((r) => r.title.startsWith('edited'))
        .map((r) => r.number)
        .sort(),
    ).toEqual(['150', '5', '77']);
  });

  it('an incremental unit that stops after maxPages moves its watermark only to what it read', async () => {
    for (let n = 1; n <= 250; n++) gh.issues.push(issue(n, T0 - 3 * DAY + n * 60_000));
    const since = new Date(T0 - 4 * DAY);
    const first = await runGithubUnit(
      ctx({ datasetKey: 'work-items', mode: 'incremental', since, before: new Date(T0) }),
      { ...FAST, maxPages: 2 },
    );
    expect(first.items).toBe(200);
    expect(first.watermark).toEqual(new Date(T0 - 3 * DAY + 200 * 60_000));
    const second = await runGithubUnit(
      ctx({ datasetKey: 'work-items', mode: 'incremental', since: first.watermark!, before: new Date(T0) }),
      { ...FAST, maxPages: 2 },
    );
    expect(second.items).toBe(51); // #200 again (since is inclusive), then #201–#250
    expect(await count(t.db, 'work_items')).toBe(250);
  });

  it('a worker killed mid-pagination: the retry upserts every item again without duplicates', async () => {
    for (let n = 1; n <= 430; n++) gh.issues.push(issue(n, T0 - DAY + n * 1000));
    const spec = { datasetKey: 'work-items', since: new Date(T0 - 2 * DAY), before: new Date(T0) };
    const dying = new TestGuard('u-kill');
    dying.loseAfter = 2;
    expect(await failureOf(runGithubUnit(ctx({ ...spec, guard: dying }), FAST))).toBeInstanceOf(LeaseLostError);
    expect(await count(t.db, 'work_items')).toBe(200);
    const firstSeen = await rows<{ external_id: string; first_seen_at: Date }>(t.db, 'work_items');

    expect(await runGithubUnit(ctx(spec), FAST)).toMatchObject({ items: 430 });
    expect(await runGithubUnit(ctx(spec), FAST)).toMatchObject({ items: 430 });
    expect(await count(t.db, 'work_items')).toBe(430);
    const again = new Map(
      (await rows<{ external_id: string; first_seen_at: Date }>(t.db, 'work_items')).map((r) => [
        r.external_id,
        r.first_seen_at.getTime(),
      ]),
    );
    for (const r of firstSeen) expect(again.get(r.external_id)).toBe(r.first_seen_at.getTime());
  });

  it('a lease lost mid-unit stops it: nothing is written after the loss', async () => {
    for (let n = 1; n <= 500; n++) gh.issues.push(issue(n, T0 - DAY + n * 1000));
    const guard = new TestGuard('u-lost');
    guard.loseAfter = 2;
    const c = ctx({ datasetKey: 'work-items', since: new Date(T0 - 2 * DAY), before: new Date(T0), guard });
    expect(await failureOf(runGithubUnit(c, FAST))).toBeInstanceOf(LeaseLostError);
    expect(await count(t.db, 'work_items')).toBe(200);
    expect(gh.requests('/repos/acme/app/issues')).toHaveLength(3); // no page asked for after the loss
  });

  it('pull requests: read through the issues list in the window, each with its detail figures', async () => {
    for (let n = 1; n <= 8; n++) {
      gh.pulls.push({
        number: n,
        title: `pr ${n}`,
        state: n % 2 ? 'closed' : 'open',
        merged_at: n === 1 ? iso(T0 - 2 * DAY) : null,
        created_at: iso(T0 - 30 * DAY),
        updated_at: iso(T0 - n * DAY),
        additions: n * 10,
        reviews: [{ id: 700 + n, state: 'APPROVED', user: 'rev', submitted_at: iso(T0 - n * DAY) }],
      });
    }
    const window = { since: new Date(T0 - 4.5 * DAY), before: new Date(T0) };
    expect(await runGithubUnit(ctx({ datasetKey: 'pull-requests', ...window }), FAST)).toMatchObject({ items: 4 });
    const prs = await rows<Record<string, unknown>>(t.db, 'pull_requests');
    expect(prs.map((p) => p.number)).toEqual([1, 2, 3, 4]);
    expect(prs[0]).toMatchObject({ state: 'merged', additions: 10, deletions: 1, changed_files: 2 });
    expect(prs[1]).toMatchObject({ state: 'open', additions: 20 });
    const raw = prs[0]!.raw as { base: Record<string, unknown>; head: Record<string, unknown> };
    expect(raw.base).toEqual({ ref: 'main', repo: { id: 101, full_name: 'acme/app' } }); // not the whole repository
    expect(raw.head.repo).toEqual({ id: 101, full_name: 'acme/app' });
    expect(gh.requests('/repos/acme/app/pulls/')).toHaveLength(4);
    expect(gh.log.filter((l) => l.path.split('?')[0] === '/repos/acme/app/pulls')).toHaveLength(0);
    expect(gh.requests('/repos/acme/app/issues')[0]!.path).toContain('direction=asc');

    expect(await runGithubUnit(ctx({ datasetKey: 'pull-request-reviews', ...window }), FAST)).toMatchObject({
      items: 4,
    });
    const reviews = await rows<Record<string, unknown>>(t.db, 'pull_request_reviews');
    expect(reviews[0]).toMatchObject({ external_id: '701', pull_request_external_id: 'acme/app#1', state: 'APPROVED' });
  });

  it('commits in [since, before) with their stats; issue events mapped to state, label, assignee', async () => {
    gh.commits.push(
      { sha: 'aaa111', date: iso(T0 - DAY), message: 'Fix the thing\n\nlong body', additions: 5 },
      { sha: 'bbb222', date: iso(T0 - 9 * DAY), message: 'old', additions: 1 },
    );
    gh.issues.push(issue(1, T0 - DAY), issue(2, T0 - DAY, { pull: true }));
    gh.events.push(
      { id: 1, issue: 1, event: 'labeled', label: 'bug', created_at: iso(T0 - 3 * DAY) },
      { id: 2, issue: 1, event: 'assigned', assignee: 'dev4', created_at: iso(T0 - 2 * DAY) },
      { id: 3, issue: 1, event: 'closed', created_at: iso(T0 - DAY) },
      { id: 4, issue: 2, event: 'closed', created_at: iso(T0 - DAY) },
      { id: 5, issue: 1, event: 'renamed', created_at: iso(T0 - DAY) },
      { id: 6, issue: 1, event: 'reopened', created_at: iso(T0 - 20 * DAY) },
    );
    const window = { since: new Date(T0 - 7 * DAY), before: new Date(T0) };
    expect(await runGithubUnit(ctx({ datasetKey: 'commits', ...window }), FAST)).toMatchObject({ items: 1 });
    expect(await rows(t.db, 'commits')).toMatchObject([
      { sha: 'aaa111', message_first_line: 'Fix the thing', additions: 5, author: 'dev3', container: 'acme/app' },
    ]);
    const [commit] = await rows<{ raw: Record<string, unknown> }>(t.db, 'commits');
    expect(commit!.raw.files).toBeUndefined();

    expect(await runGithubUnit(ctx({ datasetKey: 'work-item-history', ...window }), FAST)).toMatchObject({ items: 4 });
    const events = await rows<Record<string, unknown>>(t.db, 'work_item_events');
    expect(events.map((e) => [e.external_id, e.kind, e.from_value, e.to_value])).toEqual([
      ['1', 'label', null, 'bug'],
      ['2', 'assignee', null, 'dev4'],
      ['3', 'state', 'open', 'closed'],
      ['5', 'other', null, 'renamed'],
    ]);
  });

  it('reference datasets: the repository and its assignable members; work-item-labels calls nothing', async () => {
    await runGithubUnit(ctx({ datasetKey: 'repositories', mode: 'full_resync' }), FAST);
    await runGithubUnit(ctx({ datasetKey: 'members', mode: 'full_resync' }), FAST);
    expect(await rows(t.db, 'repositories')).toMatchObject([{ external_id: '101', name: 'acme/app', private: true }]);
    expect(await count(t.db, 'members')).toBe(3);
    const before = gh.log.length;
    expect(await runGithubUnit(ctx({ datasetKey: 'work-item-labels' }), FAST)).toMatchObject({ items: 0 });
    expect(gh.log.length).toBe(before);
  });
});

describe('GitHub provider: failures', () => {
  it('a refused credential fails auth, naming the integration and never the token', async () => {
    const err = await failureOf(runGithubUnit(ctx({ datasetKey: 'repositories', token: 'ghp_WRONGtoken999' }), FAST));
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(classifyError(err)).toBe('auth');
    expect((err as Error).message).toContain('github integration "acme-github"');
    expect((err as Error).message).not.toContain('ghp_WRONGtoken999');
    expect(JSON.stringify(err)).not.toContain('ghp_WRONGtoken999');
    expect(gh.log).toHaveLength(1); // not retried
  });

  it('a 403 without rate-limit signals is auth too; a missing repository is not_found', async () => {
    gh.faults.push({ match: /^\/repos\/acme\/app$/, status: 403, body: { message: 'Resource not accessible' } });
    expect(classifyError(await failureOf(runGithubUnit(ctx({ datasetKey: 'repositories' }), FAST)))).toBe('auth');
    const missing = await failureOf(runGithubUnit(ctx({ datasetKey: 'repositories', sourceKey: 'acme/gone' }), FAST));
    expect(classifyError(missing)).toBe('not_found');
    expect((missing as Error).message).toContain('/repos/acme/gone');
  });

  it('5xx responses are retried in place, then fail provider_error', async () => {
    gh.faults.push({ match: /^\/repos\/acme\/app$/, status: 502, times: 2 });
    await runGithubUnit(ctx({ datasetKey: 'repositories' }), FAST);
    expect(gh.log.map((l) => l.status)).toEqual([502, 502, 200]);

    gh.log.length = 0;
    gh.faults.push({ match: /^\/repos\/acme\/app$/, status: 503, times: 10 });
    const err = await failureOf(runGithubUnit(ctx({ datasetKey: 'repositories' }), FAST));
    expect(classifyError(err)).toBe('provider_error');
    expect(gh.log.map((l) => l.status)).toEqual([503, 503, 503, 503]);
  });

  it('a network failure is retried in place, then fails provider_error', async () => {
    await gh.close();
    const err = await failureOf(runGithubUnit(ctx({ datasetKey: 'repositories' }), FAST));
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(classifyError(err)).toBe('provider_error');
  });

  it('an abort (lease lost) during the in-place retries ends the unit at once', async () => {
    gh.faults.push({ match: /^\/repos\/acme\/app$/, status: 500, times: 10 });
    const abort = new AbortController();
    const reason = new LeaseLostError('u-abort');
    setTimeout(() => abort.abort(reason), 50);
    const started = Date.now();
    const err = await failureOf(
      runGithubUnit(ctx({ datasetKey: 'repositories', signal: abort.signal }), {
        retry: { attempts: 10, baseDelayMs: 10_000, maxDelayMs: 10_000 },
      }),
    );
    expect(err).toBe(reason);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('without a credential the unit fails auth before calling', async () => {
    const c = ctx({ datasetKey: 'repositories' });
    const err = await failureOf(runGithubUnit({ ...c, credential: null }, FAST));
    expect(classifyError(err)).toBe('auth');
    expect(gh.log).toHaveLength(0);
  });
});

describe('GitHub provider: config and sources', () => {
  const provider = createGithubProvider();

  it.each([
    [{ baseUrl: 'ftp://example.com' }, 'config.baseUrl'],
    [{ baseUrl: 'not a url' }, 'config.baseUrl'],
    [{ baseUrl: 'https://user:pw@example.com' }, 'config.baseUrl'],
    [{ baseUrl: 42 }, 'config.baseUrl'],
    [{ budgetShare: 0 }, 'config.budgetShare'],
    [{ budgetShare: 1.5 }, 'config.budgetShare'],
    [{ budgetShare: '0.5' }, 'config.budgetShare'],
    [{ token: 'x' }, 'config.token'],
  ])('refuses %j naming %s', (config, field) => {
    expect(() => provider.validateConfig!(config)).toThrow(expect.objectContaining({ field }) as Error);
  });

  it('accepts github.com, a GitHub Enterprise Server API root and a share', () => {
    expect(() => provider.validateConfig!({})).not.toThrow();
    expect(() =>
      provider.validateConfig!({ baseUrl: 'https://ghe.example.com/api/v3', budgetShare: 0.25 }),
    ).not.toThrow();
  });

  it.each(['acme', 'acme/app/x', '/app', 'acme/', '-acme/app', 'acme/..', 'ac me/app'])(
    'refuses the source %j',
    (source) => {
      expect(() => provider.validateSource!(source, 'sources.0')).toThrow(
        expect.objectContaining({ field: 'sources.0' }) as Error,
      );
    },
  );

  it('creating a GitHub integration checks its sources and config, naming the field', () => {
    const registry = defaultRegistry(t.db);
    const base = { orgId: 'o', provider: 'github', name: 'n', datasets: ['work-items'], config: {} };
    expect(() => validateIntegration(registry, { ...base, sources: ['acme/app', 'acme/api'] })).not.toThrow();
    expect(() => validateIntegration(registry, { ...base, sources: ['acme/app', 'nope'] })).toThrow(
      expect.objectContaining({ field: 'sources.1' }) as Error,
    );
    expect(() => validateIntegration(registry, { ...base, sources: ['acme/app'], config: { budgetShare: 2 } })).toThrow(
      expect.objectContaining({ field: 'config.budgetShare' }) as Error,
    );
  });

  it('declares the cross-provider dataset keys', () => {
    expect(provider.datasets.map((d) => d.key)).toEqual([
      'repositories',
      'members',
      'work-items',
      'work-item-comments',
      'work-item-history',
      'work-item-labels',
      'pull-requests',
      'pull-request-reviews',
      'commits',
    ]);
  });
});
