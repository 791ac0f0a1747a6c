/**
 * The emulator's budgets, per API key: requests and complexity points, each a fixed window that
 * starts with the first request after the previous one ended. Reported as Linear reports them:
 * `X-RateLimit-Requests-{Limit,Remaining,Reset}` and `X-RateLimit-Complexity-{Limit,Remaining,
 * Reset}` (resets in epoch milliseconds), plus `X-Complexity` (the query's cost).
 */
import type { Clock } from '../../clock.js';
import type { BudgetSpec } from './options.js';

export interface WindowState {
  limit: number;
  remaining: number;
  /** Epoch ms when the window resets. */
  reset: number;
}

interface Window {
  resetAt: number;
  used: number;
}

export class FixedWindow {
  private readonly windows = new Map<string, Window>();

  constructor(
    readonly spec: BudgetSpec,
    private readonly clock: Clock,
  ) {}

  private current(key: string): Window {
    const now = this.clock.now().getTime();
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { resetAt: now + this.spec.windowSeconds * 1000, used: 0 };
      this.windows.set(key, w);
    }
    return w;
  }

  peek(key: string): WindowState {
    return this.state(this.current(key));
  }

  /** Whether `cost` more fits in the window. */
  fits(key: string, cost: number): boolean {
    const w = this.current(key);
    return w.used + cost <= this.spec.limit;
  }

  spend(key: string, cost: number): WindowState {
    const w = this.current(key);
    w.used = Math.min(this.spec.limit, w.used + cost);
    return this.state(w);
  }

  /** Spends the whole window (an injected limit), optionally moving its reset. */
  drain(key: string, resetSeconds?: number): WindowState {
    const w = this.current(key);
    w.used = this.spec.limit;
    if (resetSeconds !== undefined) w.resetAt = this.clock.now().getTime() + resetSeconds * 1000;
    return this.state(w);
  }

  private state(w: Window): WindowState {
    return { limit: this.spec.limit, remaining: Math.max(0, this.spec.limit - w.used), reset: w.resetAt };
  }
}

export function rateHeaders(req: WindowState, cx: WindowState, cost: number | null): Record<string, string> {
  const h: Record<string, string> = {
    'x-ratelimit-requests-limit': String(req.limit),
    'x-ratelimit-requests-remaining': String(req.remaining),
    'x-ratelimit-requests-reset': String(req.reset),
    'x-ratelimit-complexity-limit': String(cx.limit),
    'x-ratelimit-complexity-remaining': String(cx.remaining),
    'x-ratelimit-complexity-reset': String(cx.reset),
  };
  if (cost !== null) h['x-complexity'] = String(cost);
  return h;
}
