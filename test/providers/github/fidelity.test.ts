/**
 * The GitHub reader against an emulator as hostile as GitHub (docs/emulators.md, "Concurrent
 * edits"): lists paged by page number while issues are edited and deleted between pages, issue
 * events in no time order, an empty repository's 409 on its commits. Nothing lost is checked
 * against the emulator's own records: every issue, pull request and comment that exists is
 * stored at its latest version.
 */
import { describe, expect, it } from 'vitest';
import type { GithubEmulator, ItemRecord } from '../../../src/emulators/github/index.js';
import { runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import { DAY, rows, T0 } from '../../helpers/emulatorSuite.js';
import { ISSUES_ONLY, repoKey, requestsTo, useGithubSuite } from './support.js';

const FAST: GithubProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, detailConcurrency: 1 };
const SINCE = new Date(T0 - 30 * DAY);

const fx = useGithubSuite({ seed: 5, scale: { ...ISSUES_ONLY, issues: 250 } });

const repo = () => fx.emu.data.repos[0]!;
const live = (emu: GithubEmulator) => emu.data.repos[0]!.items.filter((i) => i.deletedAt === undefined);
const byUpdate = () => [...live(fx.emu)].sort((a, b) => a.updatedAt - b.updatedAt || a.id - b.id);
const keyOf = (i: ItemRecord) => `${repoKey(fx.emu)}#${i.number}`;

/** An incremental unit of `datasets` from SINCE on (it reads to the end of the list). */
function incremental(datasets: string[], since = SINCE) {
  return fx.unit({ datasetKey: datasets[0]!, datasets, mode: 'incremental', since, before: fx.clock.now() });
}

/** Each stored row's `updated_at` by external id. */
async function storedVersions(table: string): Promise<Map<string, number>> {
  const all = await rows<{ external_id: string; updated_at: Date }>(fx.db, table);
  return new Map(all.map((r) => [r.external_id, r.updated_at.getTime()]));
}

/** Every item of `items` is stored at its latest version (`updated_at`). */
function expectLatest(stored: Map<string, number>, items: readonly { key: string; updatedAt: number }[]): void {
  const missing = items.filter((i) => stored.get(i.key) !== i.updatedAt).map((i) => i.key);
  expect(missing).toEqual([]);
}

describe('GitHub reader: lists changing between pages', () => {
  it('an issue of page 1 edited before page 2: every issue is read, at its latest version', async () => {
    await fx.start();
    const edited = byUpdate()[10]!;
    const boundary = byUpdate()[100]!; // the first of page 2: shifted onto page 1 by the edit
    fx.emu.onPage('/issues', 2, () => {
      fx.clock.set(T0 + 60_000);
      fx.emu.edit.touch(edited.number);
    });
    const result = await runGithubUnit(incremental(['work-items']), FAST);

    expect(edited.updatedAt).toBe(T0 + 60_000);
    const stored = await storedVersions('work_items');
    expect(stored.get(keyOf(boundary))).toBe(boundary.updatedAt);
    expectLatest(
      stored,
      live(fx.emu).map((i) => ({ key: keyOf(i), updatedAt: i.updatedAt })),
    );
    expect(result.watermark).toBeUndefined(); // read to the end
  });

  it('an issue deleted between pages: the read succeeds and every issue left is stored', async () => {
    await fx.start();
    const deleted = byUpdate().filter((i) => !i.pull)[20]!;
    fx.emu.onPage('/issues', 2, () => fx.emu.edit.remove(deleted.number));
    const result = await runGithubUnit(incremental(['work-items']), FAST);

    expect(result.items).toBeGreaterThanOrEqual(249);
    const res = await fetch(`${fx.emu.url}/repos/${repoKey(fx.emu)}/issues/${deleted.number}`, {
      headers: { authorization: `token ${fx.emu.token}` },
    });
    expect(res.status).toBe(410);
    expectLatest(
      await storedVersions('work_items'),
      live(fx.emu).map((i) => ({ key: keyOf(i), updatedAt: i.updatedAt })),
    );
  });

  it('a comment edited before the next page: every comment is read, at its latest version', async () => {
    await fx.start({ scale: { ...ISSUES_ONLY, issues: 120, maxComments: 4 } });
    const comments = () => repo().comments.filter((c) => c.item.deletedAt === undefined);
    const sorted = [...comments()].sort((a, b) => a.updatedAt - b.updatedAt || a.id - b.id);
    expect(sorted.length).toBeGreaterThan(200);
    fx.emu.onPage('/issues/comments', 2, () => {
      fx.clock.set(T0 + 60_000);
      fx.emu.edit.editComment(sorted[5]!.id);
    });
    await runGithubUnit(incremental(['work-item-comments']), FAST);
    expectLatest(
      await storedVersions('work_item_comments'),
      comments().map((c) => ({ key: String(c.id), updatedAt: c.updatedAt })),
    );
  });
});

