import { describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { BrokerError, ValidationError } from '../../src/errors.js';
import { brokerConformance, gate, Inbox, message } from './conformance.js';

brokerConformance('in-process', ({ onError }) => ({ broker: new InProcessBroker({ onError }) }));

describe('InProcessBroker', () => {
  it('setAvailable(false) makes publish and ping throw and holds delivery until it ends', async () => {
    const broker = new InProcessBroker();
    const inbox = new Inbox();
    broker.consume(inbox.handler, { concurrency: 1 });
    await broker.publish([message(1)]);
    broker.setAvailable(false);
    await expect(broker.publish([message(2)])).rejects.toBeInstanceOf(BrokerError);
    await expect(broker.ping()).rejects.toBeInstanceOf(BrokerError);
    expect(inbox.received).toHaveLength(0);
    expect(broker.pending()).toBe(1);
    broker.setAvailable(true);
    await broker.ping();
    await broker.publish([message(3)]);
    await inbox.untilReceived('outbox:m:3');
    expect(inbox.received.map((m) => m.jobId)).toEqual(['outbox:m:1', 'outbox:m:3']);
    await broker.close();
  });

  it('drop() discards queued messages, whose job ids can then be published again', async () => {
    const broker = new InProcessBroker();
    await broker.publish([message(1), message(2), message(3)]);
    expect(broker.pending()).toBe(3);
    expect(broker.drop()).toBe(3);
    expect(broker.pending()).toBe(0);
    const inbox = new Inbox();
    broker.consume(inbox.handler, { concurrency: 2 });
    await broker.publish([message(2), message(4)]);
    await inbox.until(() => inbox.received.length === 2, 'two messages');
    expect(inbox.received.map((m) => m.jobId).sort()).toEqual(['outbox:m:2', 'outbox:m:4']);
    await broker.close();
  });

  it('never runs a handler on the publisher stack, and hands it a copy', async () => {
    const broker = new InProcessBroker();
    const inbox = new Inbox();
    broker.consume(inbox.handler, { concurrency: 1 });
    await new Promise((resolve) => setImmediate(resolve));
    const msg = message(1);
    await broker.publish([msg]);
    expect(inbox.received).toHaveLength(0);
    msg.payload.unitId = 'changed';
    await inbox.untilReceived('outbox:m:1');
    expect(inbox.received[0]?.payload.unitId).toBe('unit-1');
    await broker.close();
  });

  it('accepts a job id again once its handler has finished, not while it runs', async () => {
    const broker = new InProcessBroker();
    const release = gate();
    const finished = gate();
    const inbox = new Inbox();
    broker.consume(
      async (msg) => {
        inbox.push(msg);
        if (inbox.received.length > 1) return;
        await release.opened;
        finished.open();
      },
      { concurrency: 2 },
    );
    await broker.publish([message(1)]);
    await inbox.untilReceived('outbox:m:1');
    await broker.publish([message(1)]);
    expect(broker.pending()).toBe(0);
    release.open();
    await finished.opened;
    // The consumer settles the job id in the same microtask chain; one macrotask later it is done.
    await new Promise((resolve) => setImmediate(resolve));
    await broker.publish([message(1)]);
    await inbox.until(() => inbox.count('outbox:m:1') === 2, 'second delivery');
    await broker.close();
  });

  it('rejects bad input and use after close', async () => {
    const broker = new InProcessBroker();
    expect(() => broker.consume(async () => undefined, { concurrency: 0 })).toThrow(ValidationError);
    await expect(broker.publish([{ ...message(1), jobId: '' }])).rejects.toBeInstanceOf(BrokerError);
    await broker.close();
    await expect(broker.publish([message(1)])).rejects.toBeInstanceOf(BrokerError);
    expect(() => broker.consume(async () => undefined, { concurrency: 1 })).toThrow(BrokerError);
  });
});
