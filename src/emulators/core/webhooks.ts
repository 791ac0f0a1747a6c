/**
 * Signed webhook deliveries an emulator POSTs to a receiver, whichever provider it imitates: a
 * sender that queues each delivery and returns at once (edits happen while a request is answered
 * and must not wait), POSTs with bounded concurrency over `fetch`, retries a delivery answered
 * non-2xx or not answered at all with backoff under the same id (as GitHub, Linear and Jira do),
 * and injects two faults drawn from the emulator's seed: a delivery sent a second time later (same
 * id, same body) and deliveries held for a while and sent shuffled. Each provider renders its own
 * payloads and headers (github/webhooks.ts, linear/webhooks.ts, jira/webhooks.ts); `WebhookOutlet`
 * joins a renderer to the sender of the target the emulator is pointed at now.
 */
import { createHmac } from 'node:crypto';
import { ValidationError } from '../../errors.js';
import { Rng } from './random.js';

/** Where deliveries go, the secret that signs them and the faults injected on the way. */
export interface WebhookTarget {
  url: string;
  secret: string;
  faults?: WebhookFaults;
}

export interface WebhookFaults {
  /** probability that a delivery is sent a second time later (same delivery id, same body) */
  redeliver?: number;
  /** deliveries are held and sent in a shuffled order within this many ms of the emulator's clock/real time */
  reorderWindowMs?: number;
}

