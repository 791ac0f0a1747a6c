/**
 * The enforced limits, as Jira Cloud has them (developer.atlassian.com/cloud/jira/platform/rate-limiting):
 *
 * - the quota: per credential, `limit` requests in a window of `windowSeconds` that starts with the
 *   first request after the previous one ended and ends on a whole minute; success answers show it
 *   in the `Beta-RateLimit-Policy` / `Beta-RateLimit` headers (`q`, `w`; `r` remaining, `t` seconds
 *   to its reset);
 * - per endpoint (method and route): a burst limit per window of `windowSeconds` (1 s: Jira's
 *   request-rate limits are per second), shown as `X-RateLimit-Limit` / `X-RateLimit-Remaining`
 *   on success answers — without `X-RateLimit-Reset`, which only a 429 carries (with `Retry-After`).
 */
import type { Clock } from '../../clock.js';
import type { WindowSpec as RateLimitSpec } from '../core/window.js';

const MINUTE = 60_000;

export interface RateState {
  limit: number;
  remaining: number;
  /** Epoch ms the window ends. */
  resetAt: number;
}

/** Per-endpoint burst limits: `limit` per `windowSeconds` for every route, `routes` overriding some. */
export interface EndpointLimitSpec {
  limit: number;
  windowSeconds: number;
  /** Limits of particular routes, by route name (`POST /rest/api/3/search/jql`, `GET /rest/api/3/project/{key}`). */
  routes: Readonly<Record<string, number>>;
}

/** 400 a second for most endpoints, 350 for search (the limits Jira Cloud answers show). */
export const DEFAULT_ENDPOINT_LIMITS: EndpointLimitSpec = {
  limit: 400,
  windowSeconds: 1,
  routes: { 'POST /rest/api/3/search/jql': 350, 'GET /rest/api/3/search/jql': 350 },
};

/** The credential's quota: a window ending on a whole minute. */
export class RateLimiter {
  private readonly windows = new Map<string, { resetAt: number; used: number }>();

  constructor(
    readonly spec: RateLimitSpec,
    private readonly clock: Clock,
  ) {}

  /** Epoch ms `key`'s running window ends; null when none runs (its next request opens one). */
  windowEnd(key: string): number | null {
    const w = this.windows.get(key);
    return w && this.clock.now().getTime() < w.resetAt ? w.resetAt : null;
  }

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

/** Each endpoint's burst limit: fixed windows of `windowSeconds`, aligned to the clock. */
export class EndpointLimiter {
  private readonly windows = new Map<string, { resetAt: number; used: number }>();

  constructor(
    readonly spec: EndpointLimitSpec,
    private readonly clock: Clock,
  ) {}

  consume(route: string): { allowed: boolean; state: RateState } {
    const now = this.clock.now().getTime();
    const size = this.spec.windowSeconds * 1000;
    const limit = this.spec.routes[route] ?? this.spec.limit;
    let w = this.windows.get(route);
    if (!w || now >= w.resetAt) {
      w = { resetAt: (Math.floor(now / size) + 1) * size, used: 0 };
      this.windows.set(route, w);
    }
    const allowed = w.used < limit;
    if (allowed) w.used++;
    return { allowed, state: { limit, remaining: limit - w.used, resetAt: w.resetAt } };
  }
}

/** `yyyy-MM-ddTHH:mmZ`, as Jira writes `X-RateLimit-Reset`. */
export function resetHeader(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16)}Z`;
}

/**
 * A success answer's limit headers: the endpoint's `X-RateLimit-Limit` / `-Remaining` (no reset),
 * `X-RateLimit-NearLimit` (less than 20 % of a budget left), and the quota's `Beta-RateLimit-*`.
 */
export function successHeaders(endpoint: RateState, quota: RateState, windowSeconds: number, now: number) {
  const near = endpoint.remaining < endpoint.limit * 0.2 || quota.remaining < quota.limit * 0.2;
  const t = Math.max(0, Math.ceil((quota.resetAt - now) / 1000));
  return {
    'x-ratelimit-limit': String(endpoint.limit),
    'x-ratelimit-remaining': String(Math.max(0, endpoint.remaining)),
    'x-ratelimit-nearlimit': String(near),
    'beta-ratelimit-policy': `"tenant-app-quota";q=${quota.limit};w=${windowSeconds}`,
    'beta-ratelimit': `"tenant-app-quota";r=${Math.max(0, quota.remaining)};t=${t}`,
  };
}

/** A request's route: its method and path without ids and query (`GET /rest/api/3/issue/{id}/changelog`). */
export function routeName(method: string, path: string): string {
  const p = path
    .split('?')[0]!
    .replace(/\/issue\/[^/]+(\/|$)/, '/issue/{id}$1')
    .replace(/\/board\/\d+\//, '/board/{id}/')
    .replace(/\/project\/(?!search)[^/]+$/, '/project/{key}');
  return `${method} ${p}`;
}
