import { Queue, Worker, type Job } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { BrokerError, ValidationError } from '../errors.js';
import { guardRedisErrors, redisOptions, scrubRedisError, type RedisTls } from './redisOptions.js';
import {
  TASK_NAMES,
  type Broker,
  type ConsumeOptions,
  type Consumer,
  type TaskHandler,
  type TaskMessage,
} from './types.js';

/** Receives an error a handler threw; the message is not redelivered. */
export type HandlerErrorHook = (err: unknown, msg: TaskMessage) => void;

export interface BullMqBrokerOptions {
  /** Redis URL (`redis://` or `rediss://`), with the ACL user and password if any. */
  redisUrl: string;
  /** TLS options of every connection to a `rediss://` URL. @default Node's CAs, the URL's host */
  tls?: RedisTls;
  /** Key prefix: every Redis key of the queue starts with `<prefix>:<queueName>:`. */
  prefix: string;
  /** The one queue that carries all task names (job name = task name). @default 'tasks' */
  queueName?: string;
  /** Upper bound on one `publish` or `ping`, including waiting for the connection. @default 5000 */
  publishTimeoutMs?: number;
  /** Completed and failed jobs kept (each) so Redis stays bounded. @default 1000 */
  keepJobs?: number;
  /** Called when a handler throws. @default ignore */
  onError?: HandlerErrorHook;
  /** Called on errors of Redis connections and BullMQ internals; they never crash the process. @default ignore */
  onRedisError?: (err: Error) => void;
}

type BulkJob = Parameters<Queue['addBulk']>[0][number];

const ignore = (): void => undefined;

/**
 * BullMQ ids may not contain ':' nor look like an integer. This escaping is injective and
 * reversible: '%' → '%25', ':' → '%3A', and an integer-looking result gets the prefix '%N'.
 */
export function toBullJobId(jobId: string): string {
  const escaped = jobId.replace(/%/g, '%25').replace(/:/g, '%3A');
  return `${parseInt(escaped, 10)}` === escaped ? `%N${escaped}` : escaped;
}

/** Inverse of {@link toBullJobId}. */
export function fromBullJobId(bullId: string): string {
  const body = bullId.startsWith('%N') ? bullId.slice(2) : bullId;
  return body.replace(/%(25|3A)/g, (_, code: string) => (code === '25' ? '%' : ':'));
}

/**
 * The production broker: one BullMQ queue on Redis for every task name.
 *
 * Publishing goes through a dedicated connection with the offline queue disabled, so while Redis
 * is down a publish fails at once (or after `publishTimeoutMs` at worst) instead of queueing
 * commands; ioredis keeps reconnecting in the background and a later publish succeeds.
 */
