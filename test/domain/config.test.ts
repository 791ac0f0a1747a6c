import fc from 'fast-check';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { heartbeatIntervalMs, loadSettings } from '../../src/config.js';
import { ValidationError } from '../../src/errors.js';

const S = 1000;

/** Seconds settings of SPEC §10 with their defaults, and the smallest value each accepts. */
const SECONDS = [
  ['SYNC_UNIT_RUNNING_LEASE_SECONDS', 'leaseMs', 300, false],
  ['SYNC_UNIT_MAX_LIFETIME_SECONDS', 'maxLifetimeMs', 3720, false],
  ['SYNC_UNIT_SOFT_TIMEOUT_SECONDS', 'softTimeoutMs', 3300, false],
  ['SYNC_UNIT_DISPATCH_STALE_SECONDS', 'dispatchStaleMs', 900, false],
  ['SYNC_DISPATCH_REDISPATCH_COUNTDOWN', 'redispatchCountdownMs', 60, false],
  ['SYNC_OUTBOX_CLAIM_TIMEOUT_SECONDS', 'claimTimeoutMs', 300, false],
  ['SYNC_UNIT_EXPIRED_LEASE_RETRY_BACKOFF_SECONDS', 'expiredLeaseRetryBackoffMs', 60, true],
  ['SYNC_RECONCILE_INTERVAL_SECONDS', 'reconcileIntervalMs', 60, false],
  ['SYNC_RATE_LIMIT_MAX_WAIT_SECONDS', 'rateLimitMaxWaitMs', 7200, true],
  ['SYNC_FRESHNESS_MAX_LAG_SECONDS', 'freshnessMaxLagMs', 86_400, false],
] as const;

const INTEGERS = [
  ['SYNC_UNIT_CONCURRENCY_PER_BUCKET', 'concurrencyPerBucket', 8, 1],
  ['SYNC_RUN_MAX_UNITS', 'runMaxUnits', 1000, 1],
  ['SYNC_UNIT_EXPIRED_LEASE_MAX_RETRIES', 'expiredLeaseMaxRetries', 1, 0],
  ['SYNC_RECONCILE_BATCH', 'reconcileBatch', 100, 1],
  ['SYNC_OUTBOX_RETENTION_DAYS', 'outboxRetentionDays', 30, 0],
  ['SYNC_RATE_LIMIT_MAX_DEFERRALS', 'rateLimitMaxDeferrals', 10, 0],
  ['SYNC_UNITS_PER_MESSAGE', 'unitsPerMessage', 8, 1],
] as const;

const NOT_NUMBERS = ['abc', 'NaN', 'Infinity', '-Infinity', '10s', '1,5', ' ', '\t', 'true', '[]', '{}'];

function expectInvalid(env: Record<string, string>, setting: string): void {
  let caught: unknown;
  try {
    loadSettings(env);
  } catch (err) {
    caught = err;
  }
  expect(caught, `${setting}=${JSON.stringify(env[setting])} must be refused`).toBeInstanceOf(ValidationError);
  const err = caught as ValidationError;
  expect(err.field).toBe(setting);
  expect(err.message).toContain(setting);
  expect(err.code).toBe('invalid_input');
}

