/**
 * Pull-request windows against the GitHub emulator: the `pull-requests` and `pull-request-reviews`
 * units read a window through the repository's issues list (`since` = the window's start,
 * `updated` ascending, stopping past its end), never `GET /pulls`, so each window costs its own
 * pages only; adjacent windows neither miss nor repeat a pull request; an incremental run after a
 * backfill picks up what changed in between.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import { count, DAY, rows, T0 } from '../../helpers/emulatorSuite.js';
import { ISSUES_ONLY, repoKey, requestsTo, updatedIn, useGithubSuite } from './support.js';

const WEEK = 7 * DAY;
const WINDOWS = 5;
const START = T0 - WINDOWS * WEEK;
const FAST: GithubProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 } };

/** 300 issues and 250 pull requests over the five weeks before T0. */
const fx = useGithubSuite({ seed: 9, scale: { ...ISSUES_ONLY, issues: 300, pulls: 250, days: 35 } });

beforeEach(async () => {
  await fx.start();
  // One pull request exactly on the edge between windows 2 and 3.
  const repo = fx.emu.data.repos[0]!;
  repo.items.find((i) => i.pull)!.updatedAt = START + 2 * WEEK;
  repo.version++; // the emulator's sorted views are rebuilt
});

const pulls = () => fx.emu.data.repos[0]!.items.filter((i) => i.pull);
const keyOf = (n: number) => `${repoKey(fx.emu)}#${n}`;

function window(i: number): { since: Date; before: Date } {
  return { since: new Date(START + i * WEEK), before: new Date(START + (i + 1) * WEEK) };
}

/** The issues and pull requests listed in `[since, before)`: how many, and the pull requests. */
function listedIn(w: { since: Date; before: Date }) {
  const items = updatedIn(fx.emu, w.since.getTime(), w.before.getTime());
  const inside = items.filter((i) => i.pull);
  return { all: items.length, pulls: inside.map((p) => p.number), reviews: inside.flatMap((p) => p.pull!.reviews) };
}

const issueListCalls = () => requestsTo(fx.emu, /\/issues/);
const pullListCalls = () => requestsTo(fx.emu, /\/pulls/);
const detailCalls = () => requestsTo(fx.emu, /\/pulls\/\d+/);

