/** Linear's GraphQL error answers (`data: null` and one error with its `extensions.code`). */
import type { LinearFaultSpec } from './faults.js';

/** An answer and the GraphQL error code it carries (for the request log). */
export interface Answer {
  status: number;
  body: unknown;
  code: string | null;
  /** Headers of its own (`retry-after`). */
  headers?: Record<string, string>;
}

export function gqlError(status: number, code: string, type: string, message: string): Answer {
  return {
    status,
    code,
    body: {
      data: null,
      errors: [{ message, extensions: { code, type, userError: true, userPresentableMessage: message } }],
    },
  };
}

/**
 * A spent budget: `RATELIMITED`, with `status` (Linear: 400; 200 or 429 when configured). A 429
 * carries `retry-after` (whole seconds until the request would fit), as the SDK reads it
 * (`RatelimitedLinearError.retryAfter`).
 */
export function rateLimited(status: number, retryAfterMs = 0): Answer {
  const a = gqlError(status, 'RATELIMITED', 'ratelimited', 'Rate limit exceeded. Please retry after the reset.');
  if (status === 429) a.headers = { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) };
  return a;
}

/** A missing, unknown or wrongly sent key. */
export function unauthenticated(): Answer {
  return gqlError(401, 'AUTHENTICATION_ERROR', 'authentication error', 'Authentication required, not authenticated');
}

/**
 * The answer of a fault that answers by itself (every kind but `slow` and `partial`); `drain` empties
 * the key's request bucket (held empty `resetSeconds` from now when given) and says how long until
 * a request fits again.
 */
export function faultAnswer(f: LinearFaultSpec, drain: (resetSeconds?: number) => number): Answer {
  switch (f.kind) {
    case 'too-many-requests':
      return rateLimited(429, drain(f.resetSeconds));
    case 'ratelimited':
      return rateLimited(f.status ?? 400, drain(f.resetSeconds));
    case 'complexity':
      return gqlError(400, 'QUERY_TOO_COMPLEX', 'graphql error', 'Query too complex');
    case 'unauthenticated':
      return unauthenticated();
    case 'server-error':
      return { status: f.status ?? 502, code: 'INTERNAL_SERVER_ERROR', body: { errors: [{ message: 'Bad gateway' }] } };
    case 'slow':
    case 'partial':
      throw new Error(`${f.kind} does not answer by itself`);
  }
}
