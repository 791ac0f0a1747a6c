/**
 * Data Center's rate limiting (https://confluence.atlassian.com/adminjiraserver/improving-instance-
 * stability-with-rate-limiting-983794911.html): a token bucket per user, `limit` tokens at most,
 * refilled with `limit` tokens every `windowSeconds` ("Requests allowed" per interval; "Max
 * requests" the bucket's size, the same here). A request spends a token; without one it is answered
 * 429. Every answer to an authenticated request carries `X-RateLimit-Limit`, `X-RateLimit-Remaining`,
 * `X-RateLimit-Interval-Seconds`, `X-RateLimit-FillRate` and `retry-after` (seconds until new tokens,
 * 0 while some are left: https://confluence.atlassian.com/adminjiraserver/adjusting-your-code-for-
 * rate-limiting-987143384.html). No `X-RateLimit-Reset` and no `Beta-RateLimit` headers: those are
 * Cloud's.
 */
import type { Clock } from '../../clock.js';
import type { Answer } from '../core/http.js';
import type { WindowSpec } from '../core/window.js';

export interface BucketState {
  allowed: boolean;
  remaining: number;
  /** Seconds until the next tokens; 0 while some are left. */
  retryAfter: number;
}

/** The user's token bucket. */
export class TokenBucket {
  private tokens: number | null = null;
  private filledAt = 0;

  constructor(
    readonly spec: WindowSpec,
    private readonly clock: Clock,
  ) {}

  consume(): BucketState {
    const now = this.clock.now().getTime();
    const interval = this.spec.windowSeconds * 1000;
    if (this.tokens === null) {
      this.tokens = this.spec.limit;
      this.filledAt = now;
    }
    const fills = Math.floor((now - this.filledAt) / interval);
    if (fills > 0) {
      this.tokens = Math.min(this.spec.limit, this.tokens + fills * this.spec.limit);
      this.filledAt += fills * interval;
    }
    const allowed = this.tokens >= 1;
    if (allowed) this.tokens--;
    const wait = this.tokens >= 1 ? 0 : Math.max(1, Math.ceil((this.filledAt + interval - now) / 1000));
    return { allowed, remaining: Math.floor(this.tokens), retryAfter: allowed ? (this.tokens >= 1 ? 0 : wait) : wait };
  }
}

/** The rate-limit headers of every answer to an authenticated request. */
export function bucketHeaders(spec: WindowSpec, state: BucketState): Record<string, string> {
  return {
    'x-ratelimit-limit': String(spec.limit),
    'x-ratelimit-remaining': String(Math.max(0, state.remaining)),
    'x-ratelimit-interval-seconds': String(spec.windowSeconds),
    'x-ratelimit-fillrate': String(spec.limit),
    'retry-after': String(state.retryAfter),
  };
}

/** Data Center's 429: an empty body, the bucket's headers with `retry-after`. */
export function dcLimitAnswer(spec: WindowSpec, state: BucketState): Answer {
  return { status: 429, body: '', contentType: 'text/plain;charset=UTF-8', headers: bucketHeaders(spec, state) };
}
