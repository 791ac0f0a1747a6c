import { BrokerError, ValidationError } from '../errors.js';
import {
  TASK_NAMES,
  type Broker,
  type ConsumeOptions,
  type Consumer,
  type TaskHandler,
  type TaskMessage,
} from './types.js';

export interface InProcessBrokerOptions {
  /** Called when a handler throws; the message is not redelivered. @default ignore */
  onError?: (err: unknown, msg: TaskMessage) => void;
}

/** What a consumer needs from its broker. */
interface Source {
  /** Next queued message, or undefined when none is deliverable. */
  take(): TaskMessage | undefined;
  /** The message's handler finished: its job id may be published again. */
  settle(jobId: string): void;
  detach(consumer: InProcessConsumer): void;
}

/**
 * The embedded broker for a single process: a FIFO queue in memory. A job id that is still
 * queued or being handled is not queued again; once its handler has finished it may be.
 * Handlers always start from a `setImmediate` callback, never on the publisher's stack.
 */
export class InProcessBroker implements Broker {
  readonly kind = 'inprocess' as const;
  private readonly queue: TaskMessage[] = [];
  /** Job ids queued or running. */
  private readonly known = new Set<string>();
  private readonly consumers = new Set<InProcessConsumer>();
  private readonly source: Source;
  private available = true;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: InProcessBrokerOptions = {}) {
    this.source = {
      take: () => (this.available ? this.queue.shift() : undefined),
      settle: (jobId) => this.known.delete(jobId),
      detach: (consumer) => this.consumers.delete(consumer),
    };
  }

  /** Queues copies of the messages (as a real broker would serialise them). */
  async publish(messages: readonly TaskMessage[]): Promise<void> {
    this.assertUsable();
    messages.forEach(assertMessage);
    for (const msg of messages) {
      if (this.known.has(msg.jobId)) continue;
      this.known.add(msg.jobId);
      this.queue.push(structuredClone(msg));
    }
    this.wakeAll();
  }

  consume(handler: TaskHandler, options: ConsumeOptions): Consumer {
    if (this.closing) throw new BrokerError('broker is closed');
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new ValidationError('concurrency', 'must be a positive integer');
    }
    const consumer = new InProcessConsumer(this.source, handler, concurrency, this.options.onError);
    this.consumers.add(consumer);
    consumer.wake();
    return consumer;
  }

  async ping(): Promise<void> {
    this.assertUsable();
  }

  /** Closes every consumer, waiting for their in-flight handlers. */
  close(): Promise<void> {
    this.closing ??= Promise.all([...this.consumers].map((c) => c.close())).then(() => undefined);
    return this.closing;
  }

  /**
   * Test control: `false` simulates a broker outage — publish and ping throw `BrokerError` and
   * nothing queued is delivered (handlers already running finish); `true` ends it.
   */
  setAvailable(available: boolean): void {
    this.available = available;
    if (available) this.wakeAll();
  }

  /** Test control: discards every queued message (a FLUSHALL); returns how many were dropped. */
  drop(): number {
    const dropped = this.queue.splice(0);
    for (const msg of dropped) this.known.delete(msg.jobId);
    return dropped.length;
  }

  /** Test control: number of queued messages not yet handed to a consumer. */
  pending(): number {
    return this.queue.length;
  }

  private assertUsable(): void {
    if (this.closing) throw new BrokerError('broker is closed');
    if (!this.available) throw new BrokerError('in-process broker unavailable');
  }

  private wakeAll(): void {
    for (const consumer of this.consumers) consumer.wake();
  }
}

/** Pulls from the shared queue while it has fewer than `concurrency` handlers running. */
class InProcessConsumer implements Consumer {
  private running = 0;
  private scheduled = false;
  private stopping = false;
  private closing: Promise<void> | undefined;
  private drained: (() => void) | undefined;

  constructor(
    private readonly source: Source,
    private readonly handler: TaskHandler,
    private readonly concurrency: number,
    private readonly onError: InProcessBrokerOptions['onError'],
  ) {}

  inFlight(): number {
    return this.running;
  }

  /** Schedules one pass that starts queued messages up to the concurrency limit. */
  wake(): void {
    if (this.scheduled || this.stopping) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.fill();
    });
  }

  close(): Promise<void> {
    this.closing ??= this.stop();
    return this.closing;
  }

  private async stop(): Promise<void> {
    this.stopping = true;
    this.source.detach(this);
    if (this.running > 0) await new Promise<void>((resolve) => (this.drained = resolve));
  }

  private fill(): void {
    while (!this.stopping && this.running < this.concurrency) {
      const msg = this.source.take();
      if (!msg) return;
      void this.run(msg);
    }
  }

  private async run(msg: TaskMessage): Promise<void> {
    this.running++;
    try {
      await this.handler(msg);
    } catch (err) {
      this.report(err, msg);
    } finally {
      this.running--;
      this.source.settle(msg.jobId);
      if (this.stopping && this.running === 0) this.drained?.();
      else this.wake();
    }
  }

  private report(err: unknown, msg: TaskMessage): void {
    try {
      this.onError?.(err, msg);
    } catch {
      // A failing error hook must not stop the consumer.
    }
  }
}

function assertMessage(msg: TaskMessage): void {
  if (!TASK_NAMES.includes(msg.name)) throw new BrokerError(`unknown task name: ${String(msg.name)}`);
  if (typeof msg.jobId !== 'string' || msg.jobId === '') throw new BrokerError('jobId must be a non-empty string');
}
