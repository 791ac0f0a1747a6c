/** Linear's GraphQL error answers (`data: null` and one error with its `extensions.code`). */
import type { LinearFaultSpec } from './faults.js';

/** An answer and the GraphQL error code it carries (for the request log). */
export interface Answer {
  status: number;
  body: unknown;
  code: string | null;
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

/** A spent budget: `RATELIMITED`, with `status` (Linear: 400; 200 or 429 when configured). */
export function rateLimited(status: number): Answer {
  return gqlError(status, 'RATELIMITED', 'ratelimited', 'Rate limit exceeded. Please retry after the reset.');
}

/** A missing, unknown or wrongly sent key. */
export function unauthenticated(): Answer {
  return gqlError(401, 'AUTHENTICATION_ERROR', 'authentication error', 'Authentication required, not authenticated');
}

/**
 * The answer of a fault that answers by itself (every kind but `slow`); `drain` spends the key's
 * request window (moving its reset `resetSeconds` from now when given).
 */
export function faultAnswer(f: LinearFaultSpec, drain: (resetSeconds?: number) => void): Answer {
  switch (f.kind) {
    case 'too-many-requests':
      drain(f.resetSeconds);
      return rateLimited(429);
    case 'ratelimited':
      drain(f.resetSeconds);
      return rateLimited(f.status ?? 400);
    case 'complexity':
      return gqlError(400, 'QUERY_TOO_COMPLEX', 'graphql error', 'Query too complex');
    case 'unauthenticated':
      return unauthenticated();
    case 'server-error':
      return { status: f.status ?? 502, code: 'INTERNAL_SERVER_ERROR', body: { errors: [{ message: 'Bad gateway' }] } };
    case 'slow':
      throw new Error('slow does not answer by itself');
  }
}
