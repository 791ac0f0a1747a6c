/** A broker that records when each message's handler starts (the clock time a task begins). */
import type { Broker, ConsumeOptions, Consumer, TaskHandler, TaskMessage } from '../../src/broker/types.js';

export class TimedBroker implements Broker {
  constructor(
    private readonly inner: Broker,
    private readonly onStart: (msg: TaskMessage, at: number) => void,
  ) {}

  get kind(): Broker['kind'] {
    return this.inner.kind;
  }

  publish(messages: readonly TaskMessage[]): Promise<void> {
    return this.inner.publish(messages);
  }

  consume(handler: TaskHandler, options: ConsumeOptions): Consumer {
    return this.inner.consume((msg) => {
      this.onStart(msg, performance.now());
      return handler(msg);
    }, options);
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
