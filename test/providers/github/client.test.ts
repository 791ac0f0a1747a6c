/** GitHub's rate-limit signals and budget headers, read from a response. */
import { describe, expect, it } from 'vitest';
import { githubLimitSignal, githubObservation } from '../../../src/providers/github/index.js';

const NOW = new Date(Date.UTC(2026, 2, 2, 12));
const RESET = Math.floor(NOW.getTime() / 1000) + 1234;

describe('githubLimitSignal', () => {
  it.each([
    [
      '403, remaining 0',
      403,
      { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(RESET) },
      '',
      'primary',
      RESET * 1000,
    ],
    ['429, remaining 0', 429, { 'x-ratelimit-remaining': 0, 'x-ratelimit-reset': RESET }, '', 'primary', RESET * 1000],
    ['remaining 0 without a reset', 403, { 'x-ratelimit-remaining': '0' }, '', 'primary', NOW.getTime() + 60_000],
    ['403 with retry-after', 403, { 'retry-after': '17' }, 'x', 'secondary', NOW.getTime() + 17_000],
    ['429 with retry-after', 429, { 'retry-after': '5' }, '', 'secondary', NOW.getTime() + 5_000],
    ['403 secondary message', 403, {}, 'You have exceeded a secondary rate limit', 'secondary', NOW.getTime() + 60_000],
    ['bare 429', 429, {}, 'Too Many Requests', 'secondary', NOW.getTime() + 60_000],
  ])('%s', (_name, status, headers, message, kind, liftsAt) => {
    const s = githubLimitSignal(status, headers, message, NOW);
    expect(s).toEqual({ kind, liftsAt: new Date(liftsAt) });
  });

  it('no signal: a 403 without limit headers or message, a 401, a 5xx, remaining above 0', () => {
    expect(githubLimitSignal(403, { 'x-ratelimit-remaining': '12' }, 'Resource not accessible', NOW)).toBeNull();
    expect(githubLimitSignal(401, { 'x-ratelimit-remaining': '0' }, 'Bad credentials', NOW)).toBeNull();
    expect(githubLimitSignal(502, { 'retry-after': '3' }, '', NOW)).toBeNull();
  });
});

describe('githubObservation', () => {
  it('reads the core budget; other resources and headerless answers give nothing', () => {
    const h = { 'x-ratelimit-remaining': '42', 'x-ratelimit-limit': '5000', 'x-ratelimit-reset': String(RESET) };
    expect(githubObservation({ ...h, 'x-ratelimit-resource': 'core' }, NOW, null)).toEqual({
      remaining: 42,
      limit: 5000,
      resetAt: new Date(RESET * 1000),
      limitedUntil: null,
      observedAt: NOW,
    });
    expect(githubObservation({ ...h, 'x-ratelimit-resource': 'search' }, NOW, null)).toBeNull();
    expect(githubObservation({}, NOW, null)).toBeNull();
    expect(githubObservation({}, NOW, new Date(RESET * 1000))).toMatchObject({
      remaining: null,
      limitedUntil: new Date(RESET * 1000),
    });
  });
});
