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

/** The socket to the server failed (refused, reset, broken): PostgreSQL is down or restarting. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);
/** admin_shutdown, crash_shutdown, cannot_connect_now (starting up, shutting down, in recovery). */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03']);

/**
 * Whether `err` says PostgreSQL could not be reached or went away (an outage, a restart, a
 * terminated connection) — not what a statement did: class 08, 57P01–57P03, a failed socket, or
 * node-postgres's own "Connection terminated" / "not queryable" errors (they carry no code).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    return UNREACHABLE_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code);
  }
  const message = err instanceof Error ? err.message : '';
  return /^Connection terminated\b/.test(message) || /is not queryable/.test(message);
}
