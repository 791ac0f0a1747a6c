import net from 'node:net';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { BullMqBroker, fromBullJobId, toBullJobId } from '../../src/broker/bullmq.js';
import { openBroker } from '../../src/broker/open.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { BrokerError } from '../../src/errors.js';
import { REDIS_URL, uniquePrefix } from '../helpers/pg.js';
import { brokerConformance, Inbox, message, within } from './conformance.js';

/** Removes every key of the prefix (obliterate, then anything BullMQ keeps outside the queue). */
async function dropQueue(prefix: string, queueName = 'tasks'): Promise<void> {
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue(queueName, { connection, prefix });
  try {
    await queue.obliterate({ force: true });
    const left = await connection.keys(`${prefix}:*`);
    if (left.length > 0) await connection.del(...left);
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

brokerConformance('bullmq', ({ onError }) => {
  const prefix = uniquePrefix('broker');
  return { broker: new BullMqBroker({ redisUrl: REDIS_URL, prefix, onError }), cleanup: () => dropQueue(prefix) };
});

/** A TCP relay to the test Redis that can be cut and restored on the same port. */
class RedisProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  async start(): Promise<void> {
    const target = new URL(REDIS_URL);
    this.server = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 6379), target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => s.destroy());
        s.on('close', () => this.sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server?.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
}

describe('BullMqBroker', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  function track(broker: BullMqBroker, prefix?: string): BullMqBroker {
    cleanups.push(async () => {
      await broker.close();
      if (prefix) await dropQueue(prefix);
    });
    return broker;
  }

  it('maps job ids reversibly to ids BullMQ accepts', () => {
    for (const id of ['outbox:17:abc', 'a%3Ab', 'a:b', '42', '-7', '100%', 'plain']) {
      const mapped = toBullJobId(id);
      expect(mapped).not.toContain(':');
      expect(`${parseInt(mapped, 10)}`).not.toBe(mapped);
      expect(fromBullJobId(mapped)).toBe(id);
    }
    expect(toBullJobId('a:b')).not.toBe(toBullJobId('a%3Ab'));
  });

  it('fails publish and ping fast with BrokerError when Redis is unreachable, and closes', async () => {
    const broker = track(new BullMqBroker({ redisUrl: 'redis://127.0.0.1:1', prefix: uniquePrefix('down') }));
    const consumer = broker.consume(async () => undefined, { concurrency: 2 });
    for (let i = 0; i < 2; i++) {
      const started = Date.now();
      const err = await broker.publish([message(1)]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BrokerError);
      expect((err as BrokerError).cause).toBeDefined();
      expect(Date.now() - started).toBeLessThan(3000);
    }
    await expect(broker.ping()).rejects.toBeInstanceOf(BrokerError);
    await within(consumer.close(), 'consumer close while Redis is down', 5000);
    await within(broker.close(), 'broker close while Redis is down', 5000);
  });

  it('times out a publish to a server that never answers', async () => {
    const silent = net.createServer(() => undefined);
    const held = new Set<net.Socket>();
    silent.on('connection', (s) => held.add(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    cleanups.push(async () => {
      held.forEach((s) => s.destroy());
      await new Promise((resolve) => silent.close(resolve));
    });
    const broker = track(
      new BullMqBroker({ redisUrl: `redis://127.0.0.1:${port}`, prefix: 'unused', publishTimeoutMs: 300 }),
    );
    const started = Date.now();
    const err = await broker.publish([message(1)]).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(err).toBeInstanceOf(BrokerError);
    expect((err as BrokerError).message).toBe('publish timed out after 300 ms');
    expect((err as BrokerError).cause).toBeInstanceOf(Error);
  });

  it('fails fast during an outage and publishes again once Redis is back', async () => {
    const proxy = new RedisProxy();
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const prefix = uniquePrefix('outage');
    const broker = track(new BullMqBroker({ redisUrl: proxy.url, prefix, publishTimeoutMs: 2000 }), prefix);
    await broker.publish([message(1)]);

    await proxy.stop();
    const started = Date.now();
    await expect(broker.publish([message(2)])).rejects.toBeInstanceOf(BrokerError);
    expect(Date.now() - started).toBeLessThan(2500);

    await proxy.start();
    await untilPingable(broker);
    await broker.publish([message(3)]);
    const inbox = new Inbox();
    const direct = track(new BullMqBroker({ redisUrl: REDIS_URL, prefix }));
    direct.consume(inbox.handler, { concurrency: 2 });
    await inbox.until(() => inbox.count('outbox:m:1') + inbox.count('outbox:m:3') === 2, 'messages 1 and 3');
  });

  it('closes a consumer whose Redis went away mid-run', async () => {
    const proxy = new RedisProxy();
    await proxy.start();
    cleanups.push(() => proxy.stop());
    const prefix = uniquePrefix('cut');
    const broker = track(new BullMqBroker({ redisUrl: proxy.url, prefix }), prefix);
    const inbox = new Inbox();
    const consumer = broker.consume(inbox.handler, { concurrency: 2 });
    await broker.publish([message(1)]);
    await inbox.untilReceived('outbox:m:1');
    await proxy.stop();
    await within(consumer.close(), 'consumer close after the connection was cut', 10_000);
  });

  it('keeps a bounded number of finished jobs in Redis', async () => {
    const prefix = uniquePrefix('keep');
    const broker = track(new BullMqBroker({ redisUrl: REDIS_URL, prefix, keepJobs: 5 }), prefix);
    const inbox = new Inbox();
    broker.consume(inbox.handler, { concurrency: 4 });
    await broker.publish(Array.from({ length: 20 }, (_, i) => message(i)));
    await inbox.until(() => inbox.received.length === 20, '20 messages');
    await broker.close();
    const connection = new Redis(REDIS_URL);
    const queue = new Queue('tasks', { connection, prefix });
    const counts = await queue.getJobCounts('completed', 'failed', 'wait', 'active');
    await queue.close();
    connection.disconnect();
    expect(counts).toEqual({ completed: 5, failed: 0, wait: 0, active: 0 });
  });

  it('openBroker picks BullMQ with a Redis URL and the in-process broker without', async () => {
    const withRedis = openBroker({ redisUrl: REDIS_URL, queuePrefix: uniquePrefix('open') });
    const without = openBroker({ redisUrl: undefined, queuePrefix: 'x' });
    expect(withRedis).toBeInstanceOf(BullMqBroker);
    expect(without).toBeInstanceOf(InProcessBroker);
    await withRedis.ping();
    await Promise.all([withRedis.close(), without.close()]);
  });
});

/** Polls ping until the producer has reconnected (ioredis retries within about 2 s). */
async function untilPingable(broker: BullMqBroker, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await broker.ping();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
