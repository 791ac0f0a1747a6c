/** Retrying a call in place: a few attempts with jittered exponential backoff, cut short by abort. */
import { sleep } from './sleep.js';

export interface RetryOptions {
  /** Attempts in all (the first one included). @default 4 */
  attempts?: number;
  /** First backoff; doubles per attempt. @default 500 ms */
  baseDelayMs?: number;
  /** @default 8 s */
  maxDelayMs?: number;
  signal?: AbortSignal;
  random?: () => number;
}

export const RETRY_DEFAULTS = { attempts: 4, baseDelayMs: 500, maxDelayMs: 8000 } as const;

/** Backoff before attempt `n + 1` (n ≥ 1): full jitter over min(max, base·2^(n−1)), at least 1 ms. */
export function retryDelayMs(n: number, o: RetryOptions = {}, random: () => number = Math.random): number {
  const base = o.baseDelayMs ?? RETRY_DEFAULTS.baseDelayMs;
  const cap = Math.min(o.maxDelayMs ?? RETRY_DEFAULTS.maxDelayMs, base * 2 ** (n - 1));
  return Math.max(1, Math.floor(cap / 2 + random() * (cap / 2)));
}

/**
 * Runs `fn` until it succeeds, throws something `transient` says is not worth retrying, or the
 * attempts are spent (then `exhausted(lastError)` is thrown). Sleeps between attempts honour `signal`.
 */
export async function withRetries<T>(
  fn: (attempt: number) => Promise<T>,
  transient: (err: unknown) => boolean,
  exhausted: (err: unknown) => Error,
  o: RetryOptions = {},
): Promise<T> {
  const attempts = Math.max(1, o.attempts ?? RETRY_DEFAULTS.attempts);
  for (let n = 1; ; n++) {
    try {
      return await fn(n);
    } catch (err) {
      if (o.signal?.aborted || !transient(err)) throw err;
      if (n >= attempts) throw exhausted(err);
      await sleep(retryDelayMs(n, o, o.random), o.signal);
    }
  }
}
