/**
 * The Jira emulator's routes of single comments (routesComments.ts) and comment deletion
 * (commentDeletions.ts): `POST /rest/api/3/comment/list` in Jira's page shape, answering only the
 * comments that exist and refusing a body that is not 1 to 1,000 comment ids; `GET` and `DELETE`
 * of `issue/{id}/comment/{id}`; a deletion that leaves the issue's `updated` where it was; churn
 * that deletes comments at the share it is given.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import {
  COMMENT_LIST_MAX,
  COMMENT_LIST_PAGE,
  startJiraEmulator,
  type JiraEmulator,
} from '../../../src/emulators/jira/index.js';
import { jiraCall, type CallInit, type Json } from './helpers.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const LIST = '/rest/api/3/comment/list';

let emu: JiraEmulator;
afterEach(async () => {
  await emu.close();
});

const call = (path: string, init: CallInit = {}) => jiraCall(emu, path, init);
let clock = new ManualClock(T0);
/** The emulator, its `comment/list` pages of `page` comments (null: one page holds all). */
const start = (page: number | null = COMMENT_LIST_PAGE) => {
  clock = new ManualClock(T0);
  const commentListPage = page ?? undefined;
  return startJiraEmulator({ clock, seed: 4, commentListPage, scale: { projects: 1, issues: 80, maxComments: 6 } });
};

const issues = () => emu.data.projects.flatMap((p) => p.issues);
const comments = () => issues().flatMap((i) => i.comments.map((c) => ({ issue: i, comment: c })));

