/** The Linear emulator's webhook deliveries: signed, Linear's headers, the documented payload fields. */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { hmacHex } from '../../../src/emulators/core/webhooks.js';
import { startLinearEmulator, type LinearEmulator } from '../../../src/emulators/linear/index.js';
import { receivers, type Received } from './receiver.js';

const START = Date.UTC(2026, 2, 2, 12);
const SECRET = 'linear-hook-secret';
const receiver = receivers();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
let open: LinearEmulator[] = [];
afterEach(async () => {
  await Promise.all(open.map((e) => e.close()));
  open = [];
});

async function pointed() {
  const clock = new ManualClock(START);
  const e = await startLinearEmulator({ seed: 2, scale: 'small', clock, now: new Date(START) });
  open.push(e);
  const r = await receiver();
  e.setWebhookTarget({ url: r.url, secret: SECRET });
  return { e, r, clock };
}

function checkDelivery(r: Received, sentAt: number): void {
  expect(r.headers['linear-signature']).toBe(hmacHex(SECRET, r.body));
  expect(r.headers['linear-delivery']).toMatch(UUID);
  expect(r.headers['linear-event']).toBe(r.json.type);
  expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(r.headers['user-agent']).toBe('Linear-Webhook');
  const p = r.json;
  for (const k of ['action', 'type', 'data', 'url', 'createdAt', 'organizationId', 'webhookTimestamp', 'webhookId']) {
    expect(p).toHaveProperty(k);
  }
  expect(['create', 'update', 'remove']).toContain(p.action);
  expect(p.webhookTimestamp).toBe(sentAt);
  expect(p.organizationId).toMatch(UUID);
  expect(p.webhookId).toMatch(UUID);
  expect(typeof p.data.id).toBe('string');
  expect(typeof p.data.createdAt).toBe('string');
  expect(typeof p.data.updatedAt).toBe('string');
  if (p.type === 'Issue') {
    expect(p.data).toMatchObject({
      identifier: expect.any(String),
      number: expect.any(Number),
      title: expect.any(String),
    });
    expect(p.data.team).toEqual({ id: p.data.teamId, key: expect.any(String), name: expect.any(String) });
    expect(p.data.identifier).toBe(`${p.data.team.key as string}-${p.data.number as number}`);
    expect(typeof p.data.stateId).toBe('string');
    expect(p.url).toBe(p.data.url);
  } else {
    expect(p.type).toBe('Comment');
    expect(p.data).toMatchObject({ body: expect.any(String), issueId: expect.any(String), userId: expect.any(String) });
    expect(p.data.issue).toMatchObject({ id: p.data.issueId, title: expect.any(String) });
  }
}

describe('Linear emulator webhooks', () => {
  it('sends one signed delivery per edit, archive and deletion, stamped with the clock', async () => {
    const { e, r, clock } = await pointed();
    const [a, b, c] = e.data.issues.slice(-3).map((i) => i.id);
    for (let k = 0; k < 6; k++) e.editIssue(a!);
    clock.advance(5000);
    e.archiveIssue(b!);
    const removed = e.data.issueById.get(c!)!;
    e.deleteIssue(c!);
    await e.webhooks!.flush();
    expect(r.received).toHaveLength(8);
    expect(new Set(r.received.map((x) => x.headers['linear-delivery'])).size).toBe(8);
    r.received.slice(0, 6).forEach((x) => checkDelivery(x, START));
    r.received.slice(6).forEach((x) => checkDelivery(x, START + 5000));
    for (const x of r.received.slice(0, 6)) {
      if (x.json.type === 'Issue') {
        expect(x.json.action).toBe('update');
        expect(x.json.updatedFrom.stateId).not.toBe(x.json.data.stateId);
      } else {
        expect(x.json.action).toBe('create');
        expect(x.json.data.issueId).toBe(a);
      }
    }
    const archived = r.received[6]!.json;
    expect(archived).toMatchObject({ action: 'update', type: 'Issue', data: { id: b } });
    expect(archived.data.archivedAt).toBe(new Date(START + 5000).toISOString());
    expect(archived.updatedFrom).toHaveProperty('archivedAt', null);
    const gone = r.received[7]!.json;
    expect(gone).toMatchObject({ action: 'remove', type: 'Issue', data: { id: c, title: removed.title } });
  });

  it('sends the changes of a mutation round and of churn, one delivery id each', async () => {
    const { e, r, clock } = await pointed();
    const summary = e.mutate();
    await e.webhooks!.flush();
    const created = r.received.filter((x) => x.json.type === 'Issue' && x.json.action === 'create');
    expect(created.map((x) => x.json.data.id)).toEqual(summary.created);
    const n = e.webhooks!.stats().queued;
    expect(r.received).toHaveLength(n);
    e.setChurn({ editsPerSecond: 3 });
    const query = JSON.stringify({ query: '{ viewer { id } }' });
    const headers = { authorization: e.token, 'content-type': 'application/json' };
    for (let i = 0; i < 3; i++) {
      await fetch(e.url, { method: 'POST', headers, body: query });
      clock.advance(1000);
    }
    await e.webhooks!.flush();
    expect(e.churned.length).toBeGreaterThan(0);
    expect(r.received).toHaveLength(n + e.churned.length);
    expect(new Set(r.received.map((x) => x.headers['linear-delivery'])).size).toBe(r.received.length);
    r.received.forEach((x) => checkDelivery(x, x.json.webhookTimestamp as number));
  });
});
