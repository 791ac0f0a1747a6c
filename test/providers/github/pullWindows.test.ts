/**
 * Pull-request windows: the `pull-requests` and `pull-request-reviews` units read a window through
 * the repository's issues list (`since` = the window's start, `updated` ascending, stopping past its
 * end), never `GET /pulls`, so each window costs its own pages only; adjacent windows neither miss
 * nor repeat a pull request; an incremental run after a backfill picks up what changed in between.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import type { TestDatabase } from '../../helpers/pg.js';
import { FakeGithub, type FakePull } from './fakeGithub.js';
import { count, rows, TOKEN, unitContext, useGithubDatabase, type UnitSpec } from './support.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const DAY = 86_400_000;
const WEEK = 7 * DAY;
const WINDOWS = 5;
const START = T0 - WINDOWS * WEEK;
const ISSUES = 300;
const PULLS = 250;
const FAST: GithubProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 } };
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

const database = useGithubDatabase();
let t: TestDatabase;
let clock: ManualClock;
let gh: FakeGithub;

beforeEach(async () => {
  t = database();
  clock = new ManualClock(T0);
  gh = await new FakeGithub({ token: TOKEN, clock }).start();
  seed();
});
afterEach(async () => {
  await gh.close();
});

/** Issues and pull requests spread over the five weeks (whole seconds), one PR on a window's edge. */
function seed(): void {
  const span = WINDOWS * WEEK;
  for (let n = 1; n <= ISSUES; n++) {
    const at = START + Math.floor(((((n * 7919) % ISSUES) / ISSUES) * span) / 1000) * 1000;
    gh.issues.push({ number: n, title: `issue ${n}`, state: 'open', created_at: iso(START), updated_at: iso(at) });
  }
  for (let k = 0; k < PULLS; k++)
    gh.pulls.push(pull(ISSUES + 1 + k, START + Math.floor((k * span) / PULLS / 1000) * 1000));
  gh.pulls[0]!.updated_at = iso(START + 2 * WEEK); // exactly on the edge between windows 2 and 3
}

function pull(n: number, updated: number): FakePull {
  return {
    number: n,
    title: `pr ${n}`,
    state: 'open',
    created_at: iso(START - DAY),
    updated_at: iso(updated),
    additions: n,
    reviews: [{ id: 10_000 + n, state: 'APPROVED', user: 'rev', submitted_at: iso(updated) }],
  };
}

function unit(spec: Partial<UnitSpec> & { datasetKey: string }) {
  return unitContext({ db: t.db, clock, baseUrl: gh.url, ...spec });
}

function window(i: number): { since: Date; before: Date } {
  return { since: new Date(START + i * WEEK), before: new Date(START + (i + 1) * WEEK) };
}

/** Issues and pull requests whose `updated_at` lies in `[since, before)`. */
function listedIn(w: { since: Date; before: Date }): { all: number; pulls: number[] } {
  const inside = (at: string) => Date.parse(at) >= w.since.getTime() && Date.parse(at) < w.before.getTime();
  const pulls = gh.pulls.filter((p) => inside(p.updated_at)).map((p) => p.number);
  return { all: gh.issues.filter((i) => inside(i.updated_at)).length + pulls.length, pulls };
}

const issueListCalls = () => gh.requests('/repos/acme/app/issues');
const pullListCalls = () => gh.log.filter((l) => l.path.split('?')[0] === '/repos/acme/app/pulls');
const detailCalls = () => gh.log.filter((l) => /^\/repos\/acme\/app\/pulls\/\d+$/.test(l.path.split('?')[0]!));

