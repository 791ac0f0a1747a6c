import { readFileSync } from 'node:fs';
import { DEFAULT_SCHEMA, validateSchemaName } from './db/schema.js';
import { checkPgTls, sslModeSetting, type SslMode } from './db/tls.js';
import { ValidationError } from './errors.js';
import { outboundSettings, type OutboundSettings } from './providers/kit/outbound.js';
import { SecretKey } from './secrets/key.js';

export type PostSyncDelivery = 'at-most-once' | 'exactly-once';
/** `transaction`: DATABASE_URL is a transaction-pooling PgBouncer (no session state between transactions). */
export type DbPooler = 'none' | 'transaction';

/** Settings resolved once at start; every duration in milliseconds. */
export interface ResolvedSettings {
  /** PostgreSQL URL. @default unset → embedded PGlite in `dataDir` */
  databaseUrl: string | undefined;
  /**
   * A PostgreSQL URL with session semantics — the server itself or a session-mode pooler
   * (DATABASE_DIRECT_URL): it carries the LISTEN connection and `syncrelay migrate`. @default unset →
   * DATABASE_URL, or no LISTEN at all when DATABASE_URL is a transaction pooler
   */
  databaseDirectUrl: string | undefined;
  /**
   * What DATABASE_URL points at (SYNCRELAY_DB_POOLER): `none` — the server or a session pooler;
   * `transaction` — a transaction pooler (PgBouncer pool_mode=transaction). @default none
   */
  databasePooler: DbPooler;
  /**
   * Named prepared statements on pooled connections (SYNCRELAY_DB_PREPARED_STATEMENTS).
   * @default true; false when SYNCRELAY_DB_POOLER=transaction (true is then refused)
   */
  databasePreparedStatements: boolean;
  /**
   * libpq's PGSSLMODE, the TLS mode when the database URL has no `sslmode` (src/db/tls.ts):
   * disable, require, verify-ca or verify-full. @default unset → disable
   */
  pgSslMode: SslMode | undefined;
  /**
   * libpq's PGSSLROOTCERT: the CA file (PEM) the server's certificate must chain to when the URL has
   * no `sslrootcert`; read at start; `system` for Node's trusted CAs.
   * @default unset → ~/.postgresql/root.crt if present
   */
  pgSslRootCert: string | undefined;
  /** Redis URL; `rediss://user:password@host:port/db` for TLS and an ACL user. @default unset → in-process broker */
  redisUrl: string | undefined;
  /**
   * PEM text of the CA certificate(s) a `rediss://` server must present a chain to, read at start
   * from the file REDIS_TLS_CA_FILE names. @default unset → Node's bundled CAs
   */
  redisTlsCa: string | undefined;
  /** The name a `rediss://` server's certificate must carry (REDIS_TLS_SERVERNAME). @default the URL's host */
  redisTlsServername: string | undefined;
  /**
   * PostgreSQL pool size of this process (SYNCRELAY_DB_POOL_SIZE, 1–1000). @default unset → derived
   * from the worker's concurrency for `worker` / `start` (src/worker/poolSize.ts), else 10 for
   * services and 2 for one-shot commands
   */
  dbPoolSize: number | undefined;
  /** Where the embedded database and key file live; made (or tightened to) mode 0700. @default ./.syncrelay */
  dataDir: string;
  /** @default 300 s */
  leaseMs: number;
  /** @default 3720 s */
  maxLifetimeMs: number;
  /** @default 3300 s */
  softTimeoutMs: number;
  /** @default 900 s */
  dispatchStaleMs: number;
  /** @default 8 */
  concurrencyPerBucket: number;
  /**
   * Units of one run a run_sync_unit message carries (SYNC_UNITS_PER_MESSAGE): a worker claims them
   * in one statement, each by its own CAS, and runs them side by side. @default 8
   */
  unitsPerMessage: number;
  /** @default 1000 */
  runMaxUnits: number;
  /**
   * A worker's slots one org may hold while another org's work waits (SYNC_WORKER_ORG_SHARE): a
   * fraction 0 < x ≤ 1 of the worker's concurrency, at least one slot. Alone, an org may use every
   * slot (src/worker/orgShare.ts). @default 0.5
   */
  workerOrgShare: number;
  /** @default 60 s */
  redispatchCountdownMs: number;
  /** @default 300 s */
  claimTimeoutMs: number;
  /** @default 1 */
  expiredLeaseMaxRetries: number;
  /** @default 60 s */
  expiredLeaseRetryBackoffMs: number;
  /** @default 60 s */
  reconcileIntervalMs: number;
  /** @default 100 */
  reconcileBatch: number;
  /** @default at-most-once */
  postSyncDelivery: PostSyncDelivery;
  /** @default 30 */
  outboxRetentionDays: number;
  /** Live (non-terminal) runs one integration may have; `force` cannot pile up more. @default 4 */
  integrationMaxLiveRuns: number;
  /** The synthetic provider's fault knobs (failRate, rateLimitRate, hangRate, hangMs) are accepted. @default false */
  allowFaultInjection: boolean;
  /** When set, `/metrics` requires this bearer token. @default unset → open on the listen address */
  metricsToken: string | undefined;
  /** Idempotency-Key answers older than this are pruned by the reconciler. @default 24 h */
  idempotencyRetentionMs: number;
  /**
   * Webhook deliveries for one source this close together coalesce into one run: the run a delivery
   * arms is dispatched this long after it (SYNC_WEBHOOK_DEBOUNCE_SECONDS). @default 5 s
   */
  webhookDebounceMs: number;
  /** How long a rotated-out webhook secret is still accepted (SYNC_WEBHOOK_SECRET_GRACE_SECONDS). @default 3600 s */
  webhookSecretGraceMs: number;
  /**
   * Webhook deliveries older than this are pruned by the reconciler (SYNC_WEBHOOK_DELIVERY_RETENTION_HOURS);
   * a delivery still waiting to arm a run stays until it does. @default 168 h
   */
  webhookDeliveryRetentionMs: number;
  /** Rate-limit deferrals one unit may take before it fails `rate_limit`. @default 10 */
  rateLimitMaxDeferrals: number;
  /** Deferred wait one unit may accumulate before it fails `rate_limit`. @default 7200 s */
  rateLimitMaxWaitMs: number;
  /**
   * The lag (now − watermark) a source × dataset may have and still be `fresh`, for an integration
   * without an enabled incremental or full_resync schedule (with one: twice its interval)
   * (SYNC_FRESHNESS_MAX_LAG_SECONDS). @default 86400 s
   */
  freshnessMaxLagMs: number;
  /**
   * How far every incremental window reaches back before its watermark
   * (SYNC_INCREMENTAL_OVERLAP_SECONDS). @default null: each provider's own (`Provider.incrementalOverlapMs`)
   */
  incrementalOverlapMs: number | null;
  /** Bytes of one provider answer's body; reading stops past it (SYNC_PROVIDER_MAX_RESPONSE_BYTES). @default 32 MiB */
  providerMaxResponseBytes: number;
  /** Pages one unit reads over all its listings (SYNC_UNIT_MAX_PAGES). @default 10000 */
  unitMaxPages: number;
  /** Characters of one stored text value; longer ones are cut (SYNC_STORED_TEXT_MAX_CHARS). @default 65536 */
  storedTextMaxChars: number;
  /** Bytes of one stored raw payload's JSON; larger ones become a marker (SYNC_STORED_RAW_MAX_BYTES). @default 1 MiB */
  storedRawMaxBytes: number;
  /** The PostgreSQL schema of syncrelay's tables (SYNCRELAY_SCHEMA). @default syncrelay */
  schema: string;
  /** Queue name prefix in the broker. @default the schema's name */
  queuePrefix: string;
  /**
   * The key credentials are encrypted under (SYNCRELAY_SECRET_KEY, 32 bytes in base64). Logged or
   * serialised, it shows its key id only. @default unset → credentials refused (embedded: a key file)
   */
  secretKey?: SecretKey;
  /** The key being rotated away from (SYNCRELAY_SECRET_KEY_PREVIOUS): decrypts only. @default unset */
  secretKeyPrevious?: SecretKey;
  /**
   * Where provider requests may go and how long they may take (providers/kit/outbound.ts):
   * SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS, SYNCRELAY_PROVIDER_ALLOWED_HOSTS,
   * SYNCRELAY_PROVIDER_ALLOWED_CIDRS, SYNC_PROVIDER_{CONNECT,HEADERS,BODY}_TIMEOUT_SECONDS.
   * @default https only, public addresses only; timeouts 10 s, 30 s, 60 s
   */
  providerOutbound: OutboundSettings;
}

