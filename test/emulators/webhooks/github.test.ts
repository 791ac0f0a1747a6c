/**
 * The GitHub emulator's webhook deliveries: one signed delivery per edit (tests' edits, churn,
 * mutation rounds), headers as GitHub sends them, payloads with every key and JSON type of the
 * recorded examples in @octokit/webhooks-examples.
 */
import { createRequire } from 'node:module';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { describe, expect, it } from 'vitest';
import { hmacHex } from '../../../src/emulators/core/webhooks.js';
import type { GithubEmulator, ItemRecord } from '../../../src/emulators/github/index.js';
import { clockedEmulators, get } from '../github/helpers.js';
import { byId, receivers, shapeDiffs, type Received } from './receiver.js';

/** GitHub's recorded webhook payloads (a JSON package: read it as such). */
const examples = createRequire(import.meta.url)('@octokit/webhooks-examples') as WebhookDefinition[];
const START = Date.UTC(2026, 2, 2, 12);
const SECRET = 'github-hook-secret';
const emulator = clockedEmulators(START, { seed: 4, scale: 'small' });
const receiver = receivers();
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** The recorded examples of `event` with `action`. */
function recorded(event: string, action: string): Record<string, Json>[] {
  const def = examples.find((d) => d.name === event);
  return (def?.examples ?? []).filter((e) => (e as { action?: string }).action === action) as Record<string, Json>[];
}

/** Differences of `payload` from every recorded example of its event and action (top level and `parts`). */
function diffsFromExamples(event: string, payload: Json, parts: string[]): string[] {
  const refs = recorded(event, payload.action as string);
  expect(refs.length).toBeGreaterThan(0);
  return refs.flatMap((ref) => {
    const top = shapeDiffs(ref, payload).filter((d) => !d.startsWith('installation:') && !d.startsWith('changes:'));
    return [...top, ...parts.flatMap((p) => (ref[p] && payload[p] ? shapeDiffs(ref[p], payload[p], `${p}.`) : []))];
  });
}

function checkSigned(r: Received): void {
  expect(r.headers['x-hub-signature-256']).toBe(`sha256=${hmacHex(SECRET, r.body)}`);
  expect(r.headers['content-type']).toBe('application/json');
  expect(r.headers['user-agent']).toMatch(/^GitHub-Hookshot\/[0-9a-f]{7}$/);
  expect(r.headers['x-github-delivery']).toMatch(GUID);
  expect(['issues', 'issue_comment', 'pull_request', 'pull_request_review']).toContain(r.headers['x-github-event']);
}

async function pointed(opts: Parameters<typeof emulator>[0] = {}) {
  const { e, clock } = await emulator(opts);
  const r = await receiver();
  e.setWebhookTarget({ url: r.url, secret: SECRET });
  return { e, clock, r };
}

function firstIssue(e: GithubEmulator, withComments = false): ItemRecord {
  return e.data.repos[0]!.items.find((i) => !i.pull && i.closedAt === null && (!withComments || i.comments.length))!;
}

