/**
 * The broker of a chaos child: fails a chosen fraction of publishes (the `publish-fail` fault), and
 * publishes a chosen fraction of messages again (the `duplicate-delivery` fault) — at once, while
 * the work they start is likely running, and after it has likely ended — under job ids of their
 * own, so the queue delivers every copy. Otherwise it delegates.
 */
import type { Broker, ConsumeOptions, Consumer, TaskHandler, TaskMessage } from '../broker/types.js';
import { BrokerError } from '../errors.js';

/** When the copies of a duplicated message go out, after its publish: [min, max] ms each. */
export const DUPLICATE_DELAYS_MS: readonly (readonly [number, number])[] = [
  [0, 0],
  [300, 900],
  [2000, 4000],
];

/** The last copy is out this long after the publish at the latest. */
export const DUPLICATE_SPAN_MS = Math.max(...DUPLICATE_DELAYS_MS.map(([, max]) => max));

export class FlakyBroker implements Broker {
  readonly kind: Broker['kind'];
  /** Fraction of publish calls that fail (each call is one batch). */
  rate = 0;
  /** Fraction of published messages that are published again (each chosen one once per delay). */
  duplicateRate = 0;
  private copies = 0;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly inner: Broker,
    private readonly random: () => number,
    private readonly onFail: (messages: readonly TaskMessage[]) => void,
    private readonly onDuplicate: (message: TaskMessage) => void = () => undefined,
  ) {
    this.kind = inner.kind;
  }

  async publish(messages: readonly TaskMessage[]): Promise<void> {
    if (messages.length > 0 && this.rate > 0 && this.random() < this.rate) {
      this.onFail(messages);
      throw new BrokerError('publish failed (injected by syncrelay chaos)');
    }
    await this.inner.publish(messages);
    if (this.duplicateRate > 0) this.duplicate(messages);
  }

  consume(handler: TaskHandler, options: ConsumeOptions): Consumer {
    return this.inner.consume(handler, options);
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    return this.inner.close();
  }

  private duplicate(messages: readonly TaskMessage[]): void {
    for (const m of messages) {
      if (this.random() >= this.duplicateRate) continue;
      for (const [min, max] of DUPLICATE_DELAYS_MS) {
        const copy: TaskMessage = { ...m, jobId: `${m.jobId}.dup${++this.copies}` };
        const t = setTimeout(
          () => {
            this.timers.delete(t);
            // A copy lost to a failing broker is simply not delivered.
            this.inner.publish([copy]).then(
              () => this.onDuplicate(copy),
              () => undefined,
            );
          },
          min + Math.floor(this.random() * (max - min + 1)),
        );
        t.unref();
        this.timers.add(t);
      }
    }
  }
}
