/**
 * The emulator's budgets, per API key: requests, complexity points and, for the root fields given
 * one, an endpoint's requests. Each is a leaky bucket as Linear describes its limiters
 * (https://linear.app/developers/rate-limiting): a bucket of `limit` tokens refilled at the constant
 * rate `limit / windowSeconds`, not a fixed window. Reported as Linear reports them:
 * `X-RateLimit-Requests-{Limit,Remaining,Reset}`, `X-RateLimit-Complexity-{Limit,Remaining,Reset}`,
 * `X-RateLimit-Endpoint-Requests-{Limit,Remaining,Reset}` with `X-RateLimit-Endpoint-Name`, plus
 * `X-Complexity` (the query's cost). A reset is the epoch millisecond at which the bucket will be
 * full again (the SDK schema's `RateLimitResultPayload.reset`: "fully replenished").
 */
import type { Clock } from '../../clock.js';
import type { BudgetSpec } from './options.js';

export interface WindowState {
  limit: number;
  remaining: number;
  /** Epoch ms when the bucket is full again. */
  reset: number;
}

interface Level {
  tokens: number;
  /** Epoch ms the tokens were counted at (no refill before it: an injected hold). */
  at: number;
}

export class LeakyBucket {
  private readonly levels = new Map<string, Level>();

  constructor(
    readonly spec: BudgetSpec,
    private readonly clock: Clock,
  ) {}

  /** Tokens refilled per millisecond. */
  private get rate(): number {
    return this.spec.limit / (this.spec.windowSeconds * 1000);
  }

  private current(key: string): Level {
    const now = this.clock.now().getTime();
    const l = this.levels.get(key) ?? { tokens: this.spec.limit, at: now };
    if (now > l.at) {
      l.tokens = Math.min(this.spec.limit, l.tokens + (now - l.at) * this.rate);
      l.at = now;
    }
    this.levels.set(key, l);
    return l;
  }

  peek(key: string): WindowState {
    return this.state(this.current(key));
  }

  /** Whether `cost` more fits in the bucket now. */
  fits(key: string, cost: number): boolean {
    return this.current(key).tokens >= cost;
  }

  /** Milliseconds until `cost` fits (0: it fits now). */
  waitMs(key: string, cost: number): number {
    const l = this.current(key);
    const hold = Math.max(0, l.at - this.clock.now().getTime());
    const need = Math.min(cost, this.spec.limit) - l.tokens;
    return need <= 0 ? hold : hold + Math.ceil(need / this.rate);
  }

  spend(key: string, cost: number): WindowState {
    const l = this.current(key);
    l.tokens = Math.max(0, l.tokens - cost);
    return this.state(l);
  }

  /** Empties the bucket (an injected limit), holding it empty for `holdSeconds` when given. */
  drain(key: string, holdSeconds?: number): WindowState {
    const l = this.current(key);
    l.tokens = 0;
    if (holdSeconds !== undefined) l.at = Math.max(l.at, this.clock.now().getTime() + holdSeconds * 1000);
    return this.state(l);
  }

  private state(l: Level): WindowState {
    const full = Math.max(l.at, this.clock.now().getTime()) + Math.ceil((this.spec.limit - l.tokens) / this.rate);
    return { limit: this.spec.limit, remaining: Math.floor(l.tokens), reset: full };
  }
}

/** An endpoint's bucket state and its name (a root field with a limit of its own). */
export interface EndpointState extends WindowState {
  name: string;
}

export function rateHeaders(
  req: WindowState,
  cx: WindowState,
  cost: number | null,
  endpoint: EndpointState | null = null,
): Record<string, string> {
  const h: Record<string, string> = {
    'x-ratelimit-requests-limit': String(req.limit),
    'x-ratelimit-requests-remaining': String(req.remaining),
    'x-ratelimit-requests-reset': String(req.reset),
    'x-ratelimit-complexity-limit': String(cx.limit),
    'x-ratelimit-complexity-remaining': String(cx.remaining),
    'x-ratelimit-complexity-reset': String(cx.reset),
  };
  if (cost !== null) h['x-complexity'] = String(cost);
  if (endpoint) {
    h['x-ratelimit-endpoint-name'] = endpoint.name;
    h['x-ratelimit-endpoint-requests-limit'] = String(endpoint.limit);
    h['x-ratelimit-endpoint-requests-remaining'] = String(endpoint.remaining);
    h['x-ratelimit-endpoint-requests-reset'] = String(endpoint.reset);
  }
  return h;
}
