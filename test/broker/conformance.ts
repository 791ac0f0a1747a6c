import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Broker, Consumer, TaskHandler, TaskMessage, TaskName } from '../../src/broker/types.js';

/** Upper bound of every wait; the waits themselves are resolved by handlers. */
export const WAIT_MS = 20_000;

export interface BrokerUnderTest {
  broker: Broker;
  /** Runs after the broker is closed: removes what it left behind (queues, keys). */
  cleanup?: () => Promise<void>;
}

export type BrokerFactory = (hooks: {
  onError: (err: unknown, msg: TaskMessage) => void;
}) => BrokerUnderTest | Promise<BrokerUnderTest>;

/** A message whose job id has ':' in it, as the outbox derives them. */
export function message(i: number, name: TaskName = 'run_sync_unit', tag = 'm'): TaskMessage {
  return { name, payload: { orgId: 'org-1', runId: `run-${tag}`, unitId: `unit-${i}` }, jobId: `outbox:${tag}:${i}` };
}

/** Records what a handler received and resolves waits on it. */
export class Inbox {
  readonly received: TaskMessage[] = [];
  private waiters: Array<{ check: () => boolean; resolve: () => void }> = [];

  readonly handler: TaskHandler = async (msg) => this.push(msg);

  push(msg: TaskMessage): void {
    this.received.push(msg);
    this.waiters = this.waiters.filter((w) => (w.check() ? (w.resolve(), false) : true));
  }

  count(jobId: string): number {
    return this.received.filter((m) => m.jobId === jobId).length;
  }

  /** Resolves once `check` holds, or fails after `ms`. */
  until(check: () => boolean, what: string, ms = WAIT_MS): Promise<void> {
    if (check()) return Promise.resolve();
    return within(new Promise<void>((resolve) => this.waiters.push({ check, resolve })), what, ms);
  }

  untilReceived(jobId: string): Promise<void> {
    return this.until(() => this.count(jobId) > 0, `delivery of ${jobId}`);
  }
}

