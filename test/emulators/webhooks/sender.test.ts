/** The provider-neutral webhook sender: queueing, flush, retries, the redeliver and reorder faults, the flags. */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/errors.js';
import {
  createWebhookSender,
  hmacHex,
  webhookTargetFromFlags,
  type OutgoingDelivery,
  type WebhookSender,
} from '../../../src/emulators/core/webhooks.js';
import { byId, receivers } from './receiver.js';

const receiver = receivers();

function delivery(n: number): OutgoingDelivery {
  const id = `delivery-${n}`;
  return { id, headers: { 'content-type': 'application/json', 'x-id': id }, body: JSON.stringify({ n }) };
}

async function sendAll(sender: WebhookSender, n: number): Promise<void> {
  for (let i = 0; i < n; i++) sender.send(delivery(i));
  await sender.flush();
}

describe('hmacHex', () => {
  it('matches the test values of GitHub’s "Validating webhook deliveries"', () => {
    expect(hmacHex("It's a Secret to Everybody", 'Hello, World!')).toBe(
      '757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    );
    expect(hmacHex('k', '{"a":1}')).toBe(createHmac('sha256', 'k').update('{"a":1}').digest('hex'));
  });
});

describe('createWebhookSender', () => {
  it('returns from send at once, POSTs every delivery, and flush waits for all of them', async () => {
    const r = await receiver();
    const sender = createWebhookSender({ url: r.url, secret: 's' });
    for (let i = 0; i < 20; i++) sender.send(delivery(i));
    expect(sender.stats()).toMatchObject({ queued: 20, sent: 0 });
    expect(sender.stats().pending).toBeGreaterThan(0);
    await sender.flush();
    expect(sender.stats()).toEqual({ queued: 20, sent: 20, redelivered: 0, failed: 0, pending: 0 });
    expect(r.received.map((x) => x.json.n).sort((a, b) => a - b)).toEqual([...Array(20).keys()]);
    expect(r.received[0]!.headers['x-id']).toMatch(/^delivery-\d+$/);
    await sender.close();
    await sender.close();
  });

  it('retries a delivery answered 500 under the same id and body, with the retry headers', async () => {
    const r = await receiver((n) => (n === 0 ? 500 : 202));
    const sender = createWebhookSender(
      { url: r.url, secret: 's' },
      { backoffMs: 10, retryHeaders: (n) => ({ 'x-retry': String(n) }) },
    );
    await sendAll(sender, 1);
    expect(r.received.map((x) => x.status)).toEqual([500, 202]);
    expect(r.received[1]!.headers['x-id']).toBe(r.received[0]!.headers['x-id']);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    expect(r.received[0]!.headers['x-retry']).toBeUndefined();
    expect(r.received[1]!.headers['x-retry']).toBe('1');
    expect(sender.stats()).toMatchObject({ sent: 1, failed: 0, pending: 0 });
  });

  it('gives a delivery up after its retries when the receiver cannot be reached', async () => {
    const r = await receiver();
    await r.close();
    const sender = createWebhookSender({ url: r.url, secret: 's' }, { retries: 2, backoffMs: 5 });
    await sendAll(sender, 2);
    expect(sender.stats()).toEqual({ queued: 2, sent: 0, redelivered: 0, failed: 2, pending: 0 });
  });

  it('redelivers later with the same id and body (fault redeliver)', async () => {
    const r = await receiver();
    const sender = createWebhookSender({ url: r.url, secret: 's', faults: { redeliver: 1 } }, { redeliverAfterMs: 5 });
    await sendAll(sender, 5);
    expect(sender.stats()).toMatchObject({ queued: 5, sent: 5, redelivered: 5, pending: 0 });
    const ids = byId(r.received, 'x-id');
    expect(ids.size).toBe(5);
    for (const bodies of ids.values()) expect(bodies).toEqual([bodies[0], bodies[0]]);
  });

  it('draws redeliveries from the seed: the same seed redelivers the same deliveries', async () => {
    const runs: string[][] = [];
    for (let k = 0; k < 2; k++) {
      const r = await receiver();
      const sender = createWebhookSender(
        { url: r.url, secret: 's', faults: { redeliver: 0.3 } },
        { seed: 11, redeliverAfterMs: 1 },
      );
      await sendAll(sender, 30);
      runs.push(
        [...byId(r.received, 'x-id')]
          .filter(([, b]) => b.length > 1)
          .map(([id]) => id)
          .sort(),
      );
    }
    expect(runs[0]!.length).toBeGreaterThan(0);
    expect(runs[0]!.length).toBeLessThan(30);
    expect(runs[1]).toEqual(runs[0]);
  });

  it('holds deliveries and sends them shuffled, losing none (fault reorderWindowMs)', async () => {
    const orders: number[][] = [];
    for (let k = 0; k < 2; k++) {
      const r = await receiver();
      const sender = createWebhookSender(
        { url: r.url, secret: 's', faults: { reorderWindowMs: 200 } },
        { seed: 5, concurrency: 1 },
      );
      for (let i = 0; i < 20; i++) sender.send(delivery(i));
      expect(sender.stats().pending).toBe(20);
      await sender.flush();
      orders.push(r.received.map((x) => x.json.n as number));
    }
    expect([...orders[0]!].sort((a, b) => a - b)).toEqual([...Array(20).keys()]);
    expect(orders[0]).not.toEqual([...Array(20).keys()]);
    expect(orders[1]).toEqual(orders[0]);
  });

  it('sends held deliveries when their window ends, without a flush', async () => {
    const r = await receiver();
    const sender = createWebhookSender({ url: r.url, secret: 's', faults: { reorderWindowMs: 20 } });
    for (let i = 0; i < 3; i++) sender.send(delivery(i));
    await r.waitFor(3);
    await sender.close();
  });

  it('refuses a target without a secret or with a bad fault', () => {
    expect(() => createWebhookSender({ url: 'http://127.0.0.1:1/', secret: '' })).toThrow(ValidationError);
    expect(() => createWebhookSender({ url: 'ftp://x/', secret: 's' })).toThrow(/http/);
    expect(() => createWebhookSender({ url: 'http://x/', secret: 's', faults: { redeliver: 2 } })).toThrow(/redeliver/);
  });
});

describe('webhookTargetFromFlags', () => {
  const url = 'http://127.0.0.1:9/hooks';

  it('reads the secret from the named environment variable and the faults from their flags', () => {
    const target = webhookTargetFromFlags(
      { webhookUrl: url, webhookSecretEnv: 'HOOK_SECRET', webhookRedeliver: '0.25', webhookReorderMs: '500' },
      { HOOK_SECRET: 'shh' },
    );
    expect(target).toEqual({ url, secret: 'shh', faults: { redeliver: 0.25, reorderWindowMs: 500 } });
    expect(webhookTargetFromFlags({}, {})).toBeUndefined();
  });

  it('refuses a missing or empty secret, and faults without a URL', () => {
    expect(() => webhookTargetFromFlags({ webhookUrl: url }, {})).toThrow(/--webhook-secret-env/);
    expect(() => webhookTargetFromFlags({ webhookUrl: url, webhookSecretEnv: 'NOPE' }, {})).toThrow(/NOPE is not set/);
    expect(() => webhookTargetFromFlags({ webhookUrl: url, webhookSecretEnv: 'E' }, { E: '' })).toThrow(/not set/);
    expect(() => webhookTargetFromFlags({ webhookRedeliver: '0.5' }, {})).toThrow(/need --webhook-url/);
    expect(() =>
      webhookTargetFromFlags({ webhookUrl: url, webhookSecretEnv: 'E', webhookRedeliver: '3' }, { E: 'x' }),
    ).toThrow(/probability/);
  });
});
