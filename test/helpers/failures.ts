/** How a test reads the error a promise was expected to reject with. */
import { expect } from 'vitest';
import { classifyError, RateLimitError } from '../../src/errors.js';

/** The Error `p` rejects with; fails the test when `p` resolves or rejects with a non-Error. */
export async function failureOf(p: Promise<unknown>): Promise<Error> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return err as Error;
}

/** The RateLimitError `p` rejects with (classified `rate_limit`); fails the test otherwise. */
export async function rateLimitOf(p: Promise<unknown>): Promise<RateLimitError> {
  const err = await failureOf(p);
  expect(err).toBeInstanceOf(RateLimitError);
  expect(classifyError(err)).toBe('rate_limit');
  return err as RateLimitError;
}
