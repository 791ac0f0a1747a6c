/**
 * The chaos run's webhook producer: signed deliveries of the run's provider (an edit of an issue of
 * one of the integration's sources, ./webhookDeliveries.ts) posted at a steady rate, a share of the
 * posts an earlier delivery sent again with its own id, as the provider resends it (GitHub: the
 * same body; Linear: stamped and signed again; Jira: with its retry count). Each delivery's answers
 * are kept: how many 202s, how many other answers (a fault reached the API, or the request failed).
 */
import type { Rng } from './random.js';
import type { Delivery, DeliveryBuilder } from './webhookDeliveries.js';
import type { IssueCatalog } from './webhookIssues.js';

const POST_TIMEOUT_MS = 15_000;
/** Posts in flight at most (a stalled API holds the producer back rather than piling requests up). */
const MAX_IN_FLIGHT = 16;

interface Sent {
  id: string;
  first: Delivery;
  posts: number;
  accepted: number;
  other: number;
}

export interface ProducerStats {
  deliveries: number;
  posts: number;
  redeliveries: number;
  accepted: number;
  /** Answers other than 202 (status 0: the request failed). */
  non202: Record<string, number>;
  /** Deliveries never answered 202 (after the last redelivery). */
  unacknowledged: number;
}

export interface ProducerOptions {
  url: string;
  builder: DeliveryBuilder;
  issues: IssueCatalog;
  rng: Rng;
  perSecond: number;
  redeliveryShare: number;
}

export class WebhookProducer {
  private readonly sent = new Map<string, Sent>();
  private readonly order: Sent[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly non202: Record<string, number> = {};
  private redeliveries = 0;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(private readonly o: ProducerOptions) {}

  /** Starts posting; `stop()` ends it. */
  start(): void {
    this.loop ??= this.run();
  }

  private async run(): Promise<void> {
    const gapMs = 1000 / this.o.perSecond;
    while (!this.stopped) {
      await new Promise((resolve) => setTimeout(resolve, gapMs));
      if (this.stopped || this.inFlight.size >= MAX_IN_FLIGHT) continue;
      const again = this.order.length > 0 && this.o.rng.next() < this.o.redeliveryShare;
      if (again) this.redeliveries += 1;
      this.track(this.post(again ? this.o.rng.pick(this.order) : this.fresh()));
    }
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private fresh(): Sent {
    const first = this.o.builder.build(this.o.issues.pick(this.o.rng), Date.now());
    const d: Sent = { id: first.id, first, posts: 0, accepted: 0, other: 0 };
    this.sent.set(d.id, d);
    this.order.push(d);
    return d;
  }

  /** The delivery as its next post sends it: the first as built, a later one as the provider resends. */
  private nextPost(d: Sent): Delivery {
    return d.posts === 0 ? d.first : this.o.builder.resend(d.first, d.posts, Date.now());
  }

  private async post(d: Sent): Promise<void> {
    const { headers, body } = this.nextPost(d);
    d.posts += 1;
    let status = 0;
    try {
      const res = await fetch(this.o.url, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(POST_TIMEOUT_MS),
      });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      status = 0;
    }
    if (status === 202) d.accepted += 1;
    else {
      d.other += 1;
      this.non202[String(status)] = (this.non202[String(status)] ?? 0) + 1;
    }
  }

  /** Stops posting new deliveries and waits for the posts in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await Promise.all([...this.inFlight]);
  }

  /** Sends every delivery not yet answered 202 again, one at a time, until each is or `deadline` passes. */
  async redeliverUnacknowledged(deadline: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      const left = this.order.filter((d) => d.accepted === 0);
      if (left.length === 0 || Date.now() >= deadline || signal.aborted) return;
      for (const d of left) {
        if (Date.now() >= deadline || signal.aborted) return;
        this.redeliveries += 1;
        await this.post(d);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /** Delivery id → how many times the API answered it 202. */
  acceptedCounts(): Map<string, number> {
    return new Map(this.order.map((d) => [d.id, d.accepted]));
  }

  stats(): ProducerStats {
    return {
      deliveries: this.order.length,
      posts: this.order.reduce((a, d) => a + d.posts, 0),
      redeliveries: this.redeliveries,
      accepted: this.order.reduce((a, d) => a + d.accepted, 0),
      non202: { ...this.non202 },
      unacknowledged: this.order.filter((d) => d.accepted === 0).length,
    };
  }
}
