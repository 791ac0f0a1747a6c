import { describe, expect, it } from 'vitest';
import {
  classifyError,
  describeError,
  LeaseLostError,
  NonRetryableError,
  ProviderTimeoutError,
  RateLimitError,
  SyncRelayError,
  ValidationError,
  type ErrorCategory,
} from '../../src/errors.js';

function withCode(code: string): Error {
  return Object.assign(new Error(`connect ${code}`), { code });
}

function withStatus(status: number): Error {
  return Object.assign(new Error(`HTTP ${status}`), { status });
}

describe('classifyError', () => {
  const cases: Array<[string, unknown, ErrorCategory]> = [
    ['RateLimitError', new RateLimitError(30_000), 'rate_limit'],
    ['NonRetryableError (default)', new NonRetryableError('bad cursor'), 'provider_error'],
    ['NonRetryableError(auth)', new NonRetryableError('revoked', 'auth'), 'auth'],
    ['NonRetryableError(not_found)', new NonRetryableError('gone', 'not_found'), 'not_found'],
    ['NonRetryableError(adapter_error)', new NonRetryableError('sink', 'adapter_error'), 'adapter_error'],
    ['ProviderTimeoutError', new ProviderTimeoutError(), 'timeout'],
    ['ECONNRESET', withCode('ECONNRESET'), 'network'],
    ['ECONNREFUSED', withCode('ECONNREFUSED'), 'network'],
    ['ETIMEDOUT', withCode('ETIMEDOUT'), 'network'],
    ['EPIPE', withCode('EPIPE'), 'network'],
    ['ENOTFOUND', withCode('ENOTFOUND'), 'network'],
    ['EAI_AGAIN', withCode('EAI_AGAIN'), 'network'],
    ['a plain object with a network code', { code: 'ECONNRESET' }, 'network'],
    ['HTTP 401', withStatus(401), 'auth'],
    ['HTTP 403', withStatus(403), 'auth'],
    ['HTTP 404', withStatus(404), 'not_found'],
    ['HTTP 500', withStatus(500), 'provider_error'],
    ['HTTP 429 without RateLimitError', withStatus(429), 'provider_error'],
    ['an unknown error code', withCode('EWHATEVER'), 'provider_error'],
    ['a Postgres error code', withCode('23505'), 'provider_error'],
    ['a plain Error', new Error('boom'), 'provider_error'],
    ['a string', 'boom', 'provider_error'],
    ['null', null, 'provider_error'],
    ['undefined', undefined, 'provider_error'],
    ['a number', 42, 'provider_error'],
  ];

  it.each(cases)('%s → %s', (_, err, category) => {
    expect(classifyError(err)).toBe(category);
  });
});

describe('the error hierarchy', () => {
  it('every error carries a stable code, its class name and its cause', () => {
    const cause = new Error('socket hang up');
    const errors: Array<[SyncRelayError, string]> = [
      [new LeaseLostError('u1', { cause }), 'lease_lost'],
      [new RateLimitError(1000, 'slow down', { cause }), 'rate_limit'],
      [new NonRetryableError('no', 'auth', { cause }), 'non_retryable'],
      [new ProviderTimeoutError('late', { cause }), 'timeout'],
      [new ValidationError('SYNC_RUN_MAX_UNITS', 'bad', { cause }), 'invalid_input'],
    ];
    for (const [err, code] of errors) {
      expect(err).toBeInstanceOf(SyncRelayError);
      expect(err.code).toBe(code);
      expect(err.name).toBe(err.constructor.name);
      expect(err.cause).toBe(cause);
    }
  });

  it('carries the ids callers need', () => {
    expect(new LeaseLostError('unit-7').unitId).toBe('unit-7');
    expect(new RateLimitError(1500).retryAfterMs).toBe(1500);
    expect(new ValidationError('REDIS_URL', 'bad').message).toBe('REDIS_URL: bad');
  });

  it('describeError is short and storable', () => {
    expect(describeError(new RateLimitError(1, 'slow'))).toBe('RateLimitError: slow');
    expect(describeError('x'.repeat(5000))).toHaveLength(2000);
    expect(describeError(undefined)).toBe('undefined');
  });
});
