/** A broker that fails a chosen fraction of publishes (the chaos `publish-fail` fault), else delegates. */
import type { Broker, ConsumeOptions, Consumer, TaskHandler, TaskMessage } from '../broker/types.js';
import { BrokerError } from '../errors.js';

export class FlakyBroker implements Broker {
  readonly kind: Broker['kind'];
  /** Fraction of publish calls that fail (each call is one batch). */
  rate = 0;

  constructor(
    private readonly inner: Broker,
    private readonly random: () => number,
    private readonly onFail: (messages: readonly TaskMessage[]) => void,
  ) {
    this.kind = inner.kind;
  }

  async publish(messages: readonly TaskMessage[]): Promise<void> {
    if (messages.length > 0 && this.rate > 0 && this.random() < this.rate) {
      this.onFail(messages);
      throw new BrokerError('publish failed (injected by syncrelay chaos)');
    }
    return this.inner.publish(messages);
  }

  consume(handler: TaskHandler, options: ConsumeOptions): Consumer {
    return this.inner.consume(handler, options);
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
