/**
 * The enforced budget and injected faults. Budget: per credential, `limit` requests in a window
 * of `windowSeconds` that starts with the first request after the previous one ended and ends on
 * a whole minute (Jira's `X-RateLimit-Reset` is written to the minute: `yyyy-MM-ddTHH:mmZ`).
 */
import type { Clock } from '../../../clock.js';
import { Rng } from '../../github/emulator/random.js';
import { validateFault, type FaultSpec, type RateLimitSpec } from './options.js';

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

interface Armed {
  spec: FaultSpec;
  left: number | null;
}

/** Faults for requests whose path contains `path`: the next `count`, each with `probability`, or all. */
export class FaultInjector {
  private armed: Armed[] = [];
  private readonly rng: Rng;

  constructor(seed: number, faults: readonly FaultSpec[] = []) {
    this.rng = new Rng(seed, 'faults');
    this.set(faults);
  }

  set(faults: readonly FaultSpec[]): void {
    const checked = faults.map((f, i) => validateFault(f, `faults[${i}]`));
    this.armed = checked.map((spec) => ({ spec, left: spec.count ?? null }));
  }

  /** At most one answering fault, plus the delay of any `slow` ones. */
  draw(path: string): { answer: FaultSpec | null; delayMs: number } {
    let answer: FaultSpec | null = null;
    let delayMs = 0;
    for (const a of this.armed) {
      if (a.spec.path !== undefined && !path.includes(a.spec.path)) continue;
      if (a.spec.kind !== 'slow' && answer) continue;
      if (!this.fires(a)) continue;
      if (a.spec.kind === 'slow') delayMs += a.spec.delayMs ?? 0;
      else answer = a.spec;
    }
    this.armed = this.armed.filter((a) => a.left === null || a.left > 0);
    return { answer, delayMs };
  }

  private fires(a: Armed): boolean {
    if (a.left !== null) {
      if (a.left <= 0) return false;
      a.left--;
      return true;
    }
    return a.spec.probability === undefined || this.rng.next() < a.spec.probability;
  }
}