/** Rejects if `work` takes longer than `ms`. */
export async function within<T>(work: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A promise with its resolve function. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** The behaviour every Broker implementation must share. */
export function brokerConformance(name: string, factory: BrokerFactory): void {
  describe(`${name} broker conformance`, () => {
    let subject: BrokerUnderTest;
    let broker: Broker;
    let consumers: Consumer[];
    let errors: Array<{ err: unknown; msg: TaskMessage }>;

    const consume = (handler: TaskHandler, concurrency = 1): Consumer => {
      const consumer = broker.consume(handler, { concurrency });
      consumers.push(consumer);
      return consumer;
    };

    beforeEach(async () => {
      errors = [];
      consumers = [];
      subject = await factory({ onError: (err, msg) => errors.push({ err, msg }) });
      broker = subject.broker;
    });

    afterEach(async () => {
      await Promise.all(consumers.map((c) => c.close()));
      await broker.close();
      await subject.cleanup?.();
    });

    it('delivers each message once with its name, payload and job id intact', async () => {
      const sent: TaskMessage[] = [
        message(1, 'dispatch_sync_run'),
        message(2, 'run_sync_unit'),
        {
          name: 'finalize_sync_run',
          payload: { orgId: 'o', runId: 'r', trace: { traceparent: '00-ab-cd-01' } },
          jobId: 'fin:r:tok',
        },
        { name: 'post_sync', payload: { orgId: 'o', runId: 'r' }, jobId: '42' },
      ];
      await broker.publish(sent);
      const inbox = new Inbox();
      consume(inbox.handler, 2);
      await inbox.until(() => inbox.received.length >= sent.length, 'all four messages');
      await broker.publish([message(99, 'post_sync', 'sentinel')]);
      await inbox.untilReceived('outbox:sentinel:99');
      for (const msg of sent) {
        expect(inbox.received.filter((m) => m.jobId === msg.jobId)).toEqual([msg]);
      }
      expect(errors).toEqual([]);
    });

    it('delivers once a job id published twice while the first is still queued', async () => {
      await broker.publish([message(1), message(1)]);
      await broker.publish([message(1), message(2)]);
      await broker.publish([message(3)]);
      const inbox = new Inbox();
      consume(inbox.handler, 1);
      await inbox.untilReceived('outbox:m:3');
      expect(inbox.received.map((m) => m.jobId)).toEqual(['outbox:m:1', 'outbox:m:2', 'outbox:m:3']);
    });

    it('runs at most N handlers at once and does reach N', async () => {
      const n = 4;
      const full = gate();
      let active = 0;
      let peak = 0;
      let inFlightAtPeak = -1;
      const inbox = new Inbox();
      const consumer = consume(async (msg) => {
        active++;
        peak = Math.max(peak, active);
        if (active === n) {
          inFlightAtPeak = consumer.inFlight();
          full.open();
        }
        await full.opened;
        active--;
        inbox.push(msg);
      }, n);
      await broker.publish(Array.from({ length: 3 * n }, (_, i) => message(i)));
      await inbox.until(() => inbox.received.length === 3 * n, 'all messages');
      expect(peak).toBe(n);
      expect(inFlightAtPeak).toBe(n);
    });

    it('keeps consuming after a handler throws, and does not redeliver that message', async () => {
      const inbox = new Inbox();
      const bad = message(1, 'run_sync_unit', 'bad');
      consume(async (msg) => {
        inbox.push(msg);
        if (msg.jobId === bad.jobId) throw new Error('handler failed');
      }, 1);
      await broker.publish([bad, message(2)]);
      await inbox.untilReceived('outbox:m:2');
      await broker.publish([message(3)]);
      await inbox.untilReceived('outbox:m:3');
      expect(inbox.count(bad.jobId)).toBe(1);
      expect(errors).toHaveLength(1);
      expect(errors[0]?.msg).toEqual(bad);
      expect((errors[0]?.err as Error).message).toBe('handler failed');
    });

    it('close waits for in-flight handlers; a later message goes to another consumer', async () => {
      const events: string[] = [];
      const started = new Inbox();
      const release = gate();
      const first = consume(async (msg) => {
        started.push(msg);
        await release.opened;
        events.push(`done ${msg.jobId}`);
      }, 2);
      await broker.publish([message(1), message(2)]);
      await started.until(() => started.received.length === 2, 'both handlers to start');
      expect(first.inFlight()).toBe(2);
      const closed = first.close().then(() => events.push('closed'));
      await new Promise((resolve) => setImmediate(resolve));
      events.push('release');
      release.open();
      await within(closed, 'close');
      expect(events[0]).toBe('release');
      expect(events.slice(1, 3).sort()).toEqual(['done outbox:m:1', 'done outbox:m:2']);
      expect(events[3]).toBe('closed');
      expect(first.inFlight()).toBe(0);

      await broker.publish([message(3)]);
      const second = new Inbox();
      consume(second.handler, 1);
      await second.untilReceived('outbox:m:3');
      expect(started.received).toHaveLength(2);
    });

    it('is safe to close consumers and the broker twice', async () => {
      const consumer = consume(new Inbox().handler, 2);
      await Promise.all([consumer.close(), consumer.close()]);
      await consumer.close();
      await Promise.all([broker.close(), broker.close()]);
      await broker.close();
    });

    it('answers ping', async () => {
      await expect(broker.ping()).resolves.toBeUndefined();
    });

    it('delivers 2,000 messages published in batches', async () => {
      const total = 2000;
      const inbox = new Inbox();
      consume(inbox.handler, 16);
      for (let start = 0; start < total; start += 100) {
        await broker.publish(Array.from({ length: 100 }, (_, i) => message(start + i, 'run_sync_unit', 'bulk')));
      }
      await inbox.until(() => inbox.received.length >= total, `${total} messages`, 60_000);
      expect(new Set(inbox.received.map((m) => m.jobId)).size).toBe(total);
      expect(inbox.received).toHaveLength(total);
    }, 90_000);
  });
}
