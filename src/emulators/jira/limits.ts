/**
 * The enforced budget: per credential, `limit` requests in a window
 * of `windowSeconds` that starts with the first request after the previous one ended and ends on
 * a whole minute (Jira's `X-RateLimit-Reset` is written to the minute: `yyyy-MM-ddTHH:mmZ`).
 */
import type { Clock } from '../../clock.js';
import type { RateLimitSpec } from './options.js';

const MINUTE = 60_000;

export interface RateState {
  limit: number;
  remaining: number;
  /** Epoch ms the window ends. */
  resetAt: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, { resetAt: number; used: number }>();

  constructor(
    readonly spec: RateLimitSpec,
    private readonly clock: Clock,
  ) {}

  /** Spends one request if the window has room. */
  consume(key: string): { allowed: boolean; state: RateState } {
    const now = this.clock.now().getTime();
    let w = this.windows.get(key);
    if (!w || now >= w.resetAt) {
      w = { resetAt: Math.ceil((now + this.spec.windowSeconds * 1000) / MINUTE) * MINUTE, used: 0 };
      this.windows.set(key, w);
    }
    const allowed = w.used < this.spec.limit;
    if (allowed) w.used++;
    return { allowed, state: { limit: this.spec.limit, remaining: this.spec.limit - w.used, resetAt: w.resetAt } };
  }
}

/** `yyyy-MM-ddTHH:mmZ`, as Jira writes `X-RateLimit-Reset`. */
export function resetHeader(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16)}Z`;
}

/** The `X-RateLimit-*` headers of an answer counted against the budget (none when it was not). */
export function rateHeaders(rate: RateState | null): Record<string, string> {
  if (!rate) return {};
  return {
    'x-ratelimit-limit': String(rate.limit),
    'x-ratelimit-remaining': String(Math.max(0, rate.remaining)),
    'x-ratelimit-reset': resetHeader(rate.resetAt),
    'x-ratelimit-nearlimit': String(rate.remaining < rate.limit * 0.2),
  };
}