export class BullMqBroker implements Broker {
  readonly kind = 'bullmq' as const;
  private readonly producer: Redis;
  private readonly queueName: string;
  private readonly timeoutMs: number;
  private readonly consumers = new Set<BullMqConsumer>();
  private queue: Promise<Queue> | undefined;
  /** The outcome of the producer's current connect attempt, shared by every caller waiting on it. */
  private connecting: Promise<void> | undefined;
  private lastError: Error | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: BullMqBrokerOptions) {
    this.queueName = options.queueName ?? 'tasks';
    this.timeoutMs = options.publishTimeoutMs ?? 5000;
    const producerOptions = { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: this.timeoutMs };
    this.producer = guardRedisErrors(
      new Redis(options.redisUrl, redisOptions(options.redisUrl, options.tls, producerOptions)),
    );
    this.producer.on('error', (err: Error) => {
      this.lastError = err;
      (options.onRedisError ?? ignore)(err);
    });
  }

  /** Adds all messages with one `addBulk`; a job id BullMQ already holds is not added again. */
  async publish(messages: readonly TaskMessage[]): Promise<void> {
    this.assertOpen();
    if (messages.length === 0) return;
    const jobs = messages.map(toBulkJob);
    try {
      await withTimeout(this.addBulk(jobs), this.timeoutMs, () => this.timedOut('publish'));
    } catch (err) {
      throw asBrokerError(err, 'publish failed');
    }
  }

  /** Starts a BullMQ Worker on its own connections. */
  consume(handler: TaskHandler, options: ConsumeOptions): Consumer {
    this.assertOpen();
    const consumer = new BullMqConsumer({
      redisUrl: this.options.redisUrl,
      tls: this.options.tls,
      prefix: this.options.prefix,
      queueName: this.queueName,
      concurrency: checkConcurrency(options.concurrency),
      handler,
      onError: this.options.onError ?? ignore,
      onRedisError: this.options.onRedisError ?? ignore,
      onClosed: (c) => this.consumers.delete(c),
    });
    this.consumers.add(consumer);
    return consumer;
  }

  async ping(): Promise<void> {
    this.assertOpen();
    try {
      await withTimeout(
        this.whenReady().then(() => this.producer.ping()),
        this.timeoutMs,
        () => this.timedOut('ping'),
      );
    } catch (err) {
      throw asBrokerError(err, 'ping failed');
    }
  }

  /** Closes consumers (waiting for their handlers), the queue and the producer connection. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.close()));
    const queue = await this.queue?.catch(() => undefined);
    await queue?.close().catch(ignore);
    await disconnectRedis(this.producer);
  }

  private assertOpen(): void {
    if (this.closing) throw new BrokerError('broker is closed');
  }

  private async addBulk(jobs: BulkJob[]): Promise<void> {
    await this.whenReady();
    const queue = await this.getQueue();
    await queue.addBulk(jobs);
  }

  /**
   * Resolves once the producer is connected. Fails at once while ioredis is between reconnect
   * attempts; during a connect attempt waits for its outcome (bounded by the caller's timeout).
   */
  private whenReady(): Promise<void> {
    const status = this.producer.status;
    if (status === 'ready') return Promise.resolve();
    if (status !== 'connecting' && status !== 'connect') return Promise.reject(this.unavailable());
    this.connecting ??= this.connectOutcome().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private connectOutcome(): Promise<void> {
    const redis = this.producer;
    return new Promise<void>((resolve, reject) => {
      const done = (err?: Error): void => {
        redis.off('ready', done).off('error', done).off('end', done);
        if (err || redis.status !== 'ready') reject(this.unavailable(err));
        else resolve();
      };
      redis.once('ready', done).once('error', done).once('end', done);
    });
  }

  /** The cause is the last connection error, else an ETIMEDOUT error (Redis did not answer). */
  private timedOut(what: string): BrokerError {
    const silent = Object.assign(new Error('redis did not answer in time'), { code: 'ETIMEDOUT' });
    return new BrokerError(`${what} timed out after ${this.timeoutMs} ms`, { cause: this.lastError ?? silent });
  }

  private unavailable(cause?: Error): BrokerError {
    return new BrokerError(`redis unavailable (${this.producer.status})`, { cause: cause ?? this.lastError });
  }

  /**
   * The Queue is created once the producer is ready: BullMQ checks the server version while it
   * initialises, and a Queue whose initialisation failed stays broken, so a failed one is dropped.
   */
  private getQueue(): Promise<Queue> {
    if (this.closing) return Promise.reject(new BrokerError('broker is closed'));
    this.queue ??= this.openQueue().catch((err: unknown) => {
      this.queue = undefined;
      throw err;
    });
    return this.queue;
  }

  private async openQueue(): Promise<Queue> {
    const keep = { count: this.options.keepJobs ?? 1000 };
    const queue = new Queue(this.queueName, {
      connection: this.producer,
      prefix: this.options.prefix,
      defaultJobOptions: { attempts: 1, removeOnComplete: keep, removeOnFail: keep },
    });
    queue.on('error', this.options.onRedisError ?? ignore);
    try {
      await queue.waitUntilReady();
      return queue;
    } catch (err) {
      await queue.close().catch(ignore);
      throw err;
    }
  }
}

interface ConsumerConfig {
  redisUrl: string;
  tls: RedisTls | undefined;
  prefix: string;
  queueName: string;
  concurrency: number;
  handler: TaskHandler;
  onError: HandlerErrorHook;
  onRedisError: (err: Error) => void;
  onClosed: (consumer: BullMqConsumer) => void;
}

/**
 * A worker connection that always ends when disconnected. ioredis leaves a client that waits
 * to reconnect in 'reconnecting' forever, without 'end', and BullMQ's close waits for 'end'; so
 * here one last connect attempt runs, and ioredis ends the client through its own close path
 * (also failing queued commands). Its copies (BullMQ's blocking connection) are made the same
 * way and join `family`, so a consumer can end every connection of its worker.
 */
function workerRedis(redis: Redis, family: Redis[], onError: (err: Error) => void): Redis {
  guardRedisErrors(redis).on('error', onError);
  family.push(redis);
  const disconnect = redis.disconnect.bind(redis);
  redis.disconnect = (reconnect = false): void => {
    const parked = !reconnect && redis.status === 'reconnecting';
    disconnect(reconnect);
    if (parked) redis.connect().then(() => disconnect(), ignore);
  };
  const duplicate = (override?: Partial<RedisOptions>): Redis =>
    workerRedis(new Redis({ ...redis.options, ...override }), family, onError);
  redis.duplicate = duplicate;
  return redis;
}