/** One delivery as the provider renders it: its id (kept across retries), headers and raw body. */
export interface OutgoingDelivery {
  id: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * `queued`: deliveries given to `send`; `sent`: answered 2xx; `redelivered`: second sends (the
 * fault) answered 2xx; `failed`: given up after every retry; `pending`: held, queued, in flight or
 * waiting to be retried or sent again.
 */
export interface WebhookStats {
  queued: number;
  sent: number;
  redelivered: number;
  failed: number;
  pending: number;
}

export interface WebhookSender {
  /** Queues `d` and returns at once. */
  send(d: OutgoingDelivery): void;
  /** Sends what is held now and resolves when nothing is held, queued, in flight or waiting. */
  flush(): Promise<void>;
  stats(): WebhookStats;
  /** Takes no more deliveries, then flushes; safe to call twice. */
  close(): Promise<void>;
}

export interface WebhookSenderOptions {
  /** Seed of the fault draws (the emulator's). @default 1 */
  seed?: number;
  /** Deliveries in flight at once at most. @default 4 */
  concurrency?: number;
  /** Attempts after the first, for a delivery answered non-2xx or not answered. @default 3 */
  retries?: number;
  /** Wait before the first retry, doubled for each next one. @default 200 */
  backoffMs?: number;
  /** How long one attempt may take. @default 10 000 */
  timeoutMs?: number;
  /** Wait before a redelivery (the fault) is queued. @default 50 */
  redeliverAfterMs?: number;
  /** Headers a retry or a redelivery carries besides the delivery's own (`n`: 1 for the first one). */
  retryHeaders?: (n: number) => Record<string, string>;
}

interface Job {
  d: OutgoingDelivery;
  /** Attempts made so far under this delivery id (retries and redeliveries included). */
  tries: number;
  /** Attempts made so far of this send (a redelivery starts again at 0). */
  attempt: number;
  redelivery: boolean;
  redeliver: boolean;
  /** Where the reorder fault puts it among the deliveries held with it. */
  order: number;
}

/** Hex HMAC-SHA256 of the raw `body` under `secret` (each provider adds its own prefix). */
export function hmacHex(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

/** A target with an http(s) URL, a non-empty secret, a probability and a whole number of ms. */
export function validateWebhookTarget(t: WebhookTarget): WebhookTarget {
  if (!URL.canParse(t.url) || !/^https?:$/.test(new URL(t.url).protocol)) {
    throw new ValidationError('webhooks.url', `expected an http(s) URL, got "${t.url}"`);
  }
  if (typeof t.secret !== 'string' || t.secret === '')
    throw new ValidationError('webhooks.secret', 'must not be empty');
  const p = t.faults?.redeliver ?? 0;
  if (!Number.isFinite(p) || p < 0 || p > 1) {
    throw new ValidationError('webhooks.faults.redeliver', `expected a probability from 0 to 1, got ${p}`);
  }
  const w = t.faults?.reorderWindowMs ?? 0;
  if (!Number.isInteger(w) || w < 0) {
    throw new ValidationError('webhooks.faults.reorderWindowMs', `expected whole milliseconds ≥ 0, got ${w}`);
  }
  return { url: t.url, secret: t.secret, faults: { redeliver: p, reorderWindowMs: w } };
}

export function createWebhookSender(target: WebhookTarget, opts: WebhookSenderOptions = {}): WebhookSender {
  return new Sender(validateWebhookTarget(target), opts);
}

class Sender implements WebhookSender {
  private readonly rng: Rng;
  private readonly counts = { queued: 0, sent: 0, redelivered: 0, failed: 0 };
  private readonly held: Job[] = [];
  private readonly queue: Job[] = [];
  private readonly waiting = new Set<NodeJS.Timeout>();
  private holdTimer: NodeJS.Timeout | null = null;
  private inFlight = 0;
  private idle: (() => void)[] = [];
  private closing: Promise<void> | null = null;

  constructor(
    private readonly target: WebhookTarget,
    private readonly opts: WebhookSenderOptions,
  ) {
    this.rng = new Rng(opts.seed ?? 1, 'webhooks');
  }

  send(d: OutgoingDelivery): void {
    if (this.closing) {
      this.counts.failed++;
      return;
    }
    this.counts.queued++;
    const { redeliver = 0, reorderWindowMs = 0 } = this.target.faults ?? {};
    const job: Job = {
      d,
      tries: 0,
      attempt: 0,
      redelivery: false,
      redeliver: redeliver > 0 && this.rng.chance(redeliver),
      order: reorderWindowMs > 0 ? this.rng.next() : 0,
    };
    if (reorderWindowMs <= 0) return this.enqueue(job);
    this.held.push(job);
    this.holdTimer ??= setTimeout(() => this.release(), reorderWindowMs);
  }

  flush(): Promise<void> {
    this.release();
    if (this.pending() === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  stats(): WebhookStats {
    return { ...this.counts, pending: this.pending() };
  }

  close(): Promise<void> {
    return (this.closing ??= this.flush());
  }

  private pending(): number {
    return this.held.length + this.queue.length + this.inFlight + this.waiting.size;
  }

  /** The held deliveries, shuffled by their drawn order, into the queue. */
  private release(): void {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = null;
    const batch = this.held.splice(0).sort((a, b) => a.order - b.order);
    this.queue.push(...batch);
    this.pump();
  }

  private enqueue(job: Job): void {
    this.queue.push(job);
    this.pump();
  }

  private later(ms: number, job: Job): void {
    const timer = setTimeout(() => {
      this.waiting.delete(timer);
      this.enqueue(job);
    }, ms);
    this.waiting.add(timer);
  }

  private pump(): void {
    const limit = Math.max(1, this.opts.concurrency ?? 4);
    while (this.inFlight < limit && this.queue.length > 0) {
      const job = this.queue.shift()!;
      this.inFlight++;
      void this.attempt(job).finally(() => {
        this.inFlight--;
        this.pump();
        this.settle();
      });
    }
    this.settle();
  }

  private settle(): void {
    if (this.pending() > 0 || this.idle.length === 0) return;
    for (const resolve of this.idle.splice(0)) resolve();
  }

  private async attempt(job: Job): Promise<void> {
    const ok = await this.post(job);
    const next = { ...job, tries: job.tries + 1 };
    if (ok) {
      if (job.redelivery) this.counts.redelivered++;
      else this.counts.sent++;
      if (job.redeliver && !job.redelivery) {
        this.later(this.opts.redeliverAfterMs ?? 50, { ...next, attempt: 0, redelivery: true, redeliver: false });
      }
    } else if (job.attempt < (this.opts.retries ?? 3)) {
      this.later((this.opts.backoffMs ?? 200) * 2 ** job.attempt, { ...next, attempt: job.attempt + 1 });
    } else {
      this.counts.failed++;
    }
  }

  /** One POST; true when answered 2xx. */
  private async post(job: Job): Promise<boolean> {
    const extra = job.tries > 0 ? (this.opts.retryHeaders?.(job.tries) ?? {}) : {};
    try {
      const res = await fetch(this.target.url, {
        method: 'POST',
        headers: { ...job.d.headers, ...extra },
        body: job.d.body,
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000),
      });
      await res.arrayBuffer().catch(() => undefined);
      return res.status >= 200 && res.status < 300;
    } catch {
      return false;
    }
  }
}

/** What an emulator does with a change it made: render it and send it, when pointed at a target. */
export type Announce<C> = (change: C) => void;

/**
 * The emulator's side of its webhooks: the target it is pointed at now (none, from the start
 * option, or set later with `setTarget`) and that target's sender; `announce` renders a change
 * with the target's secret and queues it. A replaced sender keeps sending what it holds.
 */
export class WebhookOutlet<C> {
  private current: { sender: WebhookSender; secret: string } | null = null;
  private readonly retired: Promise<void>[] = [];
  private generation = 0;

  constructor(
    private readonly render: (change: C, secret: string) => OutgoingDelivery,
    private readonly opts: WebhookSenderOptions = {},
  ) {}

  get sender(): WebhookSender | null {
    return this.current?.sender ?? null;
  }

  /** Points the emulator at `target` from now on (null: no deliveries). */
  setTarget(target: WebhookTarget | null): void {
    const valid = target ? validateWebhookTarget(target) : null;
    if (this.current) this.retired.push(this.current.sender.close());
    const seed = (this.opts.seed ?? 1) + this.generation++;
    this.current = valid ? { sender: createWebhookSender(valid, { ...this.opts, seed }), secret: valid.secret } : null;
  }

  readonly announce: Announce<C> = (change) => {
    if (this.current) this.current.sender.send(this.render(change, this.current.secret));
  };

  /** Closes the current sender and waits for the replaced ones. */
  async close(): Promise<void> {
    if (this.current) this.retired.push(this.current.sender.close());
    await Promise.all(this.retired);
  }
}

/** The `--webhook-*` flags' text. */
export interface WebhookFlags {
  webhookUrl?: string;
  webhookSecretEnv?: string;
  webhookRedeliver?: string;
  webhookReorderMs?: string;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * The webhook target from `--webhook-url`, `--webhook-secret-env NAME` (the secret is read from
 * that environment variable, never from the command line), `--webhook-redeliver p` and
 * `--webhook-reorder-ms n`; undefined without `--webhook-url`. A missing or empty secret is refused.
 */
export function webhookTargetFromFlags(
  flags: WebhookFlags,
  env: NodeJS.ProcessEnv = process.env,
): WebhookTarget | undefined {
  const { webhookUrl: url, webhookSecretEnv: name, webhookRedeliver: p, webhookReorderMs: ms } = flags;
  if (url === undefined) {
    if (name !== undefined || p !== undefined || ms !== undefined) {
      throw new ValidationError(
        'webhookUrl',
        '--webhook-secret-env, --webhook-redeliver and --webhook-reorder-ms need --webhook-url',
      );
    }
    return undefined;
  }
  if (name === undefined) {
    throw new ValidationError(
      'webhookSecretEnv',
      '--webhook-url needs --webhook-secret-env NAME (the secret is read from that variable)',
    );
  }
  if (!ENV_NAME.test(name))
    throw new ValidationError('webhookSecretEnv', `expected an environment variable name, got "${name}"`);
  const secret = env[name];
  if (secret === undefined || secret === '') {
    throw new ValidationError(
      'webhookSecretEnv',
      `environment variable ${name} is not set (or empty): it must hold the webhook secret`,
    );
  }
  const faults: WebhookFaults = {};
  if (p !== undefined) {
    if (!/^\s*(0|1|0?\.\d+|1\.0*)\s*$/.test(p)) {
      throw new ValidationError('webhookRedeliver', `expected a probability from 0 to 1, got "${p}"`);
    }
    faults.redeliver = Number(p);
  }
  if (ms !== undefined) {
    if (!/^\s*\d+\s*$/.test(ms))
      throw new ValidationError('webhookReorderMs', `expected whole milliseconds, got "${ms}"`);
    faults.reorderWindowMs = Number(ms);
  }
  return validateWebhookTarget({ url, secret, faults });
}
