/**
 * The GitHub provider against the GitHub emulator (src/emulators/github) on 127.0.0.1, writing
 * through the normalized sink into the normalized tables of the test's own database: each
 * dataset's rows checked against the emulator's records, windows, incremental reads and lease loss.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../../src/errors.js';
import type { EventRecord, ItemRecord } from '../../../src/emulators/github/index.js';
import { runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import { count, DAY, rows, T0 } from '../../helpers/emulatorSuite.js';
import { failureOf } from '../../helpers/failures.js';
import { TestGuard, unitContext } from '../../helpers/unitContext.js';
import { ISSUES_ONLY, repoKey, requestsTo, updatedIn, useGithubSuite } from './support.js';

const FAST: GithubProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 } };
/** A window holding everything the emulator generated (its data ends at T0). */
const ALL = { since: new Date(T0 - 30 * DAY), before: new Date(T0 + 1000) };

const fx = useGithubSuite({ seed: 3, scale: ISSUES_ONLY });

const repo = () => fx.emu.data.repos[0]!;
const issues = () => repo().items.filter((i) => !i.pull);
const pulls = () => repo().items.filter((i) => i.pull);
const issueList = () => requestsTo(fx.emu, /\/issues/);
const byUpdate = () => [...repo().items].sort((a, b) => a.updatedAt - b.updatedAt || a.id - b.id);
const keyOf = (i: ItemRecord) => `${repoKey(fx.emu)}#${i.number}`;
const at = (ms: number | null) => (ms === null ? null : new Date(ms));

/**
 * Issues a keyset read of two pages (100 a page) holds: the first page, then 100 from the first
 * issue updated in the second the first page ended at (`since` is inclusive).
 */
function afterTwoPages(sorted: readonly ItemRecord[]): number {
  return sorted.findIndex((i) => i.updatedAt >= sorted[99]!.updatedAt) + 100;
}

/** What the status rule makes of an issue: closed → done, labelled "in progress" → in_progress, else todo. */
function statusOf(i: ItemRecord): string {
  if (i.closedAt !== null) return 'done';
  return i.labels.some((l) => l.name === 'in progress') ? 'in_progress' : 'todo';
}