describe('GitHub emulator webhooks', () => {
  it('sends nothing until pointed at a target', async () => {
    const { e } = await emulator();
    expect(e.webhooks).toBeNull();
    e.edit.touch(firstIssue(e).number);
    const r = await receiver();
    e.setWebhookTarget({ url: r.url, secret: SECRET });
    expect(e.webhooks).not.toBeNull();
    await e.webhooks!.flush();
    expect(r.received).toHaveLength(0);
  });

  it('sends one signed delivery per test edit, in the shapes of the recorded examples', async () => {
    const { e, r } = await pointed({ app: {} });
    const issue = firstIssue(e, true);
    const pull = e.data.repos[0]!.items.find((i) => i.pull)!;
    e.edit.touch(issue.number);
    const comment = e.edit.comment(issue.number);
    e.edit.editComment(comment.id);
    e.edit.close(issue.number);
    e.edit.touch(pull.number);
    e.edit.remove(issue.number);
    await e.webhooks!.flush();
    expect(e.webhooks!.stats()).toMatchObject({ queued: 6, sent: 6, failed: 0, pending: 0 });
    expect(r.received).toHaveLength(6);
    const seen = r.received.map((x) => `${String(x.headers['x-github-event'])}.${x.json.action as string}`);
    expect(seen).toEqual([
      'issues.edited',
      'issue_comment.created',
      'issue_comment.edited',
      'issues.closed',
      'pull_request.edited',
      'issues.deleted',
    ]);
    expect(new Set(r.received.map((x) => x.headers['x-github-delivery'])).size).toBe(6);
    for (const x of r.received) {
      checkSigned(x);
      expect(x.json.repository).toMatchObject({
        full_name: `emulated-org/${e.data.repos[0]!.name}`,
        name: e.data.repos[0]!.name,
      });
      expect(x.json.repository.owner.login).toBe('emulated-org');
      expect(x.json.organization.login).toBe('emulated-org');
      expect(typeof x.json.sender.login).toBe('string');
      expect(x.json.installation.id).toBe(e.installationId);
    }
    const [edited, created, , closed, pullEdited, deleted] = r.received.map((x) => x.json);
    expect(diffsFromExamples('issues', edited, ['issue', 'repository'])).toEqual([]);
    expect(diffsFromExamples('issues', deleted, ['issue', 'repository'])).toEqual([]);
    expect(diffsFromExamples('issue_comment', created, ['issue', 'comment', 'repository'])).toEqual([]);
    expect(edited.issue.number).toBe(issue.number);
    expect(created.comment.id).toBe(comment.id);
    expect(created.issue.number).toBe(issue.number);
    expect(closed.issue.state).toBe('closed');
    expect(pullEdited.pull_request.number).toBe(pull.number);
    expect(deleted.issue.id).toBe(issue.id);
  });

  it('sends a delivery for every change of a mutation round, each with its own id', async () => {
    const { e, r } = await pointed();
    const summary = e.mutate();
    await e.webhooks!.flush();
    const n = e.webhooks!.stats().queued;
    expect(n).toBeGreaterThanOrEqual(
      summary.newComments.length + summary.editedComments.length + summary.created.length,
    );
    expect(r.received).toHaveLength(n);
    expect(new Set(r.received.map((x) => x.headers['x-github-delivery'])).size).toBe(n);
    r.received.forEach(checkSigned);
    const comments = r.received.filter((x) => x.headers['x-github-event'] === 'issue_comment');
    expect(comments.map((x) => x.json.comment.id).sort()).toEqual(
      [...summary.newComments, ...summary.editedComments].sort(),
    );
    const opened = r.received.filter((x) => x.json.action === 'opened');
    expect(opened).toHaveLength(summary.created.length);
    for (const x of r.received.filter((y) => y.headers['x-github-event'] === 'pull_request_review')) {
      expect(diffsFromExamples('pull_request_review', x.json, ['review'])).toEqual([]);
    }
  });

  it('sends one delivery per churn edit made while lists are read', async () => {
    const { e, clock, r } = await pointed();
    e.setChurn(2);
    const repo = e.data.repos[0]!.name;
    for (let i = 0; i < 4; i++) {
      expect((await get(e, `/repos/emulated-org/${repo}/issues?state=all`)).status).toBe(200);
      clock.advance(1000);
    }
    await e.webhooks!.flush();
    const made = e.activity().edits;
    expect(made).toBeGreaterThan(0);
    expect(r.received).toHaveLength(made);
    expect(new Set(r.received.map((x) => x.headers['x-github-delivery'])).size).toBe(made);
    expect(r.received.filter((x) => x.json.action === 'deleted')).toHaveLength(e.activity().deletions);
  });

  it('redelivers with the same id and body when the fault says so, and replaces its target', async () => {
    const { e, r } = await pointed();
    const again = await receiver();
    e.setWebhookTarget({ url: again.url, secret: SECRET, faults: { redeliver: 1 } });
    const issue = firstIssue(e);
    e.edit.touch(issue.number);
    e.edit.comment(issue.number);
    await e.webhooks!.flush();
    expect(r.received).toHaveLength(0);
    const ids = byId(again.received, 'x-github-delivery');
    expect(ids.size).toBe(2);
    for (const bodies of ids.values()) expect(bodies).toEqual([bodies[0], bodies[0]]);
    expect(e.webhooks!.stats()).toMatchObject({ sent: 2, redelivered: 2 });
    e.setWebhookTarget(null);
    expect(e.webhooks).toBeNull();
  });

  it('retries a delivery answered 500 under the same delivery id', async () => {
    const { e } = await emulator();
    const r = await receiver((n) => (n === 0 ? 500 : 202));
    e.setWebhookTarget({ url: r.url, secret: SECRET });
    e.edit.touch(firstIssue(e).number);
    await e.webhooks!.flush();
    expect(r.received.map((x) => x.status)).toEqual([500, 202]);
    expect(r.received[1]!.headers['x-github-delivery']).toBe(r.received[0]!.headers['x-github-delivery']);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
  });
});
