/**
 * The Linear emulator's comments: the root `comments` connection (a comment's issue filter, its
 * `updatedAt` bound, `orderBy: updatedAt` newest first, comments of archived issues only with
 * `includeArchived`, ids by `id: { in }`), its complexity, and `deleteComment` / `editComment`
 * (Linear's `commentDelete` / `commentUpdate`), which leave the issue's `updatedAt` where it was
 * and are kept for the chaos ground truth.
 */
import { parse } from 'graphql';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { linearTruth } from '../../../src/chaos/targets/linear.js';
import {
  linearSchema,
  queryComplexity,
  startLinearEmulator,
  type LinearEmulator,
} from '../../../src/emulators/linear/index.js';
import {
  commentFilter,
  COMMENTS_BY_IDS_QUERY,
  COMMENTS_VERIFY_CONFIRM_QUERY,
  COMMENTS_VERIFY_LIST_QUERY,
} from '../../../src/providers/linear/queries.js';
import { gql, type Json } from '../../providers/linear/helpers.js';

const T0 = Date.UTC(2026, 2, 2, 12);
let emu: LinearEmulator | null = null;

afterEach(async () => {
  await emu?.close();
  emu = null;
});

const clock = new ManualClock(T0);

async function start(): Promise<LinearEmulator> {
  clock.set(T0);
  emu = await startLinearEmulator({ clock, scale: { teams: 2, issues: 80 } });
  return emu;
}

/** Every comment of team `key`'s issues the listing answers, page by page with the cursor. */
async function listAll(e: LinearEmulator, key: string, upTo: string | null = null): Promise<Json[]> {
  const q = COMMENTS_VERIFY_LIST_QUERY;
  const out: Json[] = [];
  let after: string | null = null;
  for (;;) {
    const r = await gql(e, q.text, { filter: commentFilter([key], upTo), first: 25, after });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    out.push(...r.body.data.comments.nodes);
    if (!r.body.data.comments.pageInfo.hasNextPage) return out;
    after = r.body.data.comments.pageInfo.endCursor;
  }
}

function teamComments(e: LinearEmulator, key: string) {
  const team = e.data.teams.find((t) => t.key === key)!.id;
  return e.data.issues.filter((i) => i.teamId === team).flatMap((i) => i.comments);
}

describe('Linear emulator: comments', () => {
  it('lists a team’s comments newest first, bounded by updatedAt, archived issues’ only when asked', async () => {
    const e = await start();
    const want = teamComments(e, 'ENG');
    expect(want.length).toBeGreaterThan(25);
    const all = await listAll(e, 'ENG');
    expect(all.map((c: Json) => c.id).sort()).toEqual(want.map((c) => c.id).sort());
    const times = all.map((c: Json) => Date.parse(c.updatedAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const mid = new Date(times[Math.floor(times.length / 2)]!).toISOString();
    const older = await listAll(e, 'ENG', mid);
    expect(older.map((c: Json) => c.id).sort()).toEqual(
      want
        .filter((c) => c.updatedAt <= Date.parse(mid))
        .map((c) => c.id)
        .sort(),
    );
    // A comment of an archived issue is archived with it: left out unless includeArchived.
    const issue = e.data.issues.find((i) => i.comments.length > 0 && e.data.teams[0]!.id === i.teamId)!;
    e.archiveIssue(issue.id);
    const plain = await gql(e, '{ comments(first: 250) { nodes { id archivedAt } } }');
    expect(plain.body.data.comments.nodes.map((c: Json) => c.id)).not.toContain(issue.comments[0]!.id);
    const archived = await gql(e, COMMENTS_VERIFY_CONFIRM_QUERY.text, { ids: [issue.comments[0]!.id], first: 1 });
    expect(archived.body.data.comments.nodes).toEqual([
      { id: issue.comments[0]!.id, updatedAt: new Date(issue.comments[0]!.updatedAt).toISOString() },
    ]);
  });

  it('a deleted comment leaves every read, its issue unmoved; the ground truth names it deleted', async () => {
    const e = await start();
    const issue = e.data.issues.find((i) => i.comments.length > 1)!;
    const [gone, kept] = issue.comments;
    const updated = issue.updatedAt;
    e.deleteComment(gone!.id);
    expect(issue.updatedAt).toBe(updated);
    expect(() => e.deleteComment(gone!.id)).toThrow(/no comment/);
    expect(e.data.deletedComments).toEqual([{ id: gone!.id, issueId: issue.id, deletedAt: T0 }]);
    const byId = await gql(e, COMMENTS_BY_IDS_QUERY.text, { ids: [gone!.id, kept!.id], first: 2 });
    expect(byId.body.data.comments.nodes.map((c: Json) => [c.id, c.issueId])).toEqual([[kept!.id, issue.id]]);
    const nested = await gql(e, `{ issue(id: "${issue.id}") { comments { nodes { id } } } }`);
    expect(nested.body.data.issue.comments.nodes.map((c: Json) => c.id)).not.toContain(gone!.id);

    const comments = linearTruth(e.data).find((t) => t.table === 'work_item_comments')!;
    expect([...comments.deleted!]).toEqual([gone!.id]);
    expect(comments.rows.has(gone!.id)).toBe(false);
    // A comment of an issue deleted since is gone with its issue: neither a row nor a deletion.
    e.deleteIssue(issue.id);
    expect(linearTruth(e.data).find((t) => t.table === 'work_item_comments')!.deleted!.size).toBe(0);
  });

  it('an edited comment moves to the front of the listing; its issue stays', async () => {
    const e = await start();
    const issue = e.data.issues.find((i) => i.teamId === e.data.teams[0]!.id && i.comments.length > 0)!;
    const updated = issue.updatedAt;
    const comment = issue.comments[0]!;
    clock.set(T0 + 60_000);
    e.editComment(comment.id);
    expect(issue.updatedAt).toBe(updated);
    const first = (await listAll(e, 'ENG'))[0];
    expect(first).toEqual({ id: comment.id, updatedAt: new Date(T0 + 60_000).toISOString() });
  });

  it('the verify listing of 250 comments costs about 1.2 points a comment (its node and two scalars)', () => {
    const op = parse(COMMENTS_VERIFY_LIST_QUERY.text).definitions[0] as Parameters<typeof queryComplexity>[1];
    const points = queryComplexity(linearSchema(), op, [], { first: 250 });
    expect(points).toBeGreaterThanOrEqual(250 * 1.2);
    expect(points).toBeLessThanOrEqual(250 * 1.2 + 5); // the connection and its pageInfo
  });
});