describe('loadSettings defaults (SPEC §10, in milliseconds)', () => {
  it('an empty environment yields the SPEC defaults', () => {
    expect(loadSettings({})).toEqual({
      databaseUrl: undefined,
      databaseDirectUrl: undefined,
      databasePooler: 'none',
      databasePreparedStatements: true,
      pgSslMode: undefined,
      pgSslRootCert: undefined,
      redisUrl: undefined,
      redisTlsCa: undefined,
      redisTlsServername: undefined,
      dbPoolSize: undefined,
      dataDir: './.syncrelay',
      leaseMs: 300 * S,
      maxLifetimeMs: 3720 * S,
      softTimeoutMs: 3300 * S,
      dispatchStaleMs: 900 * S,
      concurrencyPerBucket: 8,
      unitsPerMessage: 8,
      runMaxUnits: 1000,
      redispatchCountdownMs: 60 * S,
      claimTimeoutMs: 300 * S,
      expiredLeaseMaxRetries: 1,
      expiredLeaseRetryBackoffMs: 60 * S,
      reconcileIntervalMs: 60 * S,
      reconcileBatch: 100,
      postSyncDelivery: 'at-most-once',
      outboxRetentionDays: 30,
      integrationMaxLiveRuns: 4,
      allowFaultInjection: false,
      metricsToken: undefined,
      idempotencyRetentionMs: 24 * 3_600_000,
      webhookDebounceMs: 5_000,
      webhookSecretGraceMs: 3_600_000,
      webhookDeliveryRetentionMs: 168 * 3_600_000,
      rateLimitMaxDeferrals: 10,
      rateLimitMaxWaitMs: 7200 * S,
      freshnessMaxLagMs: 86_400 * S,
      schema: 'syncrelay',
      queuePrefix: 'syncrelay',
      providerOutbound: {
        allowInsecure: false,
        allowedHosts: [],
        allowedCidrs: [],
        connectTimeoutMs: 10 * S,
        headersTimeoutMs: 30 * S,
        bodyTimeoutMs: 60 * S,
      },
      providerMaxResponseBytes: 32 * 1024 * 1024,
      storedTextMaxChars: 65_536,
      storedRawMaxBytes: 1024 * 1024,
      unitMaxPages: 10_000,
      workerOrgShare: 0.5,
      incrementalOverlapMs: null,
    });
  });

  it('an empty string counts as unset', () => {
    const env = Object.fromEntries([...SECONDS, ...INTEGERS].map(([name]) => [name, '']));
    expect(loadSettings({ ...env, DATABASE_URL: '', REDIS_URL: '', SYNC_POST_SYNC_DELIVERY: '' })).toEqual(
      loadSettings({}),
    );
  });

  it('reads every setting and converts seconds to milliseconds', () => {
    const s = loadSettings({
      DATABASE_URL: 'postgres://u@db:5432/x',
      REDIS_URL: 'rediss://cache:6380',
      SYNC_UNIT_RUNNING_LEASE_SECONDS: '2',
      SYNC_RECONCILE_INTERVAL_SECONDS: '0.5',
      SYNC_UNIT_EXPIRED_LEASE_RETRY_BACKOFF_SECONDS: '0',
      SYNC_UNIT_EXPIRED_LEASE_MAX_RETRIES: '0',
      SYNC_UNIT_CONCURRENCY_PER_BUCKET: '3',
      SYNC_POST_SYNC_DELIVERY: 'exactly-once',
      SYNC_OUTBOX_RETENTION_DAYS: '0',
    });
    expect(s).toMatchObject({
      databaseUrl: 'postgres://u@db:5432/x',
      redisUrl: 'rediss://cache:6380',
      leaseMs: 2000,
      reconcileIntervalMs: 500,
      expiredLeaseRetryBackoffMs: 0,
      expiredLeaseMaxRetries: 0,
      concurrencyPerBucket: 3,
      postSyncDelivery: 'exactly-once',
      outboxRetentionDays: 0,
    });
    expect(loadSettings({ DATABASE_URL: 'postgresql://h/d', REDIS_URL: 'redis://h' }).databaseUrl).toBe(
      'postgresql://h/d',
    );
  });

  it('any positive number of seconds is accepted and converted', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SECONDS), fc.integer({ min: 1, max: 3720 }), ([name, key], n) => {
        const env = { SYNC_UNIT_RUNNING_LEASE_SECONDS: '1', [name]: String(n) };
        expect(loadSettings(env)[key]).toBe(n * S);
      }),
    );
  });

  it('overrides win over the environment', () => {
    expect(loadSettings({ SYNC_UNIT_RUNNING_LEASE_SECONDS: '10' }, { leaseMs: 2000 }).leaseMs).toBe(2000);
  });
});