describe('GitHub provider: work items', () => {
  it('reads issues across 6 pages, leaves pull requests out, and maps them onto work_items', async () => {
    await fx.start({ scale: { ...ISSUES_ONLY, issues: 504, pulls: 56, days: 15 } });
    const c = fx.unit({ datasetKey: 'work-items', ...ALL });
    const result = await runGithubUnit(c, FAST);

    expect(issueList()).toHaveLength(6); // 560 issues and pull requests, 100 a page
    expect(result).toMatchObject({ items: 504, touchedSurfaces: ['work_items'] });
    expect(await count(fx.db, 'work_items')).toBe(504);
    expect(c.lease.writes).toBe(6); // one fenced write per page
    const stored = new Map((await rows<Record<string, unknown>>(fx.db, 'work_items')).map((r) => [r.external_id, r]));
    for (const i of issues()) {
      expect(stored.get(keyOf(i))).toMatchObject({
        number: String(i.number),
        status: statusOf(i),
        completed_at: at(i.closedAt),
        labels: i.labels.map((l) => l.name),
        assignees: i.assignees.map((u) => u.login),
        container: repoKey(fx.emu),
        provider: 'github',
      });
    }
    expect(new Set(issues().map(statusOf))).toEqual(new Set(['done', 'in_progress', 'todo']));
    for (const p of pulls()) expect(stored.has(keyOf(p))).toBe(false);
  });

  it('a backfill reads [since, before): items updated at or after before are left to later units', async () => {
    await fx.start();
    const sorted = [...issues()].sort((a, b) => a.updatedAt - b.updatedAt);
    const [first, end] = [sorted[40]!, sorted[100]!]; // the window runs from one's update to the other's
    const want = updatedIn(fx.emu, first.updatedAt, end.updatedAt).map((i) => String(i.number));
    expect(want).toContain(String(first.number));
    expect(want).not.toContain(String(end.number));
    const c = fx.unit({ datasetKey: 'work-items', since: new Date(first.updatedAt), before: new Date(end.updatedAt) });
    expect(await runGithubUnit(c, FAST)).toMatchObject({ items: want.length });
    const stored = (await rows<{ number: string }>(fx.db, 'work_items')).map((r) => r.number);
    expect(stored.sort()).toEqual(want.sort());
  });

  it('incremental after a backfill, with items updated in between: no gap, no duplicate', async () => {
    await fx.start();
    expect(await runGithubUnit(fx.unit({ datasetKey: 'work-items', ...ALL }), FAST)).toMatchObject({ items: 150 });

    fx.clock.set(T0 + 60_000);
    fx.emu.mutate(); // comments on, closes and opens issues at T0 + 1 min
    fx.clock.set(T0 + 3600_000);
    const changed = issues().filter((i) => i.updatedAt >= ALL.before.getTime());
    expect(changed.length).toBeGreaterThan(0);
    const incremental = fx.unit({
      datasetKey: 'work-items',
      mode: 'incremental',
      since: ALL.before,
      before: fx.clock.now(),
    });
    const result = await runGithubUnit(incremental, FAST);

    expect(result.items).toBe(changed.length);
    expect(result.watermark).toBeUndefined(); // read to the end: the engine moves it to `before`
    expect(issueList().at(-1)!.path).toContain(`since=${encodeURIComponent(ALL.before.toISOString())}`);
    const all = await rows<{ external_id: string; number: string; updated_at: Date }>(fx.db, 'work_items');
    expect(all).toHaveLength(issues().length);
    expect(new Set(all.map((r) => r.number)).size).toBe(all.length);
    const updated = new Map(issues().map((i) => [keyOf(i), i.updatedAt]));
    for (const r of all) expect(r.updated_at.getTime()).toBe(updated.get(r.external_id));
  });

  it('an incremental unit that stops after maxPages moves its watermark only to what it read', async () => {
    await fx.start({ scale: { ...ISSUES_ONLY, issues: 250 } });
    const sorted = [...issues()].sort((a, b) => a.updatedAt - b.updatedAt || a.id - b.id);
    const spec = { datasetKey: 'work-items', mode: 'incremental' as const, before: ALL.before };
    const first = await runGithubUnit(fx.unit({ ...spec, since: ALL.since }), { ...FAST, maxPages: 2 });
    const read = afterTwoPages(sorted);
    expect(first.items).toBe(read);
    expect(first.watermark).toEqual(new Date(sorted[read - 1]!.updatedAt));
    const second = await runGithubUnit(fx.unit({ ...spec, since: first.watermark! }), { ...FAST, maxPages: 2 });
    // The last one read again (since is inclusive, with any item updated at the same second), then the rest.
    expect(second.items).toBe(sorted.filter((i) => i.updatedAt >= sorted[read - 1]!.updatedAt).length);
    expect(await count(fx.db, 'work_items')).toBe(250);
  });

  it('a worker killed mid-pagination: the retry upserts every item again without duplicates', async () => {
    await fx.start({ scale: { ...ISSUES_ONLY, issues: 430 } });
    const spec = { datasetKey: 'work-items', ...ALL };
    const dying = new TestGuard('u-kill');
    dying.loseAfter = 2;
    expect(await failureOf(runGithubUnit(fx.unit({ ...spec, guard: dying }), FAST))).toBeInstanceOf(LeaseLostError);
    expect(await count(fx.db, 'work_items')).toBe(afterTwoPages(byUpdate()));
    const firstSeen = await rows<{ external_id: string; first_seen_at: Date }>(fx.db, 'work_items');

    expect(await runGithubUnit(fx.unit(spec), FAST)).toMatchObject({ items: 430 });
    expect(await runGithubUnit(fx.unit(spec), FAST)).toMatchObject({ items: 430 });
    expect(await count(fx.db, 'work_items')).toBe(430);
    const again = new Map(
      (await rows<{ external_id: string; first_seen_at: Date }>(fx.db, 'work_items')).map((r) => [
        r.external_id,
        r.first_seen_at.getTime(),
      ]),
    );
    for (const r of firstSeen) expect(again.get(r.external_id)).toBe(r.first_seen_at.getTime());
  });

  it('a lease lost mid-unit stops it: nothing is written after the loss', async () => {
    await fx.start({ scale: { ...ISSUES_ONLY, issues: 500 } });
    const guard = new TestGuard('u-lost');
    guard.loseAfter = 2;
    const c = fx.unit({ datasetKey: 'work-items', ...ALL, guard });
    expect(await failureOf(runGithubUnit(c, FAST))).toBeInstanceOf(LeaseLostError);
    expect(await count(fx.db, 'work_items')).toBe(afterTwoPages(byUpdate()));
    expect(issueList()).toHaveLength(3); // no page asked for after the loss
  });

  it('an issue closed as not planned is cancelled, completed when it was closed', async () => {
    // The emulator closes every issue as completed; GitHub also closes issues as not planned. So
    // this test alone reads a one-route stand-in answering the issues list with such an issue.
    const closed = '2026-03-01T12:00:00Z';
    const issue = { id: 1, number: 7, title: 'won’t do', state: 'closed', state_reason: 'not_planned', labels: [] };
    const page = [{ ...issue, created_at: '2026-02-01T00:00:00Z', updated_at: closed, closed_at: closed }];
    const server = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(page)),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const c = unitContext({
        db: fx.db,
        clock: fx.clock,
        provider: 'github',
        config: { baseUrl },
        token: 'ghp_STANDIN000000000000000000000000000000',
        sourceKey: 'acme/app',
        datasetKey: 'work-items',
        ...ALL,
      });
      expect(await runGithubUnit(c, FAST)).toMatchObject({ items: 1 });
      expect(await rows(fx.db, 'work_items')).toMatchObject([
        { external_id: 'acme/app#7', status: 'cancelled', completed_at: new Date(closed) },
      ]);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('GitHub provider: pull requests, comments, commits, events and reference datasets', () => {
  it('pull requests: read through the issues list in the window, each with its detail figures', async () => {
    await fx.start({ scale: { ...ISSUES_ONLY, issues: 30, pulls: 40, days: 10 } });
    const window = { since: new Date(T0 - 4.5 * DAY), before: ALL.before };
    const inside = updatedIn(fx.emu, window.since.getTime(), window.before.getTime()).filter((i) => i.pull);
    expect(inside.length).toBeLessThan(pulls().length); // the window leaves some out
    const result = await runGithubUnit(fx.unit({ datasetKey: 'pull-requests', ...window }), FAST);
    expect(result).toMatchObject({ items: inside.length });
    const prs = new Map((await rows<Record<string, unknown>>(fx.db, 'pull_requests')).map((r) => [r.external_id, r]));
    expect([...prs.keys()].sort()).toEqual(inside.map(keyOf).sort());
    const states = inside.map((p) => (p.pull!.mergedAt ? 'merged' : p.closedAt ? 'closed' : 'open'));
    expect(states).toEqual(expect.arrayContaining(['merged', 'open']));
    inside.forEach((p, k) => {
      const { additions, deletions, changedFiles } = p.pull!;
      expect(prs.get(keyOf(p))).toMatchObject({ number: p.number, state: states[k], additions, deletions });
      expect(prs.get(keyOf(p))).toMatchObject({ changed_files: changedFiles, merged_at: at(p.pull!.mergedAt) });
    });
    const raw = prs.get(keyOf(inside[0]!))!.raw as { base: Record<string, unknown>; head: Record<string, unknown> };
    const slim = { id: repo().id, full_name: repoKey(fx.emu) }; // not the whole repository
    expect(raw.base).toMatchObject({ ref: 'main', repo: slim });
    expect(raw.base.repo).toEqual(slim);
    expect(raw.head.repo).toEqual(slim);
    expect(requestsTo(fx.emu, /\/pulls\/\d+/)).toHaveLength(inside.length);
    expect(requestsTo(fx.emu, /\/pulls/)).toHaveLength(0);
    expect(issueList()[0]!.path).toContain('direction=asc');

    const reviews = inside.flatMap((p) => p.pull!.reviews);
    expect(reviews.length).toBeGreaterThan(0);
    const r = await runGithubUnit(fx.unit({ datasetKey: 'pull-request-reviews', ...window }), FAST);
    expect(r).toMatchObject({ items: reviews.length });
    const stored = await rows<Record<string, unknown>>(fx.db, 'pull_request_reviews');
    const want = reviews.map((v) => ({ external_id: String(v.id), pull_request_external_id: keyOf(v.item) }));
    expect(
      stored.map((v) => ({ external_id: v.external_id, pull_request_external_id: v.pull_request_external_id })),
    ).toEqual(expect.arrayContaining(want));
    expect(stored).toHaveLength(reviews.length);
    for (const v of reviews) expect(stored.find((s) => s.external_id === String(v.id))!.state).toBe(v.state);
  });

  it('commits in [since, before) with their stats; issue events mapped to state, label, assignee', async () => {
    await fx.start({ scale: { ...ISSUES_ONLY, issues: 40, pulls: 10, directCommits: 30, days: 10 } });
    const window = { since: new Date(T0 - 7 * DAY), before: new Date(T0 - 2 * DAY) };
    const inside = (ms: number) => ms >= window.since.getTime() && ms < window.before.getTime();
    const commits = repo().commits.filter((c) => inside(c.date));
    expect(repo().commits.some((c) => c.date === window.before.getTime())).toBe(false); // `until` is inclusive
    expect(commits.length).toBeLessThan(repo().commits.length); // the window leaves some out
    expect(await runGithubUnit(fx.unit({ datasetKey: 'commits', ...window }), FAST)).toMatchObject({
      items: commits.length,
    });
    const stored = new Map((await rows<Record<string, unknown>>(fx.db, 'commits')).map((r) => [r.sha, r]));
    expect(stored.size).toBe(commits.length);
    for (const c of commits) {
      expect(stored.get(c.sha)).toMatchObject({
        message_first_line: c.message.split('\n')[0],
        additions: c.additions,
        author: c.author.login,
        container: repoKey(fx.emu),
      });
      expect((stored.get(c.sha)!.raw as Record<string, unknown>).files).toBeUndefined();
    }

    const events = repo().events.filter((e) => !e.item.pull && inside(e.createdAt));
    expect(repo().events.some((e) => e.item.pull && inside(e.createdAt))).toBe(true); // pull requests' are left out
    const h = await runGithubUnit(fx.unit({ datasetKey: 'work-item-history', ...window }), FAST);
    expect(h).toMatchObject({ items: events.length });
    const changes = await rows<Record<string, string | null>>(fx.db, 'work_item_events');
    const got = Object.fromEntries(changes.map((e) => [e.external_id, [e.kind, e.from_value, e.to_value]]));
    expect(got).toEqual(Object.fromEntries(events.map((e) => [String(e.id), changeOf(e)])));
    expect(new Set(changes.map((e) => e.kind))).toEqual(new Set(['label', 'assignee', 'state', 'other']));
  });

  it('comments on issues (not on pull requests) updated in the window', async () => {
    await fx.start({ scale: { ...ISSUES_ONLY, issues: 60, pulls: 20, maxComments: 4 } });
    const comments = repo().comments.filter((c) => !c.item.pull);
    expect(repo().comments.length).toBeGreaterThan(comments.length);
    const r = await runGithubUnit(fx.unit({ datasetKey: 'work-item-comments', ...ALL }), FAST);
    expect(r).toMatchObject({ items: comments.length });
    const stored = await rows<Record<string, unknown>>(fx.db, 'work_item_comments');
    expect(stored.map((c) => c.external_id).sort()).toEqual(comments.map((c) => String(c.id)).sort());
    const first = comments[0]!;
    expect(stored.find((c) => c.external_id === String(first.id))).toMatchObject({
      work_item_external_id: keyOf(first.item),
      author: first.author.login,
      body: first.body,
    });
  });

  it('reference datasets: the repository and its assignable members; work-item-labels calls nothing', async () => {
    await fx.start({ scale: { ...ISSUES_ONLY, repos: 2 } });
    const own = fx.emu.data.repos.find((r) => r.private)!; // every third repository is private, from the second
    const sourceKey = repoKey(fx.emu, own);
    await runGithubUnit(fx.unit({ datasetKey: 'repositories', mode: 'full_resync', sourceKey }), FAST);
    await runGithubUnit(fx.unit({ datasetKey: 'members', mode: 'full_resync', sourceKey }), FAST);
    expect(await rows(fx.db, 'repositories')).toMatchObject([
      { external_id: String(own.id), name: sourceKey, private: true },
    ]);
    expect(await count(fx.db, 'members')).toBe(own.collaborators.length);
    const before = fx.emu.log.length;
    expect(await runGithubUnit(fx.unit({ datasetKey: 'work-item-labels' }), FAST)).toMatchObject({ items: 0 });
    expect(fx.emu.log.length).toBe(before);
  });
});

/** An issue event as a work-item event is expected: [kind, from, to]; the kinds not modelled are `other`. */
function changeOf(e: EventRecord): [string, string | null, string | null] {
  switch (e.event) {
    case 'labeled':
      return ['label', null, e.label!.name];
    case 'unlabeled':
      return ['label', e.label!.name, null];
    case 'assigned':
      return ['assignee', null, e.subject!.login];
    case 'closed':
      return ['state', 'open', 'closed'];
    case 'merged':
    case 'milestoned':
    case 'review_requested':
      return ['other', null, e.event];
  }
}