describe('pull-request windows through the issues list', () => {
  it("a window's unit reads only its window's pages of the issues list, and no PR list", async () => {
    const w = window(2);
    const expected = listedIn(w);
    expect(expected.all).toBeGreaterThan(100); // the window spans pages
    const result = await runGithubUnit(unit({ datasetKey: 'pull-requests', ...w }), FAST);

    expect(result).toMatchObject({ items: expected.pulls.length, touchedSurfaces: ['pull_requests'] });
    const since = `since=${encodeURIComponent(w.since.toISOString())}`;
    expect(issueListCalls().every((l) => l.path.includes(since) && l.path.includes('direction=asc'))).toBe(true);
    // The window's own items, and the page holding the first item past its end: nothing more.
    expect(issueListCalls()).toHaveLength(Math.floor(expected.all / 100) + 1);
    expect(pullListCalls()).toHaveLength(0);
    expect(detailCalls()).toHaveLength(expected.pulls.length);
    const stored = await rows<{ number: number; additions: number }>(t.db, 'pull_requests');
    expect(stored.map((r) => r.number).sort((a, b) => a - b)).toEqual(expected.pulls.sort((a, b) => a - b));
    expect(stored.every((r) => r.additions === r.number)).toBe(true); // the detail's figures
  });

  it('adjacent windows: each PR and review once, each PR asked for once, pages ~ items', async () => {
    let items = 0;
    let reviews = 0;
    for (let i = 0; i < WINDOWS; i++) {
      items += (await runGithubUnit(unit({ datasetKey: 'pull-requests', ...window(i) }), FAST)).items ?? 0;
      reviews += (await runGithubUnit(unit({ datasetKey: 'pull-request-reviews', ...window(i) }), FAST)).items ?? 0;
    }
    expect(items).toBe(PULLS);
    expect(reviews).toBe(PULLS);
    expect(await count(t.db, 'pull_requests')).toBe(PULLS);
    expect(await count(t.db, 'pull_request_reviews')).toBe(PULLS);
    const perPull = new Map<string, number>();
    for (const l of detailCalls()) perPull.set(l.path, (perPull.get(l.path) ?? 0) + 1);
    expect(perPull.size).toBe(PULLS);
    expect([...perPull.values()].every((n) => n === 1)).toBe(true);
    expect(gh.requests('/repos/acme/app/pulls/').filter((l) => l.path.includes('/reviews'))).toHaveLength(PULLS);
    // Two units per window: each reads the window's pages plus one; about the list's own pages in all.
    const listPages = Math.ceil((ISSUES + PULLS) / 100);
    expect(issueListCalls().length).toBeLessThanOrEqual(2 * (listPages + WINDOWS));
  });

  it('incremental after a backfill, with PRs updated in between: no gap, no duplicate', async () => {
    for (let i = 0; i < WINDOWS; i++) await runGithubUnit(unit({ datasetKey: 'pull-requests', ...window(i) }), FAST);
    expect(await count(t.db, 'pull_requests')).toBe(PULLS);

    clock.set(T0 + 3600_000);
    const edited = [ISSUES + 1, ISSUES + 100, ISSUES + PULLS];
    for (const n of edited) {
      Object.assign(
        gh.pulls.find((p) => p.number === n)!,
        { title: `edited ${n}`, updated_at: iso(T0 + 60_000) },
      );
    }
    gh.pulls.push(pull(ISSUES + PULLS + 1, T0 + 120_000), pull(ISSUES + PULLS + 2, T0 + 180_000));
    gh.issues[4]!.updated_at = iso(T0 + 90_000); // an issue changed too: listed, not a PR
    const calls = issueListCalls().length;
    const inc = unit({ datasetKey: 'pull-requests', mode: 'incremental', since: new Date(T0), before: clock.now() });
    const result = await runGithubUnit(inc, FAST);

    expect(result.items).toBe(5);
    expect(result.watermark).toBeUndefined(); // read to the end: the engine moves it to `before`
    expect(issueListCalls().length - calls).toBe(1);
    const all = await rows<{ number: number; title: string }>(t.db, 'pull_requests');
    expect(all).toHaveLength(PULLS + 2);
    expect(new Set(all.map((r) => r.number)).size).toBe(PULLS + 2);
    expect(all.filter((r) => r.title.startsWith('edited')).map((r) => r.number)).toEqual(edited);
  });

  it('an incremental unit stopping after maxPages moves its watermark only to what it read', async () => {
    const since = new Date(START + 3 * WEEK);
    const first = await runGithubUnit(
      unit({ datasetKey: 'pull-request-reviews', mode: 'incremental', since, before: new Date(T0) }),
      { ...FAST, maxPages: 1 },
    );
    const firstPage = [...gh.issues.map((i) => i.updated_at), ...gh.pulls.map((p) => p.updated_at)]
      .filter((at) => Date.parse(at) >= since.getTime())
      .sort()
      .slice(0, 100);
    expect(first.watermark).toEqual(new Date(firstPage.at(-1)!));
    const second = await runGithubUnit(
      unit({ datasetKey: 'pull-request-reviews', mode: 'incremental', since: first.watermark!, before: new Date(T0) }),
      FAST,
    );
    expect(second.watermark).toBeUndefined();
    const expected = listedIn({ since, before: new Date(T0 + 1) }).pulls.length;
    expect(await count(t.db, 'pull_request_reviews')).toBe(expected);
    expect((first.items ?? 0) + (second.items ?? 0)).toBeGreaterThanOrEqual(expected); // the edge read twice at most
  });

  it('a unit carrying issues, PRs and reviews reads each page of the issues list once for all three', async () => {
    const w = window(1);
    const expected = listedIn(w);
    const datasets = ['work-items', 'pull-requests', 'pull-request-reviews'];
    const result = await runGithubUnit(unit({ datasetKey: 'work-items', datasets, ...w }), FAST);

    const issues = expected.all - expected.pulls.length;
    expect(result.items).toBe(issues + 2 * expected.pulls.length);
    expect(result.touchedSurfaces).toEqual(['work_items', 'pull_requests', 'pull_request_reviews']);
    expect(issueListCalls()).toHaveLength(Math.floor(expected.all / 100) + 1);
    expect(detailCalls()).toHaveLength(expected.pulls.length);
    expect(await count(t.db, 'work_items')).toBe(issues);
    expect(await count(t.db, 'pull_requests')).toBe(expected.pulls.length);
    expect(await count(t.db, 'pull_request_reviews')).toBe(expected.pulls.length);

    const odd = unit({ datasetKey: 'work-items', datasets: ['work-items', 'commits'], ...w });
    await expect(runGithubUnit(odd, FAST)).rejects.toThrow(/commits is not read from the issues list/);
  });
});
