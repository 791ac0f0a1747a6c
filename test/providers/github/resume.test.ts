/**
 * GitHub units deferred by a rate limit in the middle of their window hand their deferral where
 * they stand (src/providers/kit/resume.ts), and their next attempt reads on from there: the issues
 * list and comments from the latest `updated_at` written, commits from the earliest commit date
 * written. Nothing is written twice, nothing in the window is skipped, and objects edited during
 * the wait are read again with their change.
 */
import { describe, expect, it } from 'vitest';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import { runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import { count, DAY, T0 } from '../../helpers/emulatorSuite.js';
import { rateLimitOf } from '../../helpers/failures.js';
import { recordingSink } from '../../helpers/recordingSink.js';
import type { ItemRecord } from '../../../src/emulators/github/index.js';
import { ISSUES_ONLY, repoKey, requestsTo, updatedIn, useGithubSuite } from './support.js';

/** No reserve: a unit spends the whole budget before it is deferred. */
const RESUME: GithubProviderOptions = {
  retry: { baseDelayMs: 1, maxDelayMs: 2 },
  budget: { probePollMs: 20, reserve: 0 },
};
const SINCE = new Date(T0 - 6 * DAY);
const WINDOW = { since: SINCE, before: new Date(T0) };
const AFTER_RESET = T0 + 600_001;
const FAMILY = ['work-items', 'pull-requests', 'pull-request-reviews'];

const fx = useGithubSuite({
  seed: 11,
  scale: { ...ISSUES_ONLY, issues: 300, pulls: 60, maxReviews: 2, directCommits: 160 },
});

/**
 * One attempt of a unit of `datasets`; the ids its writes to `surface` carry land in `written`, in
 * order (and those to pull_requests in `pulls`).
 */
function attempt(
  datasets: string[],
  surface: string,
  written: string[],
  checkpoint: UnitCheckpoint | null,
  pulls: string[] = [],
) {
  const ctx = fx.unit({ datasetKey: datasets[0]!, datasets, ...WINDOW, checkpoint });
  const sink = recordingSink(recordingSink(ctx.sink, surface, written), 'pull_requests', pulls);
  return runGithubUnit({ ...ctx, sink }, RESUME);
}

/** The `since` (or `until`) a list request asked with, in ms. */
function param(path: string, name: string): number | null {
  const v = new URL(path, 'http://x').searchParams.get(name);
  return v === null ? null : Date.parse(v);
}

const issuesIn = () => updatedIn(fx.emu, SINCE.getTime(), T0).filter((i) => !i.pull);
/** An issue's `external_id`: `owner/repo#number`. */
const keyOf = (i: ItemRecord) => `${repoKey(fx.emu)}#${i.number}`;

describe('the issues list family, deferred mid-window', () => {
  // Each page of 100 brings ~20 pull requests, each a detail and a reviews request: 70 requests
  // read the first page whole and part of the second.
  const LIMITED = { rateLimit: { limit: 70, windowSeconds: 600 } };

  it('reads on from the latest updated_at it wrote: every issue once, pull requests not asked again', async () => {
    await fx.start(LIMITED);
    const first: string[] = [];
    const firstPulls: string[] = [];
    const cp = (await rateLimitOf(attempt(FAMILY, 'work_items', first, null, firstPulls))).checkpoint!;
    expect(first.length).toBeGreaterThan(0); // deferred mid-window: a page written …
    expect(first.length).toBeLessThan(issuesIn().length); // … not all
    const updatedOf = new Map(fx.emu.data.repos[0]!.items.map((i) => [keyOf(i), i.updatedAt]));
    const latest = Math.max(...[...first, ...firstPulls].map((id) => updatedOf.get(id)!));
    expect(cp).toMatchObject({ v: 1, from: latest, counts: { work_items: first.length } });
    expect(cp.pages).toBeGreaterThan(0);
    expect(JSON.stringify(cp)).not.toContain(fx.emu.token);
    const detailsBefore = requestsTo(fx.emu, /\/pulls\/\d+$/).length;
    const calls = fx.emu.log.length;

    fx.clock.set(AFTER_RESET);
    const second: string[] = [];
    const result = await attempt(FAMILY, 'work_items', second, cp);
    const lists = requestsTo(fx.emu, /\/issues/).filter((l) => l.seq > fx.emu.log[calls - 1]!.seq);
    expect(param(lists[0]!.path, 'since')).toBe(latest); // not the window's start

    const all = [...first, ...second];
    expect(new Set(all).size).toBe(all.length); // no issue written twice
    expect(new Set(all)).toEqual(new Set(issuesIn().map(keyOf)));
    // The first attempt's written pull requests are not asked for again: the second asks for the
    // others' details, and for those of the part it was deferred in at most (4 at a time).
    const pulls = updatedIn(fx.emu, SINCE.getTime(), T0).filter((i) => i.pull).length;
    const details = requestsTo(fx.emu, /\/pulls\/\d+$/).length - detailsBefore;
    expect(details).toBeGreaterThanOrEqual(pulls - firstPulls.length);
    expect(details).toBeLessThanOrEqual(pulls - firstPulls.length + 4);
    expect(await count(fx.db, 'pull_requests')).toBe(pulls);
    // The result counts the whole window, both attempts' rows.
    const rows = (await count(fx.db, 'work_items')) + pulls + (await count(fx.db, 'pull_request_reviews'));
    expect(result.items).toBe(rows);
  });

  it('issues edited during the wait are read again with their change; none is skipped', async () => {
    await fx.start(LIMITED);
    const first: string[] = [];
    const err = await rateLimitOf(attempt(FAMILY, 'work_items', first, null));
    // While the unit waits, issues it wrote and issues it did not are edited inside its window.
    fx.clock.set(T0 - 1000);
    const written = new Set(first);
    const items = issuesIn();
    const edited = [...items.filter((i) => written.has(keyOf(i))).slice(0, 3), ...items.slice(-3)];
    for (const i of edited) fx.emu.edit.touch(i.number);

    fx.clock.set(AFTER_RESET);
    const second: string[] = [];
    await attempt(FAMILY, 'work_items', second, err.checkpoint);
    for (const i of edited) expect(second).toContain(keyOf(i));
    expect(new Set([...first, ...second])).toEqual(new Set(issuesIn().map(keyOf)));
    expect(await count(fx.db, 'work_items')).toBe(issuesIn().length);
  });

  it('a checkpoint not of this format is ignored: the unit reads its window from the start', async () => {
    await fx.start(LIMITED);
    const err = await rateLimitOf(attempt(FAMILY, 'work_items', [], { v: 99, from: 'elsewhere' }));
    expect(param(requestsTo(fx.emu, /\/issues/)[0]!.path, 'since')).toBe(SINCE.getTime());
    expect(err.checkpoint).toMatchObject({ v: 1 });
  });
});

describe('comments, deferred mid-window', () => {
  it('read on from the latest updated_at written, each once', async () => {
    // Three comment pages in the window; two requests: the third waits for the next window.
    await fx.start({
      scale: { ...ISSUES_ONLY, issues: 300, maxComments: 2 },
      rateLimit: { limit: 2, windowSeconds: 600 },
    });
    const inWindow = fx.emu.data.repos[0]!.comments.filter((c) => c.updatedAt >= SINCE.getTime() && c.updatedAt < T0);
    expect(inWindow.length).toBeGreaterThan(200);
    const first: string[] = [];
    const cp = (await rateLimitOf(attempt(['work-item-comments'], 'work_item_comments', first, null))).checkpoint!;
    expect(cp).toMatchObject({ v: 1, pages: 2, counts: { work_item_comments: first.length } });

    fx.clock.set(AFTER_RESET);
    const second: string[] = [];
    const result = await attempt(['work-item-comments'], 'work_item_comments', second, cp);
    const all = [...first, ...second];
    expect(new Set(all).size).toBe(all.length);
    expect(new Set(all)).toEqual(new Set(inWindow.map((c) => String(c.id))));
    expect(result.items).toBe(inWindow.length);
  });
});

describe('commits, deferred mid-window', () => {
  it('list on back from the earliest commit date written: each commit and its detail once', async () => {
    // 100 a page, each with a detail, written 4 at a time: 130 requests write the first page and
    // 28 of the second's.
    await fx.start({ rateLimit: { limit: 130, windowSeconds: 600 } });
    const inWindow = fx.emu.data.repos[0]!.commits.filter((c) => c.date >= SINCE.getTime() && c.date < T0);
    expect(inWindow.length).toBeGreaterThan(100);
    const first: string[] = [];
    const cp = (await rateLimitOf(attempt(['commits'], 'commits', first, null))).checkpoint!;
    const dateOf = new Map(inWindow.map((c) => [c.sha, c.date]));
    const earliest = Math.min(...first.map((sha) => dateOf.get(sha)!));
    expect(first).toHaveLength(128);
    expect(cp).toMatchObject({ v: 1, from: earliest, pages: 1, counts: { commits: 128 } });
    const calls = fx.emu.log.length;

    fx.clock.set(AFTER_RESET);
    const second: string[] = [];
    await attempt(['commits'], 'commits', second, cp);
    const later = fx.emu.log.slice(calls);
    const list = later.find((l) => /\/commits\?/.test(l.path))!;
    expect(param(list.path, 'until')).toBe(earliest + 1000);
    const all = [...first, ...second];
    expect(new Set(all).size).toBe(all.length);
    expect(new Set(all)).toEqual(new Set(inWindow.map((c) => c.sha)));
    // Details: only the commits not written before.
    expect(later.filter((l) => /\/commits\/[0-9a-f]{40}$/.test(l.path))).toHaveLength(second.length);
  });
});
