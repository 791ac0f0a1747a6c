/** The Jira emulator's webhook deliveries: signed as a secure admin webhook, the documented payload fields. */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { hmacHex } from '../../../src/emulators/core/webhooks.js';
import { startJiraEmulator, type JiraEmulator } from '../../../src/emulators/jira/index.js';
import { receivers, type Received } from './receiver.js';

const START = Date.UTC(2026, 2, 2, 12);
const SECRET = 'jira-hook-secret';
const receiver = receivers();
let open: JiraEmulator[] = [];
afterEach(async () => {
  await Promise.all(open.map((e) => e.close()));
  open = [];
});

async function started() {
  const clock = new ManualClock(START);
  const e = await startJiraEmulator({ seed: 3, scale: 'small', clock, now: new Date(START), searchLagMs: 0 });
  open.push(e);
  return { e, clock };
}

const EVENTS = [
  'jira:issue_created',
  'jira:issue_updated',
  'jira:issue_deleted',
  'comment_created',
  'comment_updated',
  'comment_deleted',
];

function checkDelivery(r: Received): void {
  expect(r.headers['x-hub-signature']).toBe(`sha256=${hmacHex(SECRET, r.body)}`);
  expect(r.headers['x-atlassian-webhook-identifier']).toEqual(expect.any(String));
  expect(r.headers['x-atlassian-webhook-flow']).toBe('Primary');
  expect(r.headers['content-type']).toBe('application/json');
  const p = r.json;
  expect(EVENTS).toContain(p.webhookEvent);
  expect(typeof p.timestamp).toBe('number');
  expect(p.user).toMatchObject({ accountId: expect.any(String), displayName: expect.any(String) });
  expect(p.issue).toMatchObject({ id: expect.any(String), key: expect.any(String), self: expect.any(String) });
  expect(p.issue.fields.project).toMatchObject({
    id: expect.any(String),
    key: expect.any(String),
    name: expect.any(String),
  });
  expect(typeof p.issue.fields.summary).toBe('string');
  expect(typeof p.issue.fields.updated).toBe('string');
  if (p.webhookEvent === 'jira:issue_updated') {
    expect(p.issue_event_type_name).toEqual(expect.any(String));
    expect(p.changelog).toMatchObject({ id: expect.any(String) });
    expect(p.changelog.items.length).toBeGreaterThan(0);
    for (const item of p.changelog.items) expect(item).toHaveProperty('field');
  }
  if (p.webhookEvent.startsWith('comment_')) {
    expect(p.comment).toMatchObject({
      id: expect.any(String),
      author: expect.any(Object),
      created: expect.any(String),
    });
  }
}

describe('Jira emulator webhooks', () => {
  it('sends one signed delivery per churn edit, deletion and mutation change', async () => {
    const { e } = await started();
    const r = await receiver();
    e.setWebhookTarget({ url: r.url, secret: SECRET });
    e.setChurn(0, 0.3);
    let made = 0;
    for (let k = 0; k < 25; k++) if (e.churnEdit() !== null) made++;
    const victim = e.data.projects[0]!.issues[0]!;
    e.deleteIssue(victim.key);
    const summary = e.mutate();
    await e.webhooks!.flush();
    const changes = summary.transitioned.length + summary.commented.length + summary.created.length;
    expect(r.received).toHaveLength(made + 1 + changes);
    expect(new Set(r.received.map((x) => x.headers['x-atlassian-webhook-identifier'])).size).toBe(r.received.length);
    r.received.forEach(checkDelivery);
    const kinds = new Set(r.received.map((x) => x.json.webhookEvent as string));
    for (const k of ['jira:issue_updated', 'jira:issue_deleted', 'comment_created', 'jira:issue_created']) {
      expect(kinds).toContain(k);
    }
    const deletes = r.received.filter((x) => x.json.webhookEvent === 'jira:issue_deleted');
    expect(deletes.map((x) => x.json.issue.id as string).sort()).toEqual([...e.churnDeleted(), victim.id].sort());
    expect(r.received.filter((x) => x.json.webhookEvent === 'jira:issue_created').map((x) => x.json.issue.key)).toEqual(
      expect.arrayContaining(summary.created),
    );
  });

  it('retries a delivery answered 500 with the same identifier and X-Atlassian-Webhook-Retry', async () => {
    const { e } = await started();
    const r = await receiver((n) => (n === 0 ? 500 : 202));
    e.setWebhookTarget({ url: r.url, secret: SECRET });
    e.churnEdit();
    await e.webhooks!.flush();
    expect(r.received.map((x) => x.status)).toEqual([500, 202]);
    const [first, retry] = r.received;
    expect(retry!.headers['x-atlassian-webhook-identifier']).toBe(first!.headers['x-atlassian-webhook-identifier']);
    expect(retry!.body).toBe(first!.body);
    expect(first!.headers['x-atlassian-webhook-retry']).toBeUndefined();
    expect(retry!.headers['x-atlassian-webhook-retry']).toBe('1');
  });

  it('shuffles deliveries within the reorder window and loses none', async () => {
    const { e } = await started();
    const r = await receiver();
    e.setWebhookTarget({ url: r.url, secret: SECRET, faults: { reorderWindowMs: 5_000 } });
    const keys: string[] = [];
    for (let k = 0; k < 15; k++) {
      const before = r.received.length;
      const key = e.churnEdit();
      if (key) keys.push(key);
      expect(r.received.length).toBe(before);
    }
    await e.webhooks!.flush();
    expect(r.received).toHaveLength(keys.length);
    const got = r.received.map((x) => x.json.issue.key as string);
    expect([...got].sort()).toEqual([...keys].sort());
    expect(got).not.toEqual(keys);
  });
});
