/**
 * One classification of provider HTTP failures, shared by every provider:
 * rate limited until a time → `RateLimitError`; 401, or 403 without rate-limit signals →
 * non-retryable `auth`; 404 → non-retryable `not_found`; 5xx and network errors → transient
 * (retried in place, then non-retryable `provider_error`). Each provider only says how its
 * responses signal a rate limit (the call loop's `judge`, see call.ts).
 *
 * What an answer said is never any error's text as it is: every error a failed answer ends a call
 * with is caused by a `ProviderAnswerError` (status, the provider's code, a redacted and bounded
 * summary: redact.ts).
 */
import { NonRetryableError, RateLimitError } from '../../errors.js';
import { errorSummary } from './redact.js';

/** A rate limit a response signalled: which kind, and when it lifts. */
export interface LimitSignal {
  kind: 'primary' | 'secondary';
  liftsAt: Date;
}

/** What a failed call showed: a status (null: no response at all) and a rate-limit signal, if any. */
export interface FailureFacts {
  status: number | null;
  limit: LimitSignal | null;
}

export type FailureClass =
  | { kind: 'rate_limit'; limit: LimitSignal }
  | { kind: 'auth' }
  | { kind: 'not_found' }
  | { kind: 'transient' }
  | { kind: 'other' };

/** Classifies a failed call; a rate-limit signal wins over the status. */
export function classifyFailure(f: FailureFacts): FailureClass {
  if (f.limit) return { kind: 'rate_limit', limit: f.limit };
  if (f.status === null) return { kind: 'transient' };
  if (f.status === 401 || f.status === 403) return { kind: 'auth' };
  if (f.status === 404) return { kind: 'not_found' };
  if (f.status === 429 || f.status >= 500) return { kind: 'transient' };
  return { kind: 'other' };
}

/** Who is calling: named in every message. Never a credential. */
export interface CallSubject {
  /** e.g. `github integration "acme"` */
  integration: string;
  /** What was being read, e.g. `GET /repos/acme/app/issues`. */
  what: string;
}

/** The error a classified failure ends the call with (`transient` only once retries are spent). */
export function failureError(c: FailureClass, subject: CallSubject, now: Date, cause: unknown): Error {
  const at = `${subject.integration}: ${subject.what}`;
  switch (c.kind) {
    case 'rate_limit': {
      const waitMs = Math.max(0, c.limit.liftsAt.getTime() - now.getTime());
      const msg = `${at}: ${c.limit.kind} rate limit until ${c.limit.liftsAt.toISOString()}`;
      return new RateLimitError(waitMs, msg, { cause, liftsAt: c.limit.liftsAt });
    }
    case 'auth':
      return new NonRetryableError(`${at}: the provider refused the integration's credential`, 'auth', { cause });
    case 'not_found':
      return new NonRetryableError(`${at}: not found (or not visible to the credential)`, 'not_found', { cause });
    case 'transient':
      return providerError(subject, ': provider unavailable after retries', cause);
    case 'other':
      return providerError(subject, ': the provider refused the request', cause);
  }
}

/** A non-retryable `provider_error` naming the call, then `detail` (e.g. `: the answer is not JSON`). */
export function providerError(subject: CallSubject, detail: string, cause: unknown): NonRetryableError {
  return new NonRetryableError(`${subject.integration}: ${subject.what}${detail}`, 'provider_error', { cause });
}

/** The longest provider error code shown (`errors[0].code`, `extensions.code`, …). */
const CODE_MAX = 60;

/**
 * What a failed answer showed, as it may be stored, shown and logged: the HTTP status, the
 * provider's error code (when its answer has one) and a short summary of what it said, every form
 * of the credential and every token-shaped string redacted (redact.ts `errorSummary`). The cause
 * of every error a failed answer ends a call with; the answer's body itself is never one.
 */
export class ProviderAnswerError extends Error {
  constructor(
    readonly status: number,
    /** The provider's error code, e.g. GitHub's `invalid`, Linear's `GRAPHQL_VALIDATION_FAILED`. */
    readonly code: string | null,
    /** At most SUMMARY_MAX characters; may be empty. */
    readonly summary: string,
  ) {
    super(`HTTP ${status}${code ? `, ${code}` : ''}${summary ? `: ${summary}` : ''}`);
    this.name = 'ProviderAnswerError';
  }
}

/** What an answer said went wrong, in the provider's own words (never shown as they are). */
export interface AnswerWords {
  status: number;
  /** The provider's error code, if its answer has one. */
  code?: string | null;
  /** Its message(s), or its body's text. */
  says?: string;
}

/** The answer as it may be shown: redacted of `secrets` (credentialForms) and bounded. */
export function answerError(w: AnswerWords, secrets: readonly string[]): ProviderAnswerError {
  const code = w.code ? errorSummary(w.code, secrets, CODE_MAX) : '';
  return new ProviderAnswerError(w.status, code === '' ? null : code, errorSummary(w.says ?? '', secrets));
}

/**
 * A request, link or redirect that would leave the integration's origin: refused before it is sent.
 * Its message names the foreign origin (scheme://host:port) and nothing more of the URL.
 */
export class OffOriginError extends Error {
  constructor(readonly origin: string) {
    super(`refused to send a request to another origin (${origin})`);
  }
}

/** The non-retryable `provider_error` a refused off-origin request ends the call with. */
export function offOriginError(integration: string, off: OffOriginError): NonRetryableError {
  return new NonRetryableError(`${integration}: ${off.message}`, 'provider_error', { cause: off });
}

/** Whether a call ended as an `auth` failure whose answer was a 401 (a stale or revoked token; a 403 is none). */
export function refusedWith401(err: unknown): boolean {
  if (!(err instanceof NonRetryableError) || err.category !== 'auth') return false;
  return err.cause instanceof ProviderAnswerError && err.cause.status === 401;
}
