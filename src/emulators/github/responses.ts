/** GitHub's error bodies and the headers every answer carries. */
import type { Answer } from '../core/http.js';
import type { FaultSpec } from './faults.js';
import type { RateState } from './ratelimit.js';

export type { Answer };

export const DOCS = 'https://docs.github.com/rest';
export const RATE_DOCS = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';
export const SECONDARY_DOCS = `${RATE_DOCS}#about-secondary-rate-limits`;

/** `{"message", "documentation_url", "status"}` as GitHub's basic-error. */
export function errorAnswer(status: number, message: string, documentationUrl = DOCS): Answer {
  return { status, body: { message, documentation_url: documentationUrl, status: String(status) } };
}

export function notFound(documentationUrl = DOCS): Answer {
  return errorAnswer(404, 'Not Found', documentationUrl);
}

/** 422 with one field error, as GitHub reports an invalid parameter. */
export function validationFailed(resource: string, field: string, value: string, documentationUrl: string): Answer {
  return {
    status: 422,
    body: {
      message: 'Validation Failed',
      errors: [{ value, resource, field, code: 'invalid' }],
      documentation_url: documentationUrl,
      status: '422',
    },
  };
}

/** `subject`: whose limit, as GitHub names it (`user ID 123`, `installation ID 456`). */
export function primaryLimitAnswer(status: 403 | 429, subject: string, requestId: string): Answer {
  return errorAnswer(
    status,
    `API rate limit exceeded for ${subject}. If you reach out to GitHub Support for help, ` +
      `please include the request ID ${requestId}.`,
    RATE_DOCS,
  );
}

export function secondaryLimitAnswer(status: 403 | 429, requestId: string, retryAfter?: number): Answer {
  const answer = errorAnswer(
    status,
    'You have exceeded a secondary rate limit. Please wait a few minutes before you try again. ' +
      `If you reach out to GitHub Support for help, please include the request ID ${requestId}.`,
    SECONDARY_DOCS,
  );
  if (retryAfter !== undefined) answer.headers = { 'retry-after': String(retryAfter) };
  return answer;
}

const UNICORN =
  '<!DOCTYPE html>\n<html>\n<head><meta charset="utf-8"><title>Unicorn! · GitHub</title></head>\n' +
  '<body><p><strong>We had issues producing the response to your request.</strong></p>\n' +
  '<p>Sorry about that. Please try refreshing and contact us if the problem persists.</p></body>\n</html>\n';

/** 500 / 503 / 504 with GitHub's JSON messages; 502 with its HTML "Unicorn!" page. */
export function serverErrorAnswer(status: number): Answer {
  switch (status) {
    case 500:
      return { status, body: { message: 'Server Error' } };
    case 503:
      return errorAnswer(
        503,
        'No server is currently available to service your request. Sorry about that. ' +
          'Please try resubmitting your request and contact us if the problem persists.',
      );
    case 504:
      return errorAnswer(
        504,
        "We couldn't respond to your request in time. Sorry about that. " +
          'Please try resubmitting your request and contact us if the problem persists.',
      );
    default:
      return { status: 502, body: UNICORN, contentType: 'text/html; charset=utf-8' };
  }
}

/**
 * The answer of a fault that answers by itself (not `primary-limit`, which drains the window, nor
 * `slow`); `info` is the requested route's documentation URL and permission, when it is known.
 */
export function faultAnswer(
  fault: FaultSpec,
  info: { docs: string; permission: string } | null,
  requestId: string,
): Answer {
  switch (fault.kind) {
    case 'secondary-limit':
      return secondaryLimitAnswer(403, requestId, fault.retryAfter);
    case 'too-many-requests':
      return secondaryLimitAnswer(429, requestId, fault.retryAfter);
    case 'bad-credentials':
      return errorAnswer(401, 'Bad credentials');
    case 'forbidden': {
      const answer = errorAnswer(403, 'Resource not accessible by personal access token', info?.docs);
      answer.headers = { 'x-accepted-github-permissions': info?.permission ?? 'metadata=read' };
      return answer;
    }
    case 'not-found':
      return notFound(info?.docs);
    case 'server-error':
      return serverErrorAnswer(fault.status ?? 502);
    case 'primary-limit':
    case 'slow':
      throw new Error(`fault ${fault.kind} does not answer by itself`);
  }
}

const EXPOSED =
  'ETag, Link, Location, Retry-After, X-GitHub-OTP, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Used, ' +
  'X-RateLimit-Resource, X-RateLimit-Reset, X-OAuth-Scopes, X-Accepted-OAuth-Scopes, X-Poll-Interval, ' +
  'X-GitHub-Media-Type, X-GitHub-SSO, X-GitHub-Request-Id, Deprecation, Sunset';

/** The headers GitHub sends on every API answer, rate-limit ones included. */
export function commonHeaders(rate: RateState, requestId: string, now: Date): Record<string, string> {
  return {
    date: now.toUTCString(),
    'x-github-media-type': 'github.v3; format=json',
    'x-github-api-version-selected': '2022-11-28',
    'x-github-request-id': requestId,
    'access-control-allow-origin': '*',
    'access-control-expose-headers': EXPOSED,
    'x-ratelimit-limit': String(rate.limit),
    'x-ratelimit-remaining': String(rate.remaining),
    'x-ratelimit-reset': String(rate.reset),
    'x-ratelimit-used': String(rate.used),
    'x-ratelimit-resource': rate.resource,
    'x-content-type-options': 'nosniff',
  };
}

/** GitHub-style request ids (`C0DE:1A2B:…`), unique per emulator and request. */
export function requestIdFor(instance: number, seq: number): string {
  const hex = (n: number, w: number) => (n >>> 0).toString(16).toUpperCase().padStart(w, '0').slice(-w);
  const tail = `${hex(seq * 31, 7)}:${hex(instance * 65537 + seq, 8)}`;
  return `${hex(instance, 4)}:${hex(seq * 7919, 5)}:${hex(seq, 7)}:${tail}`;
}