describe('Jira emulator comment routes', () => {
  it('comment/list answers the comments that exist, in pages of Jira’s shape', async () => {
    emu = await start();
    const all = comments();
    expect(all.length).toBeGreaterThan(COMMENT_LIST_PAGE);
    const ids = all.map((c) => Number(c.comment.id));
    const asked = [...ids, 1, 999_999_999]; // two ids of no comment
    const first = await call(LIST, { method: 'POST', body: { ids: asked } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ startAt: 0, maxResults: COMMENT_LIST_PAGE, total: all.length, isLast: false });
    expect(first.body.nextPage).toContain(`${LIST}?startAt=${COMMENT_LIST_PAGE}`);
    expect(first.body.values).toHaveLength(COMMENT_LIST_PAGE);
    const c = first.body.values[0];
    expect(Object.keys(c).sort()).toEqual(
      ['author', 'body', 'created', 'id', 'jsdPublic', 'self', 'updateAuthor', 'updated'].sort(),
    );
    const owner = all.find((x) => x.comment.id === c.id)!;
    expect(c.self).toBe(`${emu.url}/rest/api/3/issue/${owner.issue.id}/comment/${c.id}`);
    // Every page in turn (`startAt`): together the existing comments, each once.
    const seen: string[] = [];
    for (let startAt = 0; ; startAt += COMMENT_LIST_PAGE) {
      const page = await call(`${LIST}?startAt=${startAt}`, { method: 'POST', body: { ids: asked } });
      seen.push(...page.body.values.map((v: Json) => v.id as string));
      if (page.body.isLast) break;
    }
    expect(seen.sort()).toEqual(ids.map(String).sort());
    // Ids as strings of digits are read too; a page holding them all is the last.
    const few = await call(LIST, { method: 'POST', body: { ids: ids.slice(0, 3).map(String) } });
    expect(few.body).toMatchObject({ total: 3, isLast: true });
    await emu.close();
    // Without a page size set, one page holds every comment asked for, as Jira's example answer does.
    emu = await start(null);
    const whole = await call(LIST, { method: 'POST', body: { ids: asked } });
    expect(whole.body).toMatchObject({ startAt: 0, total: all.length, isLast: true });
    expect(whole.body.values).toHaveLength(all.length);
    expect(few.body).not.toHaveProperty('nextPage');
  });

  it('comment/list refuses an empty list, more than 1,000 ids, ids that are not numbers, and a GET', async () => {
    emu = await start();
    const bad = [
      {},
      { ids: [] },
      { ids: Array.from({ length: COMMENT_LIST_MAX + 1 }, (_, i) => i + 1) },
      { ids: ['10001', 'abc'] },
      { ids: [10001.5] },
      { ids: '10001' },
    ];
    for (const body of bad) {
      const res = await call(LIST, { method: 'POST', body });
      expect(res.status, JSON.stringify(body).slice(0, 40)).toBe(400);
      expect(res.body.errorMessages).toHaveLength(1);
    }
    const max = await call(LIST, {
      method: 'POST',
      body: { ids: Array.from({ length: COMMENT_LIST_MAX }, (_, i) => i + 1) },
    });
    expect(max.status).toBe(200);
    expect((await call(LIST)).status).toBe(405);
  });

  it('a comment deleted leaves every read, not its issue’s `updated`, and is kept in the deleted list', async () => {
    emu = await start();
    const { issue, comment } = comments()[5]!;
    const path = `/rest/api/3/issue/${issue.key}/comment/${comment.id}`;
    const read = await call(path);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: comment.id });
    const updated = issue.updated;
    const left = issue.comments.length - 1;

    expect((await call(path, { method: 'DELETE' })).status).toBe(204);
    expect((await call(path)).status).toBe(404);
    expect((await call(path, { method: 'DELETE' })).status).toBe(404);
    const list = await call(LIST, { method: 'POST', body: { ids: [Number(comment.id)] } });
    expect(list.body).toMatchObject({ total: 0, isLast: true, values: [] });
    const all = await call(`/rest/api/3/issue/${issue.id}/comment`);
    expect(all.body.total).toBe(left);
    expect(all.body.comments.map((c: Json) => c.id)).not.toContain(comment.id);
    expect(issue.updated).toBe(updated);
    expect(emu.deletedComments()).toEqual([{ issueId: issue.id, comment, at: T0 }]);
    expect(() => emu.deleteComment(issue.id, comment.id)).toThrow(/no comment/);
  });

  it('churn deletes comments at the share it is given, and none without one', async () => {
    emu = await start();
    for (let i = 0; i < 40; i++) emu.churnEdit();
    expect(emu.churnStats().byKind['comment-delete']).toBe(0);
    expect(emu.deletedComments()).toEqual([]);
    emu.setCommentDeleteShare(0.5);
    for (let i = 0; i < 40; i++) emu.churnEdit();
    const deleted = emu.deletedComments();
    expect(deleted.length).toBe(emu.churnStats().byKind['comment-delete']);
    expect(deleted.length).toBeGreaterThan(5);
    const live = new Set(comments().map((c) => c.comment.id));
    for (const d of deleted) expect(live.has(d.comment.id)).toBe(false);
    expect(() => emu.setCommentDeleteShare(2)).toThrow(/share/);

    // Every edit drawing an issue with comments deletes one: an issue that never ran out of comments
    // had nothing but deletions, and its `updated` did not move.
    clock.set(T0 + 3_600_000);
    emu.setCommentDeleteShare(1);
    const atStart = new Map(issues().map((i) => [i.id, { updated: i.updated, comments: i.comments.length }]));
    const from = emu.deletedComments().length;
    for (let i = 0; i < 20; i++) emu.churnEdit();
    const perIssue = new Map<string, number>();
    for (const d of emu.deletedComments().slice(from)) perIssue.set(d.issueId, (perIssue.get(d.issueId) ?? 0) + 1);
    const onlyDeleted = [...perIssue].filter(([id, n]) => atStart.get(id)!.comments > n);
    expect(onlyDeleted.length).toBeGreaterThan(0);
    for (const [id] of onlyDeleted) expect(emu.data.issuesById.get(id)!.updated, id).toBe(atStart.get(id)!.updated);
  });
});
