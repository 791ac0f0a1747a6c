/** A real API server on 127.0.0.1 (port 0) over a cloned PostgreSQL database and real Redis. */
import { BullMqBroker } from '../../src/broker/bullmq.js';
import type { Broker } from '../../src/broker/types.js';
import { systemClock } from '../../src/clock.js';
import type { ResolvedSettings } from '../../src/config.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { startApiServer, type ApiServerOptions, type RunningApiServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import type { Db } from '../../src/db/types.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';

export const ORG_A = 'org-a';
export const ORG_B = 'org-b';

export interface Tokens {
  admin: string;
  read: string;
  trigger: string;
  /** Admin of the other org. */
  foreign: string;
}

export interface ApiHarness {
  url: string;
  db: Db;
  t: TestDatabase;
  engine: Engine;
  server: RunningApiServer;
  tokens: Tokens;
  token(orgId: string, scopes: string[]): Promise<string>;
  close(): Promise<void>;
}

/**
 * Opens an engine on its own database with `broker` (real Redis by default) and serves the API.
 * `settings` override the test settings (which allow fault injection).
 */
export async function openApiHarness(
  opts: {
    broker?: Broker;
    server?: Partial<Omit<ApiServerOptions, 'engine'>>;
    settings?: Partial<ResolvedSettings>;
  } = {},
): Promise<ApiHarness> {
  const t = await createTestDatabase();
  const broker = opts.broker ?? new BullMqBroker({ redisUrl: REDIS_URL, prefix: uniquePrefix('api') });
  const engine = await Engine.open({
    settings: testSettings(opts.settings),
    db: t.db,
    broker,
    logger: silentLogger(),
    migrate: false,
  });
  const server = await startApiServer({
    engine,
    host: '127.0.0.1',
    port: 0,
    rateLimit: { max: 1_000_000, timeWindowMs: 60_000 },
    ...opts.server,
  });
  const token = async (orgId: string, scopes: string[]) =>
    (await createApiToken(t.db, systemClock, { orgId, scopes, name: scopes.join('+') })).token;
  const tokens: Tokens = {
    admin: await token(ORG_A, ['admin']),
    read: await token(ORG_A, ['read']),
    trigger: await token(ORG_A, ['trigger']),
    foreign: await token(ORG_B, ['admin']),
  };
  return {
    url: server.url,
    db: t.db,
    t,
    engine,
    server,
    tokens,
    token,
    async close() {
      await server.close();
      await engine.close();
      await broker.close();
      await t.drop();
    },
  };
}

export interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON body the test reads field by field
  body: any;
  headers: Headers;
}

/** One request: a JSON body (or raw text with `raw`), a bearer token, extra headers. */
export async function call(
  base: string,
  method: string,
  path: string,
  opts: { token?: string | null; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let payload: string | undefined;
  if (opts.raw !== undefined) payload = opts.raw;
  else if (opts.body !== undefined) payload = JSON.stringify(opts.body);
  if (payload !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(`${base}${path}`, { method, headers, body: payload });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // keep the text
  }
  return { status: res.status, body, headers: res.headers };
}

/** Rows per table that an API call could write. */
export const WRITABLE_TABLES = [
  'integrations',
  'integration_credentials',
  'integration_sources',
  'integration_datasets',
  'sync_runs',
  'sync_run_units',
  'sync_dispatch_outbox',
  'job_runs',
  'idempotency_keys',
  'api_tokens',
  'sync_run_post_dispatches',
  'scheduled_jobs',
] as const;

export type TableCounts = Record<(typeof WRITABLE_TABLES)[number], number>;

export async function tableCounts(db: Db): Promise<TableCounts> {
  const { rows } = await db.query<TableCounts>(
    `SELECT ${WRITABLE_TABLES.map((t) => `(SELECT count(*)::int FROM ${db.schema.table(t)}) AS ${t}`).join(', ')}`,
  );
  return rows[0]!;
}

/** The error shape, exactly. */
export function isErrorShape(body: unknown): boolean {
  if (body === null || typeof body !== 'object') return false;
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== 'error') return false;
  const e = (body as { error: unknown }).error as Record<string, unknown> | null;
  return (
    e !== null &&
    typeof e === 'object' &&
    Object.keys(e).sort().join(',') === 'code,details,message' &&
    typeof e.code === 'string' &&
    typeof e.message === 'string' &&
    e.details !== null &&
    typeof e.details === 'object' &&
    !Array.isArray(e.details)
  );
}

export const SYNTHETIC = {
  provider: 'synthetic',
  name: 'Acme synthetic',
  sources: ['team-a', 'team-b'],
  datasets: ['teams', 'work-items'],
  config: { itemsPerDay: 1, latencyMs: 0 },
};
