/**
 * GitHub's primary rate limit, enforced per token: a fixed window that starts with the first
 * request after the previous one ended; `limit` requests fit in it; then every request is refused
 * until the reset second. Time comes from the injected clock.
 */
import type { Clock } from '../../clock.js';
import type { RateLimitSpec } from './options.js';

/** What the `x-ratelimit-*` headers report. */
export interface RateState {
  limit: number;
  remaining: number;
  /** Epoch seconds when the window resets. */
  reset: number;
  used: number;
  resource: 'core';
}

interface Window {
  resetAt: number;
  used: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    readonly spec: RateLimitSpec,
    private readonly clock: Clock,
  ) {}

  /** The state for `key` without spending a request (a fresh window if none is running). */
  peek(key: string): RateState {
    return this.state(this.current(key) ?? { resetAt: this.windowEnd(), used: 0 });
  }

  /** Spends one request if the window has room; `allowed` false once it is exhausted. */
  consume(key: string): { allowed: boolean; state: RateState } {
    let w = this.current(key);
    if (!w) {
      w = { resetAt: this.windowEnd(), used: 0 };
      this.windows.set(key, w);
    }
    if (w.used >= this.spec.limit) return { allowed: false, state: this.state(w) };
    w.used++;
    return { allowed: true, state: this.state(w) };
  }

  /** Gives back one request (a 304 answer, which GitHub does not count). */
  refund(key: string): RateState {
    const w = this.current(key);
    if (w && w.used > 0) w.used--;
    return this.peek(key);
  }

  /** Exhausts `key`'s window; with `resetSeconds`, the window ends that many seconds from now. */
  drain(key: string, resetSeconds?: number): void {
    const w = this.current(key) ?? { resetAt: this.windowEnd(), used: 0 };
    w.used = this.spec.limit;
    if (resetSeconds !== undefined)
      w.resetAt = Math.ceil((this.clock.now().getTime() + resetSeconds * 1000) / 1000) * 1000;
    this.windows.set(key, w);
  }

  private current(key: string): Window | undefined {
    const w = this.windows.get(key);
    if (w && this.clock.now().getTime() >= w.resetAt) {
      this.windows.delete(key);
      return undefined;
    }
    return w;
  }

  /** Whole seconds, so `x-ratelimit-reset` is exactly the instant requests are allowed again. */
  private windowEnd(): number {
    return Math.ceil((this.clock.now().getTime() + this.spec.windowSeconds * 1000) / 1000) * 1000;
  }

  private state(w: Window): RateState {
    const used = Math.min(w.used, this.spec.limit);
    return {
      limit: this.spec.limit,
      remaining: this.spec.limit - used,
      reset: w.resetAt / 1000,
      used,
      resource: 'core',
    };
  }
}