type Env = Record<string, string | undefined>;

/** Number('  ') is 0: blank text is not a number. */
function numeric(raw: string): number {
  return raw.trim() === '' ? Number.NaN : Number(raw);
}

function seconds(env: Env, name: string, def: number, min = 0.001): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def * 1000;
  const n = numeric(raw);
  if (!Number.isFinite(n) || n < min) {
    throw new ValidationError(name, `must be a number of seconds ≥ ${min}, got ${JSON.stringify(raw)}`);
  }
  return Math.round(n * 1000);
}

/** Seconds as ms, or null when unset (the default is someone else's, e.g. each provider's). */
function optionalSeconds(env: Env, name: string, min: number): number | null {
  const raw = env[name];
  return raw === undefined || raw === '' ? null : seconds(env, name, 0, min);
}

function hours(env: Env, name: string, def: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def * 3_600_000;
  const n = numeric(raw);
  if (!Number.isFinite(n) || n < min) {
    throw new ValidationError(name, `must be a number of hours ≥ ${min}, got ${JSON.stringify(raw)}`);
  }
  return Math.round(n * 3_600_000);
}

function integer(env: Env, name: string, def: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = numeric(raw);
  if (!Number.isInteger(n) || n < min) {
    throw new ValidationError(name, `must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function bounded(env: Env, name: string, def: number, min: number, max: number): number {
  const n = integer(env, name, def, min);
  if (n > max) throw new ValidationError(name, `must be an integer from ${min} to ${max}, got ${n}`);
  return n;
}

/** An integer in [min, max], or undefined when unset (the default depends on the process). */
function optionalBounded(env: Env, name: string, min: number, max: number): number | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : bounded(env, name, min, min, max);
}

function fraction(env: Env, name: string, def: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = numeric(raw);
  if (!Number.isFinite(n) || n <= 0 || n > 1) {
    throw new ValidationError(name, `must be a number greater than 0 and at most 1, got ${JSON.stringify(raw)}`);
  }
  return n;
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch (cause) {
    // A password may be in it: only what precedes `//` and follows the last `@` is echoed.
    const shown = raw.replace(/\/\/.*@/s, '//***@');
    throw new ValidationError(name, `is not a URL: ${JSON.stringify(shown)}`, { cause });
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ValidationError(name, `must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return raw;
}

/** The text of the file `name` points at, read now; a file that cannot be read is refused naming the setting. */
function fileText(env: Env, name: string): string | undefined {
  const path = env[name];
  if (path === undefined || path === '') return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ValidationError(name, `cannot read ${JSON.stringify(path)} (${code})`, { cause });
  }
}

/** REDIS_TLS_* apply to `rediss://` only: set for a plain URL they would silently do nothing. */
function redisTls(env: Env, redisUrl: string | undefined): { ca?: string; servername?: string } {
  for (const name of ['REDIS_TLS_CA_FILE', 'REDIS_TLS_SERVERNAME']) {
    if (env[name] && !redisUrl?.toLowerCase().startsWith('rediss:')) {
      throw new ValidationError(name, 'is set, but REDIS_URL does not use rediss: (TLS)');
    }
  }
  const ca = fileText(env, 'REDIS_TLS_CA_FILE');
  if (ca !== undefined && !ca.includes('-----BEGIN CERTIFICATE-----')) {
    throw new ValidationError(
      'REDIS_TLS_CA_FILE',
      `holds no PEM certificate: ${JSON.stringify(env.REDIS_TLS_CA_FILE)}`,
    );
  }
  return { ca, servername: env.REDIS_TLS_SERVERNAME || undefined };
}

function flag(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new ValidationError(name, `must be true or false, got ${JSON.stringify(raw)}`);
}

function secret(env: Env, name: string, minLength: number): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < minLength || /\s/.test(raw)) {
    // The value itself is never echoed: it is a secret.
    throw new ValidationError(name, `must be at least ${minLength} characters without white space`);
  }
  return raw;
}

function secretKey(env: Env, name: string): SecretKey | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  try {
    return SecretKey.fromBase64(raw, name);
  } catch (cause) {
    // The value itself is never echoed: it is a secret.
    throw new ValidationError(name, 'must be 32 bytes in base64 (e.g. `openssl rand -base64 32`)', { cause });
  }
}

function delivery(env: Env): PostSyncDelivery {
  const raw = env.SYNC_POST_SYNC_DELIVERY;
  if (raw === undefined || raw === '') return 'at-most-once';
  if (raw === 'at-most-once' || raw === 'exactly-once') return raw;
  throw new ValidationError(
    'SYNC_POST_SYNC_DELIVERY',
    `must be at-most-once or exactly-once, got ${JSON.stringify(raw)}`,
  );
}

function pooler(env: Env): DbPooler {
  const raw = env.SYNCRELAY_DB_POOLER;
  if (raw === undefined || raw === '') return 'none';
  if (raw === 'none' || raw === 'transaction') return raw;
  throw new ValidationError('SYNCRELAY_DB_POOLER', `must be none or transaction, got ${JSON.stringify(raw)}`);
}

/** Prepared statements: on by default, off behind a transaction pooler, where asking for them is refused. */
function preparedStatements(env: Env, pooled: DbPooler): boolean {
  const name = 'SYNCRELAY_DB_PREPARED_STATEMENTS';
  const raw = env[name];
  if (raw === undefined || raw === '') return pooled !== 'transaction';
  const on = flag(env, name);
  if (on && pooled === 'transaction') {
    throw new ValidationError(
      name,
      'cannot be true with SYNCRELAY_DB_POOLER=transaction: a transaction pooler does not keep prepared statements',
    );
  }
  return on;
}

/** Reads and validates the settings of SPEC §10; a bad value throws naming the setting. */
export function loadSettings(env: Env = process.env, overrides: Partial<ResolvedSettings> = {}): ResolvedSettings {
  const redisUrl = url(env, 'REDIS_URL', ['redis:', 'rediss:']);
  const tls = redisTls(env, redisUrl);
  const settings: ResolvedSettings = {
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databaseDirectUrl: url(env, 'DATABASE_DIRECT_URL', ['postgres:', 'postgresql:']),
    databasePooler: pooler(env),
    databasePreparedStatements: preparedStatements(env, pooler(env)),
    pgSslMode: sslModeSetting(env.PGSSLMODE),
    pgSslRootCert: env.PGSSLROOTCERT || undefined,
    redisUrl,
    redisTlsCa: tls.ca,
    redisTlsServername: tls.servername,
    dbPoolSize: optionalBounded(env, 'SYNCRELAY_DB_POOL_SIZE', 1, 1000),
    dataDir: env.SYNCRELAY_DATA_DIR || './.syncrelay',
    leaseMs: seconds(env, 'SYNC_UNIT_RUNNING_LEASE_SECONDS', 300),
    maxLifetimeMs: seconds(env, 'SYNC_UNIT_MAX_LIFETIME_SECONDS', 3720),
    softTimeoutMs: seconds(env, 'SYNC_UNIT_SOFT_TIMEOUT_SECONDS', 3300),
    dispatchStaleMs: seconds(env, 'SYNC_UNIT_DISPATCH_STALE_SECONDS', 900),
    concurrencyPerBucket: integer(env, 'SYNC_UNIT_CONCURRENCY_PER_BUCKET', 8, 1),
    unitsPerMessage: bounded(env, 'SYNC_UNITS_PER_MESSAGE', 8, 1, 64),
    runMaxUnits: integer(env, 'SYNC_RUN_MAX_UNITS', 1000, 1),
    workerOrgShare: fraction(env, 'SYNC_WORKER_ORG_SHARE', 0.5),
    redispatchCountdownMs: seconds(env, 'SYNC_DISPATCH_REDISPATCH_COUNTDOWN', 60),
    claimTimeoutMs: seconds(env, 'SYNC_OUTBOX_CLAIM_TIMEOUT_SECONDS', 300),
    expiredLeaseMaxRetries: integer(env, 'SYNC_UNIT_EXPIRED_LEASE_MAX_RETRIES', 1, 0),
    expiredLeaseRetryBackoffMs: seconds(env, 'SYNC_UNIT_EXPIRED_LEASE_RETRY_BACKOFF_SECONDS', 60, 0),
    reconcileIntervalMs: seconds(env, 'SYNC_RECONCILE_INTERVAL_SECONDS', 60),
    reconcileBatch: integer(env, 'SYNC_RECONCILE_BATCH', 100, 1),
    postSyncDelivery: delivery(env),
    outboxRetentionDays: integer(env, 'SYNC_OUTBOX_RETENTION_DAYS', 30, 0),
    integrationMaxLiveRuns: integer(env, 'SYNC_INTEGRATION_MAX_LIVE_RUNS', 4, 1),
    allowFaultInjection: flag(env, 'SYNCRELAY_ALLOW_FAULT_INJECTION'),
    metricsToken: secret(env, 'SYNCRELAY_METRICS_TOKEN', 16),
    idempotencyRetentionMs: hours(env, 'SYNC_IDEMPOTENCY_RETENTION_HOURS', 24),
    webhookDebounceMs: seconds(env, 'SYNC_WEBHOOK_DEBOUNCE_SECONDS', 5, 0),
    webhookSecretGraceMs: seconds(env, 'SYNC_WEBHOOK_SECRET_GRACE_SECONDS', 3600, 0),
    webhookDeliveryRetentionMs: hours(env, 'SYNC_WEBHOOK_DELIVERY_RETENTION_HOURS', 168),
    rateLimitMaxDeferrals: integer(env, 'SYNC_RATE_LIMIT_MAX_DEFERRALS', 10, 0),
    rateLimitMaxWaitMs: seconds(env, 'SYNC_RATE_LIMIT_MAX_WAIT_SECONDS', 7200, 0),
    freshnessMaxLagMs: seconds(env, 'SYNC_FRESHNESS_MAX_LAG_SECONDS', 86_400),
    incrementalOverlapMs: optionalSeconds(env, 'SYNC_INCREMENTAL_OVERLAP_SECONDS', 0),
    providerMaxResponseBytes: integer(env, 'SYNC_PROVIDER_MAX_RESPONSE_BYTES', 32 * 1024 * 1024, 1024),
    unitMaxPages: integer(env, 'SYNC_UNIT_MAX_PAGES', 10_000, 1),
    storedTextMaxChars: integer(env, 'SYNC_STORED_TEXT_MAX_CHARS', 65_536, 256),
    storedRawMaxBytes: integer(env, 'SYNC_STORED_RAW_MAX_BYTES', 1024 * 1024, 1024),
    schema: validateSchemaName(env.SYNCRELAY_SCHEMA || DEFAULT_SCHEMA),
    queuePrefix: '',
    secretKey: secretKey(env, 'SYNCRELAY_SECRET_KEY'),
    secretKeyPrevious: secretKey(env, 'SYNCRELAY_SECRET_KEY_PREVIOUS'),
    providerOutbound: outboundSettings(env),
    ...overrides,
  };
  // Two installs in one Redis never share queues: the prefix follows the schema unless set.
  if (!settings.queuePrefix) settings.queuePrefix = env.SYNCRELAY_QUEUE_PREFIX || settings.schema;
  validateSchemaName(settings.schema);
  if (settings.databaseDirectUrl && !settings.databaseUrl) {
    throw new ValidationError('DATABASE_DIRECT_URL', 'needs DATABASE_URL (it is used beside it, never alone)');
  }
  checkPgTls(settings);
  if (settings.leaseMs > settings.maxLifetimeMs) {
    throw new ValidationError('SYNC_UNIT_RUNNING_LEASE_SECONDS', 'must not exceed SYNC_UNIT_MAX_LIFETIME_SECONDS');
  }
  return settings;
}

/** Heartbeat period: max(1, min(60, lease/4)) seconds, but never longer than a third of the lease. */
export function heartbeatIntervalMs(leaseMs: number): number {
  const spec = Math.max(1000, Math.min(60_000, leaseMs / 4));
  return Math.min(spec, Math.max(50, Math.floor(leaseMs / 3)));
}
