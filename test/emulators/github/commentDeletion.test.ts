/**
 * Deleted issue comments in the GitHub emulator (edits.ts `removeComment`, the churn): a deleted
 * comment leaves the repository's and its issue's comment lists, reading it answers 404 in GitHub's
 * error shape, its issue keeps its `updated_at` and comment ids stay unique; the deletion sends an
 * `issue_comment` `deleted` delivery in the shape of the recorded example.
 */
import { createRequire } from 'node:module';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { describe, expect, it } from 'vitest';
import { receivers, shapeDiffs } from '../webhooks/receiver.js';
import { clockedEmulators, get, getAll, type Json } from './helpers.js';

const examples = createRequire(import.meta.url)('@octokit/webhooks-examples') as WebhookDefinition[];
const START = Date.UTC(2026, 2, 2, 12);
const MINUTE = 60_000;
const emulator = clockedEmulators(START, {
  seed: 4,
  scale: { repos: 1, issues: 60, pulls: 10, maxComments: 3, directCommits: 2, members: 3, days: 5 },
});
const receiver = receivers();

describe('GitHub emulator: deleted issue comments', () => {
  it('a deleted comment leaves every list, answers 404, and leaves its issue as it was', async () => {
    const { e, clock } = await emulator();
    const repo = e.data.repos[0]!;
    const issue = repo.items.find((i) => !i.pull && i.comments.length >= 2)!;
    const [gone, kept] = issue.comments;
    const base = `/repos/${e.data.org.login}/${repo.name}`;
    const before = (await get(e, `${base}/issues/${issue.number}`)).body;
    clock.set(START + MINUTE);
    const removed = e.edit.removeComment(gone!.id);
    expect(removed.deletedAt).toBe(START + MINUTE);

    const read = await get(e, `${base}/issues/comments/${gone!.id}`);
    expect(read.status).toBe(404);
    expect(read.body).toEqual({
      message: 'Not Found',
      documentation_url: 'https://docs.github.com/rest/issues/comments#get-an-issue-comment',
      status: '404',
    });
    expect((await get(e, `${base}/issues/comments/${kept!.id}`)).status).toBe(200);
    const all = await getAll(e, `${base}/issues/comments?sort=updated&direction=asc&per_page=100`);
    expect(all.items.map((c) => c.id)).not.toContain(gone!.id);
    expect(all.items).toHaveLength(repo.comments.length);
    const own = (await get(e, `${base}/issues/${issue.number}/comments`)).body as Json[];
    expect(own.map((c) => c.id)).toEqual(issue.comments.map((c) => c.id));
    expect(own.map((c) => c.id)).not.toContain(gone!.id);
    // The issue is unchanged but for its comment count.
    const after = (await get(e, `${base}/issues/${issue.number}`)).body;
    expect(after.updated_at).toBe(before.updated_at);
    expect(after.comments).toBe(before.comments - 1);
    // A deleted comment cannot be deleted or edited again; a new comment takes a new id.
    expect(() => e.edit.removeComment(gone!.id)).toThrow(/no comment/);
    expect(() => e.edit.editComment(gone!.id)).toThrow(/no comment/);
    const fresh = e.edit.comment(issue.number);
    const ids = [...repo.comments, ...repo.deletedComments].map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(fresh.id).toBe(Math.max(...ids));
  });

  it('sends an issue_comment deleted delivery in the shape of the recorded example', async () => {
    const { e } = await emulator();
    const r = await receiver();
    e.setWebhookTarget({ url: r.url, secret: 'hook-secret' });
    const comment = e.data.repos[0]!.comments.find((c) => !c.item.pull)!;
    e.edit.removeComment(comment.id);
    await e.webhooks!.flush();
    expect(r.received).toHaveLength(1);
    const [x] = r.received;
    expect(x!.headers['x-github-event']).toBe('issue_comment');
    const payload = x!.json;
    expect(payload).toMatchObject({
      action: 'deleted',
      comment: { id: comment.id },
      issue: { number: comment.item.number },
    });
    const refs = (examples.find((d) => d.name === 'issue_comment')?.examples ?? []).filter(
      (ex) => (ex as { action?: string }).action === 'deleted',
    ) as Record<string, Json>[];
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      const diffs = [
        ...shapeDiffs(ref, payload),
        ...['issue', 'comment'].flatMap((p) => shapeDiffs(ref[p], payload[p], `${p}.`)),
      ];
      expect(diffs).toEqual([]);
    }
  });

  it('the churn deletes comments too, drawn from the seed', async () => {
    const { e, clock } = await emulator({ churn: 5 });
    const repo = e.data.repos[0]!;
    const path = `/repos/${e.data.org.login}/${repo.name}/issues?state=all`;
    for (let i = 0; i < 40; i++) {
      clock.advance(1000);
      await get(e, path);
    }
    expect(repo.deletedComments.length).toBeGreaterThan(0);
    for (const c of repo.deletedComments) {
      expect(c.deletedAt).toBeDefined();
      expect(repo.comments).not.toContain(c);
      expect(c.item.comments).not.toContain(c);
    }
    const deletedIssues = repo.items.filter((i) => i.deletedAt !== undefined).length;
    expect(e.activity().deletions).toBe(deletedIssues + repo.deletedComments.length);
  });
});
