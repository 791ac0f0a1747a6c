/** The answers the emulator's front gives before any route: unauthorised, limited, injected faults. */
import type { Answer } from '../core/http.js';
import type { FaultSpec } from './faults.js';
import { resetHeader } from './limits.js';
import { jiraError } from './routes.js';

/** Jira's 401 for a missing or wrong credential. */
export function unauthorized(): Answer {
  return {
    status: 401,
    body: 'Client must be authenticated to access this resource.',
    contentType: 'text/plain;charset=UTF-8',
    headers: { 'www-authenticate': 'OAuth realm="https%3A%2F%2Femulated.atlassian.net"' },
  };
}

/** The answer of a fault that answers by itself (every kind but `slow`); `now` is the clock's, epoch ms. */
export function faultAnswer(fault: FaultSpec, now: number): Answer {
  switch (fault.kind) {
    case 'rate-limit':
      return limitAnswer(now, 0, fault.retryAfter ?? 30, 'jira-burst-based');
    case 'unauthorized':
      return unauthorized();
    case 'forbidden':
      return jiraError(403, 'You do not have the permission to see the specified issue.');
    case 'server-error': {
      const status = fault.status ?? 503;
      const answer = jiraError(status, status === 503 ? 'Service Unavailable' : 'Internal server error');
      if (status === 503) answer.headers = { 'retry-after': '1' };
      return answer;
    }
    case 'slow':
      throw new Error('a slow fault does not answer by itself');
  }
}

/**
 * 429 `Rate limit exceeded.` with `Retry-After`, `X-RateLimit-Reset` and `RateLimit-Reason`: the
 * window's reset, or `retryAfter` seconds from `now` when given (an injected limit).
 */
export function limitAnswer(now: number, resetAt: number, retryAfter?: number, reason = 'jira-quota-based'): Answer {
  const seconds = retryAfter ?? Math.max(1, Math.ceil((resetAt - now) / 1000));
  return {
    status: 429,
    body: { errorMessages: ['Rate limit exceeded.'], errors: {} },
    headers: {
      'retry-after': String(seconds),
      'x-ratelimit-reset': resetHeader(retryAfter === undefined ? resetAt : now + seconds * 1000),
      'ratelimit-reason': reason,
    },
  };
}
