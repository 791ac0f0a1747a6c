/** Which database errors mean "the transaction was rolled back; running it again is safe". */

/** serialization_failure and deadlock_detected: PostgreSQL rolled the transaction back. */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

export function isRetryableTxError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE_SQLSTATES.has(code);
}

/** Attempts of one transaction before its error is passed on. */
export const MAX_TX_ATTEMPTS = 5;

/** A short, growing, jittered pause between attempts (ms). */
export function retryPauseMs(attempt: number, random: () => number = Math.random): number {
  return Math.round(5 * 2 ** attempt * (0.5 + random()));
}