describe('pull-request windows through the issues list', () => {
  it("a window's unit reads only its window's pages of the issues list, and no PR list", async () => {
    const w = window(3);
    const expected = listedIn(w);
    expect(expected.all).toBeGreaterThan(100); // the window spans pages
    const result = await runGithubUnit(fx.unit({ datasetKey: 'pull-requests', ...w }), FAST);

    expect(result).toMatchObject({ items: expected.pulls.length, touchedSurfaces: ['pull_requests'] });
    const since = `since=${encodeURIComponent(w.since.toISOString())}`;
    expect(issueListCalls()[0]!.path).toContain(since);
    expect(issueListCalls().every((l) => l.path.includes('direction=asc'))).toBe(true);
    // The window's own items, and the page holding the first item past its end: nothing more
    // (keyset pages overlap by the items of the second each one starts from).
    expect(issueListCalls().length).toBeGreaterThanOrEqual(Math.floor(expected.all / 100) + 1);
    expect(issueListCalls().length).toBeLessThanOrEqual(Math.floor(expected.all / 99) + 1);
    expect(pullListCalls()).toHaveLength(0);
    expect(detailCalls()).toHaveLength(expected.pulls.length);
    const stored = await rows<{ number: number; additions: number }>(fx.db, 'pull_requests');
    expect(stored.map((r) => r.number).sort((a, b) => a - b)).toEqual(expected.pulls.sort((a, b) => a - b));
    const additions = new Map(pulls().map((p) => [p.number, p.pull!.additions]));
    for (const r of stored) expect(r.additions).toBe(additions.get(r.number)); // the detail's figures
  });

  it('adjacent windows: each PR and review once, each PR asked for once, pages ~ items', async () => {
    const reviewsInAll = pulls().reduce((n, p) => n + p.pull!.reviews.length, 0);
    let items = 0;
    let reviews = 0;
    for (let i = 0; i < WINDOWS; i++) {
      items += (await runGithubUnit(fx.unit({ datasetKey: 'pull-requests', ...window(i) }), FAST)).items ?? 0;
      reviews += (await runGithubUnit(fx.unit({ datasetKey: 'pull-request-reviews', ...window(i) }), FAST)).items ?? 0;
    }
    expect(items).toBe(250);
    expect(reviews).toBe(reviewsInAll);
    expect(await count(fx.db, 'pull_requests')).toBe(250);
    expect(await count(fx.db, 'pull_request_reviews')).toBe(reviewsInAll);
    const perPull = new Map<string, number>();
    for (const l of detailCalls()) perPull.set(l.path, (perPull.get(l.path) ?? 0) + 1);
    expect(perPull.size).toBe(250);
    expect([...perPull.values()].every((n) => n === 1)).toBe(true);
    expect(requestsTo(fx.emu, /\/pulls\/\d+\/reviews/)).toHaveLength(250);
    // Two units per window: each reads the window's pages plus one; about the list's own pages in all.
    const listPages = Math.ceil(550 / 100);
    expect(issueListCalls().length).toBeLessThanOrEqual(2 * (listPages + WINDOWS));
  });

  it('incremental after a backfill, with PRs updated in between: no gap, no duplicate', async () => {
    for (let i = 0; i < WINDOWS; i++) await runGithubUnit(fx.unit({ datasetKey: 'pull-requests', ...window(i) }), FAST);
    expect(await count(fx.db, 'pull_requests')).toBe(250);

    fx.clock.set(T0 + 60_000);
    fx.emu.mutate(); // comments on issues and pull requests, opens new ones, at T0 + 1 min
    fx.clock.set(T0 + 3600_000);
    const changed = listedIn({ since: new Date(T0), before: fx.clock.now() });
    expect(changed.pulls.length).toBeGreaterThan(0);
    expect(changed.all).toBeGreaterThan(changed.pulls.length); // issues changed too: listed, not PRs
    const calls = issueListCalls().length;
    const inc = fx.unit({
      datasetKey: 'pull-requests',
      mode: 'incremental',
      since: new Date(T0),
      before: fx.clock.now(),
    });
    const result = await runGithubUnit(inc, FAST);

    expect(result.items).toBe(changed.pulls.length);
    expect(result.watermark).toBeUndefined(); // read to the end: the engine moves it to `before`
    expect(issueListCalls().length - calls).toBe(1);
    const all = await rows<{ external_id: string; number: number; updated_at: Date }>(fx.db, 'pull_requests');
    expect(all).toHaveLength(pulls().length);
    expect(new Set(all.map((r) => r.number)).size).toBe(pulls().length);
    const updated = new Map(pulls().map((p) => [keyOf(p.number), p.updatedAt]));
    for (const r of all) expect(r.updated_at.getTime()).toBe(updated.get(r.external_id));
  });

  it('an incremental unit stopping after maxPages moves its watermark only to what it read', async () => {
    const since = new Date(START + 3 * WEEK);
    const first = await runGithubUnit(
      fx.unit({ datasetKey: 'pull-request-reviews', mode: 'incremental', since, before: new Date(T0) }),
      { ...FAST, maxPages: 1 },
    );
    const listed = fx.emu.data.repos[0]!.items.filter((i) => i.updatedAt >= since.getTime());
    const firstPage = listed
      .map((i) => i.updatedAt)
      .sort((a, b) => a - b)
      .slice(0, 100);
    expect(first.watermark).toEqual(new Date(firstPage.at(-1)!));
    const second = await runGithubUnit(
      fx.unit({
        datasetKey: 'pull-request-reviews',
        mode: 'incremental',
        since: first.watermark!,
        before: new Date(T0),
      }),
      FAST,
    );
    expect(second.watermark).toBeUndefined();
    const expected = listedIn({ since, before: new Date(T0 + 1) }).reviews.length;
    expect(await count(fx.db, 'pull_request_reviews')).toBe(expected);
    expect((first.items ?? 0) + (second.items ?? 0)).toBeGreaterThanOrEqual(expected); // the edge read twice at most
  });

  it('a unit carrying issues, PRs and reviews reads each page of the issues list once for all three', async () => {
    const w = window(1);
    const expected = listedIn(w);
    const datasets = ['work-items', 'pull-requests', 'pull-request-reviews'];
    const result = await runGithubUnit(fx.unit({ datasetKey: 'work-items', datasets, ...w }), FAST);

    const issues = expected.all - expected.pulls.length;
    expect(result.items).toBe(issues + expected.pulls.length + expected.reviews.length);
    expect(result.touchedSurfaces).toEqual(['work_items', 'pull_requests', 'pull_request_reviews']);
    expect(issueListCalls()).toHaveLength(Math.floor(expected.all / 100) + 1);
    expect(detailCalls()).toHaveLength(expected.pulls.length);
    expect(await count(fx.db, 'work_items')).toBe(issues);
    expect(await count(fx.db, 'pull_requests')).toBe(expected.pulls.length);
    expect(await count(fx.db, 'pull_request_reviews')).toBe(expected.reviews.length);

    const odd = fx.unit({ datasetKey: 'work-items', datasets: ['work-items', 'commits'], ...w });
    await expect(runGithubUnit(odd, FAST)).rejects.toThrow(/commits is not read from the issues list/);
  });
});