describe('GitHub reader: issue events in no order, empty repositories', () => {
  it('issue events listed out of time order: every event of the window is read', async () => {
    await fx.start({ scale: { ...ISSUES_ONLY, issues: 150, days: 10 } });
    const window = { since: new Date(T0 - 7 * DAY), before: new Date(T0 - 2 * DAY) };
    const inside = (ms: number) => ms >= window.since.getTime() && ms < window.before.getTime();
    const want = repo().events.filter((e) => !e.item.pull && inside(e.createdAt));
    expect(repo().events.length).toBeGreaterThan(200); // more than two pages
    const r = await runGithubUnit(fx.unit({ datasetKey: 'work-item-history', ...window }), FAST);
    expect(r.items).toBe(want.length);
    const stored = (await rows<{ external_id: string }>(fx.db, 'work_item_events')).map((e) => e.external_id);
    expect(stored.sort()).toEqual(want.map((e) => String(e.id)).sort());
  });

  it('an empty repository (409 "Git Repository is empty.") has zero commits, not a failure', async () => {
    await fx.start({ emptyRepos: [0], scale: { ...ISSUES_ONLY, pulls: 10 } });
    expect(repo().commits).toHaveLength(0);
    expect(repo().items.some((i) => i.pull)).toBe(false); // no branch to open a pull request from
    const r = await runGithubUnit(fx.unit({ datasetKey: 'commits', since: SINCE, before: new Date(T0) }), FAST);
    expect(r).toMatchObject({ items: 0, touchedSurfaces: [] });
    expect(requestsTo(fx.emu, /\/commits/).map((l) => l.status)).toEqual([409]);
  });
});

describe('GitHub reader: churn through two incremental runs', () => {
  it('edits at every request: issues, pull requests and comments that exist are stored at their latest', async () => {
    await fx.start({ churn: 2, scale: { ...ISSUES_ONLY, issues: 200, pulls: 50, maxComments: 3 } });
    // The clock moves 250 ms each time anyone reads it: the churn edits while the units read.
    const read = fx.clock.now.bind(fx.clock);
    fx.clock.now = () => {
      fx.clock.advance(250);
      return read();
    };
    const issueDatasets = ['work-items', 'pull-requests'];
    const start = fx.clock.now();
    await runGithubUnit(incremental(issueDatasets), FAST);
    await runGithubUnit(incremental(['work-item-comments']), FAST);
    const edits = fx.emu.log.length;

    await runGithubUnit(incremental(issueDatasets, start), FAST);
    const items = live(fx.emu).map((i) => ({ key: keyOf(i), updatedAt: i.updatedAt, pull: i.pull !== null }));
    await runGithubUnit(incremental(['work-item-comments'], start), FAST);
    const comments = repo()
      .comments.filter((c) => c.item.deletedAt === undefined && !c.item.pull)
      .map((c) => ({ key: String(c.id), updatedAt: c.updatedAt }));

    expect(edits).toBeGreaterThan(0);
    expect(repo().items.some((i) => i.updatedAt > start.getTime())).toBe(true); // the churn did edit
    expectLatest(
      await storedVersions('work_items'),
      items.filter((i) => !i.pull),
    );
    expectLatest(
      await storedVersions('pull_requests'),
      items.filter((i) => i.pull),
    );
    expectLatest(await storedVersions('work_item_comments'), comments);
  });
});
