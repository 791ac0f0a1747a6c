/**
 * The Linear client's classification of responses (fetch injected, no server): which budget's reset
 * a limit lifts at, RATELIMITED by code or by type, auth by status or by error, the query named.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { classifyError, NonRetryableError, RateLimitError } from '../../../src/errors.js';
import { createLinearClient, LIMIT_FALLBACK_MS, type LinearClient } from '../../../src/providers/linear/index.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const KEY = 'lin_api_CLIENTTESTSECRET000000000000000000000000';

function clientAnswering(status: number, body: unknown, headers: Record<string, string> = {}) {
  const seen: RequestInit[] = [];
  const fetchFn = ((_url: string, init: RequestInit) => {
    seen.push(init);
    return Promise.resolve(new Response(JSON.stringify(body), { status, headers }));
  }) as unknown as typeof fetch;
  const client: LinearClient = createLinearClient({
    apiUrl: 'https://api.linear.app/graphql',
    credential: KEY,
    subject: 'linear integration "t"',
    clock: new ManualClock(T0),
    signal: new AbortController().signal,
    logger: pino({ level: 'silent' }),
    budgets: null,
    retry: { attempts: 1 },
    fetch: fetchFn,
  });
  return { client, seen };
}

async function errorOf(c: LinearClient): Promise<Error> {
  try {
    await c.query('SyncTeams', '{ teams { nodes { id } } }', {});
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

const limitBody = (by: 'code' | 'type') => ({
  data: null,
  errors: [
    { message: 'Rate limit exceeded', extensions: by === 'code' ? { code: 'RATELIMITED' } : { type: 'ratelimited' } },
  ],
});

describe('Linear client classification', () => {
  it('sends a personal key as is, with our query and its name', async () => {
    const { client, seen } = clientAnswering(200, { data: { teams: { nodes: [] } } });
    expect(await client.query('SyncTeams', '{ teams { nodes { id } } }', {})).toEqual({ teams: { nodes: [] } });
    expect((seen[0]!.headers as Record<string, string>).authorization).toBe(KEY);
    expect(JSON.parse(seen[0]!.body as string)).toMatchObject({ operationName: 'SyncTeams' });
  });

  it('a limit lifts at the reset of the budget that is spent (requests, or complexity)', async () => {
    const requests = clientAnswering(400, limitBody('code'), {
      'x-ratelimit-requests-remaining': '0',
      'x-ratelimit-requests-reset': String(T0 + 30_000),
      'x-ratelimit-complexity-remaining': '50000',
      'x-ratelimit-complexity-reset': String(T0 + 90_000),
    });
    expect(((await errorOf(requests.client)) as RateLimitError).liftsAt!.getTime()).toBe(T0 + 30_000);
    const complexity = clientAnswering(200, limitBody('type'), {
      'x-ratelimit-requests-remaining': '900',
      'x-ratelimit-requests-reset': String(T0 + 30_000),
      'x-ratelimit-complexity-remaining': '100',
      'x-ratelimit-complexity-reset': String(T0 + 90_000),
      'x-complexity': '800',
    });
    const err = await errorOf(complexity.client);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).liftsAt!.getTime()).toBe(T0 + 90_000);
  });

  it('a 429 without headers waits the fallback', async () => {
    const { client } = clientAnswering(429, { errors: [{ message: 'Too many' }] });
    const err = (await errorOf(client)) as RateLimitError;
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err.retryAfterMs).toBe(LIMIT_FALLBACK_MS);
  });

  it('auth by status or by error type; other GraphQL errors are provider errors naming the query', async () => {
    const byStatus = await errorOf(clientAnswering(401, { errors: [{ message: 'no' }] }).client);
    expect(classifyError(byStatus)).toBe('auth');
    const byType = await errorOf(
      clientAnswering(400, { errors: [{ message: 'x', extensions: { type: 'authentication error' } }] }).client,
    );
    expect(classifyError(byType)).toBe('auth');
    expect(byType.message).not.toContain(KEY);
    const other = await errorOf(clientAnswering(400, { errors: [{ message: 'Field "x" is unknown' }] }).client);
    expect(other).toBeInstanceOf(NonRetryableError);
    expect(classifyError(other)).toBe('provider_error');
    expect(other.message).toMatch(/query SyncTeams failed: Field "x" is unknown/);
  });
});