describe('loadSettings rejects bad values naming the setting', () => {
  it('REDIS_TLS_CA_FILE is read at start; a missing file, a non-PEM file or a plain redis:// URL is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'syncrelay-config-'));
    try {
      const ca = join(dir, 'ca.crt');
      writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
      const tls = { REDIS_URL: 'rediss://syncrelay:s3cret@cache:6380/2', REDIS_TLS_CA_FILE: ca };
      expect(loadSettings({ ...tls, REDIS_TLS_SERVERNAME: 'cache.internal' })).toMatchObject({
        redisTlsCa: readFileSync(ca, 'utf8'),
        redisTlsServername: 'cache.internal',
      });
      expectInvalid({ ...tls, REDIS_TLS_CA_FILE: join(dir, 'missing.crt') }, 'REDIS_TLS_CA_FILE');
      writeFileSync(join(dir, 'empty.crt'), 'not a certificate');
      expectInvalid({ ...tls, REDIS_TLS_CA_FILE: join(dir, 'empty.crt') }, 'REDIS_TLS_CA_FILE');
      expectInvalid({ ...tls, REDIS_URL: 'redis://cache:6379' }, 'REDIS_TLS_CA_FILE');
      expectInvalid({ REDIS_URL: 'redis://cache:6379', REDIS_TLS_SERVERNAME: 'cache' }, 'REDIS_TLS_SERVERNAME');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a URL that does not parse is echoed without its password', () => {
    const err = (() => {
      try {
        loadSettings({ REDIS_URL: 'rediss://user:pa ss#word@cache:notaport' });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toContain('REDIS_URL');
    expect(err?.message).not.toContain('pa ss');
  });

  it('SYNCRELAY_DB_POOL_SIZE takes 1 to 1000; unset leaves the default to the process', () => {
    expect(loadSettings({ SYNCRELAY_DB_POOL_SIZE: '1' }).dbPoolSize).toBe(1);
    expect(loadSettings({ SYNCRELAY_DB_POOL_SIZE: '1000' }).dbPoolSize).toBe(1000);
    for (const v of ['0', '1001', '2.5', 'ten', '-3'])
      expectInvalid({ SYNCRELAY_DB_POOL_SIZE: v }, 'SYNCRELAY_DB_POOL_SIZE');
  });

  it.each(
    SECONDS.flatMap(([name, , , zeroOk]) =>
      [...NOT_NUMBERS, '-1', '-0.5', ...(zeroOk ? [] : ['0'])].map((v) => [name, v]),
    ),
  )('%s=%j', (name, value) => expectInvalid({ [name]: value }, name));

  it.each(INTEGERS.flatMap(([name, , , min]) => [...NOT_NUMBERS, '-1', '1.5', String(min - 1)].map((v) => [name, v])))(
    '%s=%j',
    (name, value) => expectInvalid({ [name]: value }, name),
  );

  it('SYNC_UNITS_PER_MESSAGE is bounded from above (64), naming the setting', () => {
    expect(loadSettings({ SYNC_UNITS_PER_MESSAGE: '64' }).unitsPerMessage).toBe(64);
    expectInvalid({ SYNC_UNITS_PER_MESSAGE: '65' }, 'SYNC_UNITS_PER_MESSAGE');
  });

  it('any negative number is refused for every numeric setting', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...[...SECONDS, ...INTEGERS].map(([name]) => name)),
        fc.double({ min: -1e9, max: -1e-3, noNaN: true }),
        (name, v) => expectInvalid({ [name]: String(v) }, name),
      ),
    );
  });

  it('any text that is not a number is refused', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...[...SECONDS, ...INTEGERS].map(([name]) => name)),
        fc.string({ minLength: 1 }).filter((s) => s.trim() === '' || !Number.isFinite(Number(s))),
        (name, v) => expectInvalid({ [name]: v }, name),
      ),
    );
  });

  it.each([
    ['DATABASE_URL', 'mysql://h/d'],
    ['DATABASE_URL', 'http://h/d'],
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_URL', '/var/run/postgresql'],
    ['REDIS_URL', 'http://h:6379'],
    ['REDIS_URL', 'postgres://h/d'],
    ['REDIS_URL', 'localhost:6379'],
  ])('%s=%j', (name, value) => expectInvalid({ [name]: value }, name));

  it.each(['exactly_once', 'at-least-once', 'EXACTLY-ONCE', ' '])('SYNC_POST_SYNC_DELIVERY=%j', (value) =>
    expectInvalid({ SYNC_POST_SYNC_DELIVERY: value }, 'SYNC_POST_SYNC_DELIVERY'),
  );

  it('a lease longer than the unit lifetime is refused', () => {
    expectInvalid(
      { SYNC_UNIT_RUNNING_LEASE_SECONDS: '600', SYNC_UNIT_MAX_LIFETIME_SECONDS: '300' },
      'SYNC_UNIT_RUNNING_LEASE_SECONDS',
    );
  });

  it('a transaction pooler turns prepared statements off, and refuses them when asked for', () => {
    const pooled = { DATABASE_URL: 'postgres://u@pgbouncer:6432/x', SYNCRELAY_DB_POOLER: 'transaction' };
    expect(loadSettings(pooled)).toMatchObject({ databasePooler: 'transaction', databasePreparedStatements: false });
    expect(loadSettings({ ...pooled, SYNCRELAY_DB_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements).toBe(
      false,
    );
    expect(loadSettings({ SYNCRELAY_DB_PREPARED_STATEMENTS: 'false' }).databasePreparedStatements).toBe(false);
    expect(loadSettings({ SYNCRELAY_DB_POOLER: 'none' }).databasePreparedStatements).toBe(true);
    expectInvalid({ ...pooled, SYNCRELAY_DB_PREPARED_STATEMENTS: 'true' }, 'SYNCRELAY_DB_PREPARED_STATEMENTS');
  });

  it.each(['session', 'TRANSACTION', 'pgbouncer', '1'])('SYNCRELAY_DB_POOLER=%j is refused', (value) =>
    expectInvalid({ SYNCRELAY_DB_POOLER: value }, 'SYNCRELAY_DB_POOLER'),
  );

  it.each(['yes', '1', 'on'])('SYNCRELAY_DB_PREPARED_STATEMENTS=%j is refused', (value) =>
    expectInvalid({ SYNCRELAY_DB_PREPARED_STATEMENTS: value }, 'SYNCRELAY_DB_PREPARED_STATEMENTS'),
  );

  it('DATABASE_DIRECT_URL is read beside DATABASE_URL, checked as a URL, and refused alone', () => {
    const direct = 'postgres://u:pw@db:5432/x';
    expect(loadSettings({ DATABASE_URL: 'postgres://u@pgbouncer:6432/x', DATABASE_DIRECT_URL: direct })).toMatchObject({
      databaseDirectUrl: direct,
    });
    expectInvalid({ DATABASE_URL: 'postgres://h/x', DATABASE_DIRECT_URL: 'mysql://h/x' }, 'DATABASE_DIRECT_URL');
    expectInvalid({ DATABASE_DIRECT_URL: direct }, 'DATABASE_DIRECT_URL');
  });

  it('PGSSLMODE and PGSSLROOTCERT are read as libpq reads them; what cannot be honoured is refused', () => {
    const url = 'postgres://u:pw@db:5432/x';
    expect(loadSettings({ DATABASE_URL: url, PGSSLMODE: 'verify-full', PGSSLROOTCERT: '/ca.pem' })).toMatchObject({
      pgSslMode: 'verify-full',
      pgSslRootCert: '/ca.pem',
    });
    for (const mode of ['prefer', 'allow', 'VERIFY-FULL', 'no-verify']) expectInvalid({ PGSSLMODE: mode }, 'PGSSLMODE');
    expectInvalid({ DATABASE_URL: url, PGSSLROOTCERT: '/ca.pem' }, 'PGSSLROOTCERT');
    expectInvalid({ DATABASE_URL: `${url}?sslmode=prefer` }, 'DATABASE_URL sslmode');
    expectInvalid({ DATABASE_URL: url, DATABASE_DIRECT_URL: `${url}?sslmode=verify` }, 'DATABASE_DIRECT_URL sslmode');
  });

  it('keeps the parse error as the cause of a malformed URL', () => {
    try {
      loadSettings({ DATABASE_URL: '::' });
      expect.unreachable();
    } catch (err) {
      expect((err as Error).cause).toBeInstanceOf(TypeError);
    }
  });
});

describe('heartbeatIntervalMs', () => {
  it('is a quarter of the lease between 1 s and 60 s for production-sized leases', () => {
    expect(heartbeatIntervalMs(300 * S)).toBe(60 * S);
    expect(heartbeatIntervalMs(120 * S)).toBe(30 * S);
    expect(heartbeatIntervalMs(3600 * S)).toBe(60 * S);
  });

  it('beats at least three times per lease even for a 2 s test lease', () => {
    expect(heartbeatIntervalMs(2 * S)).toBe(666);
  });

  it('is positive, at most 60 s and at most a third of the lease', () => {
    fc.assert(
      fc.property(fc.integer({ min: 150, max: 10_000_000 }), (lease) => {
        const hb = heartbeatIntervalMs(lease);
        expect(hb).toBeGreaterThan(0);
        expect(hb).toBeLessThanOrEqual(60 * S);
        expect(hb).toBeLessThanOrEqual(lease / 3);
      }),
    );
  });
});
