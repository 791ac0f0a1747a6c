/**
 * A whole install for end-to-end tests: the test's own database (cloned from the migrated template),
 * BullMQ on a queue prefix of its own, an engine logging at trace into memory, the API server on
 * 127.0.0.1 with an admin token, a worker and the reconciler; every API answer kept for leak scans.
 */
import { startApiServer, type RunningApiServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { BullMqBroker } from '../../src/broker/bullmq.js';
import { systemClock } from '../../src/clock.js';
import type { ResolvedSettings } from '../../src/config.js';
import type { Db } from '../../src/db/types.js';
import { Engine } from '../../src/engine.js';
import type { ProviderRegistry } from '../../src/providers/registry.js';
import { SecretKey } from '../../src/secrets/key.js';
import { testSettings, waitFor } from './engine.js';
import { memoryLogger, ResponseLog } from './leakScan.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from './pg.js';

export interface ApiStackOptions {
  /** The org the admin API token belongs to. */
  orgId: string;
  /** Names the queue prefix and the API token. */
  tag: string;
  /** The providers and sinks, over the test's database. */
  registry: (db: Db) => ProviderRegistry;
  /** @default 6 */
  poolSize?: number;
  /** Worker concurrency. @default the engine's */
  concurrency?: number;
  /** Settings over `testSettings` (e.g. a short `webhookDebounceMs`). @default none */
  settings?: Partial<ResolvedSettings>;
}

export type ApiAnswer = Awaited<ReturnType<ResponseLog['call']>>;

export interface ApiStack {
  t: TestDatabase;
  prefix: string;
  engine: Engine;
  server: RunningApiServer;
  log: ReturnType<typeof memoryLogger>;
  responses: ResponseLog;
  /** Calls the API as the admin token (JSON body), keeping the answer. */
  send(method: string, path: string, body?: unknown): Promise<ApiAnswer>;
  /** Safe to call after a failed open and twice. */
  close(): Promise<void>;
}

export async function openApiStack(o: ApiStackOptions): Promise<ApiStack> {
  const t = await createTestDatabase({ poolSize: o.poolSize ?? 6 });
  const prefix = uniquePrefix(o.tag);
  const broker = new BullMqBroker({ redisUrl: REDIS_URL, prefix });
  const log = memoryLogger('trace');
  const responses = new ResponseLog();
  let engine: Engine | undefined;
  let server: RunningApiServer | undefined;
  const close = async () => {
    await server?.close();
    await engine?.close();
    await broker.close();
    await t.drop();
  };
  try {
    engine = await Engine.open({
      settings: testSettings({
        ...o.settings,
        secretKey: SecretKey.generate(),
        queuePrefix: prefix,
        redisUrl: REDIS_URL,
      }),
      db: t.db,
      broker,
      logger: log.logger,
      registry: o.registry(t.db),
      migrate: false,
    });
    server = await startApiServer({ engine, host: '127.0.0.1', port: 0 });
    const scopes = ['admin'];
    const token = (await createApiToken(t.db, systemClock, { orgId: o.orgId, scopes, name: o.tag })).token;
    engine.startWorker(o.concurrency === undefined ? {} : { concurrency: o.concurrency });
    await engine.startReconciler({ scheduler: false });
    const url = server.url;
    const send = (method: string, path: string, body?: unknown) =>
      responses.call(`${url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    return { t, prefix, engine, server, log, responses, send, close: once(close) };
  } catch (err) {
    await close();
    throw err;
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null;
  return () => (done ??= fn());
}

/** The run's status once it has left planned and dispatching, read through the API. */
export async function runEnded(stack: Pick<ApiStack, 'send'>, runId: string, timeoutMs = 60_000): Promise<string> {
  return waitFor(
    async () => {
      const run = await stack.send('GET', `/api/v1/sync-runs/${runId}`);
      const status = (run.json as { run?: { status?: string } }).run?.status;
      return status === 'planned' || status === 'dispatching' ? null : status;
    },
    timeoutMs,
    200,
  );
}

/** Triggers an incremental run of the integration through the API; its run id (202 or the test fails). */
export async function incrementalRun(stack: Pick<ApiStack, 'send'>, integrationId: string): Promise<string> {
  const res = await stack.send('POST', `/api/v1/integrations/${integrationId}/sync`, { mode: 'incremental' });
  if (res.status !== 202) throw new Error(`POST …/sync answered ${res.status}: ${res.text}`);
  return (res.json as { sync_run_id: string }).sync_run_id;
}