/** A BullMQ Worker on its own connection; BullMQ adds a blocking copy of it. */
class BullMqConsumer implements Consumer {
  /** Every connection of the worker: ours first, then BullMQ's copies. */
  private readonly connections: Redis[] = [];
  private readonly connection: Redis;
  private readonly worker: Worker;
  private running = 0;
  private readonly idleWaiters: Array<() => void> = [];
  private closing: Promise<void> | undefined;

  constructor(private readonly config: ConsumerConfig) {
    // BullMQ requires maxRetriesPerRequest: null on worker connections: commands wait for Redis.
    const options = redisOptions(config.redisUrl, config.tls, { maxRetriesPerRequest: null, connectTimeout: 5000 });
    const redis = new Redis(config.redisUrl, options);
    this.connection = workerRedis(redis, this.connections, config.onRedisError);
    // A job whose worker died stays active until its lock expires (lockDuration, 30 s); the stalled
    // check that any live worker runs every 30 s then moves it back to wait if its stall count is
    // within maxStalledCount, else to failed. With 0 BullMQ never redelivers it: the reconciler's
    // lease expiry and the outbox re-arm the work instead.
    this.worker = new Worker(config.queueName, (job: Job) => this.process(job), {
      connection: this.connection,
      prefix: config.prefix,
      concurrency: config.concurrency,
      maxStalledCount: 0,
    });
    this.worker.on('error', config.onRedisError);
  }

  inFlight(): number {
    return this.running;
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /**
   * `worker.close()` stops fetching and waits for running jobs, but while Redis is unreachable it
   * would wait forever (for its blocking connection, for completions it cannot write). So once
   * our handlers are done and Redis is found down, every connection is ended, which ends the wait;
   * jobs whose completion was not written then fail by the stalled check (never redelivered).
   */
  private async shutdown(): Promise<void> {
    const graceful = this.worker.close().catch(this.config.onRedisError);
    await this.whenIdle();
    await Promise.race([graceful, whenDown(this.connection)]);
    const ended = this.connections.map(disconnectRedis);
    await Promise.all([graceful, ...ended]);
    this.config.onClosed(this);
  }

  private whenIdle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Runs the handler; its error is reported, never rethrown, so BullMQ completes the job. */
  private async process(job: Job): Promise<void> {
    const msg = toMessage(job);
    this.running++;
    try {
      if (!TASK_NAMES.includes(msg.name)) throw new BrokerError(`unknown task name: ${job.name}`);
      await this.config.handler(msg);
    } catch (err) {
      report(this.config.onError, err, msg);
    } finally {
      this.running--;
      if (this.running === 0) this.idleWaiters.splice(0).forEach((resolve) => resolve());
    }
  }
}

function toBulkJob(msg: TaskMessage): BulkJob {
  if (!TASK_NAMES.includes(msg.name)) throw new BrokerError(`unknown task name: ${String(msg.name)}`);
  if (typeof msg.jobId !== 'string' || msg.jobId === '') throw new BrokerError('jobId must be a non-empty string');
  return { name: msg.name, data: msg.payload, opts: { jobId: toBullJobId(msg.jobId) } };
}

function toMessage(job: Job): TaskMessage {
  return {
    name: job.name as TaskMessage['name'],
    payload: job.data as TaskMessage['payload'],
    jobId: fromBullJobId(job.id ?? ''),
  };
}

function checkConcurrency(n: number | undefined): number {
  const value = n ?? 1;
  if (!Number.isInteger(value) || value < 1) throw new ValidationError('concurrency', 'must be a positive integer');
  return value;
}

function report(hook: HandlerErrorHook, err: unknown, msg: TaskMessage): void {
  try {
    hook(err, msg);
  } catch {
    // A failing error hook must not turn into a retried job.
  }
}

function asBrokerError(err: unknown, what: string): BrokerError {
  scrubRedisError(err);
  if (err instanceof BrokerError) return err;
  const detail = err instanceof Error ? err.message : String(err);
  return new BrokerError(`${what}: ${detail}`, { cause: err });
}

async function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves when the connection is not (or no longer) ready. */
function whenDown(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const down = (): void => {
      redis.off('close', down).off('end', down);
      resolve();
    };
    redis.once('close', down).once('end', down);
  });
}

/**
 * Drops the connection now and waits for 'end'. A plain ioredis client that waits to reconnect
 * never emits it: its reconnect timer is cleared, which leaves nothing open.
 */
async function disconnectRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status === 'reconnecting' && redis.disconnect === Redis.prototype.disconnect) {
    redis.disconnect();
    return;
  }
  const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));
  redis.disconnect();
  await ended;
}
