import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { startApiServer, type RunningApiServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { systemClock } from '../../src/clock.js';
import { loadSettings } from '../../src/config.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { waitFor } from '../helpers/engine.js';
import { createTestDatabase, REDIS_URL, type TestDatabase } from '../helpers/pg.js';

const ORG = 'org-shared';

interface Install {
  schema: string;
  engine: Engine;
  server: RunningApiServer;
  token: string;
  integrationId: string;
}

/**
 * One install of syncrelay: settings from the environment a process would have (its own
 * SYNCRELAY_SCHEMA, the shared DATABASE_URL and REDIS_URL, no queue prefix: it follows the schema).
 */
async function openInstall(t: TestDatabase, schema: string): Promise<Install> {
  const settings = loadSettings({
    DATABASE_URL: t.url,
    REDIS_URL,
    SYNCRELAY_SCHEMA: schema,
    SYNC_UNIT_RUNNING_LEASE_SECONDS: '2',
    SYNC_RECONCILE_INTERVAL_SECONDS: '1',
    SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '1',
  });
  expect(settings.queuePrefix).toBe(schema);
  const engine = await Engine.open({ settings, logger: silentLogger(), poolSize: 4 });
  const server = await startApiServer({
    engine,
    host: '127.0.0.1',
    port: 0,
    rateLimit: { max: 1_000_000, timeWindowMs: 60_000 },
  });
  const { token } = await createApiToken(engine.db, systemClock, { orgId: ORG, scopes: ['admin'], name: 'admin' });
  // The same org, integration name and source in both installs.
  const integ = await engine.createIntegration({
    orgId: ORG,
    provider: 'synthetic',
    name: 'same name',
    sources: ['s1'],
    datasets: ['teams', 'work-items'],
    config: { itemsPerDay: 1, latencyMs: 1 },
  });
  engine.startWorker({ concurrency: 4 });
  await engine.startReconciler();
  return { schema, engine, server, token, integrationId: integ.id };
}

function trigger(i: Install) {
  return i.engine.trigger({
    orgId: ORG,
    integrationId: i.integrationId,
    mode: 'backfill',
    triggeredBy: 'backfill',
    since: new Date('2026-01-01T00:00:00Z'),
    before: new Date('2026-01-15T00:00:00Z'),
  });
}

async function runStatus(i: Install, runId: string): Promise<string | undefined> {
  const { rows } = await i.engine.db.query<{ status: string }>(
    `SELECT status FROM ${i.engine.db.schema.sync_runs} WHERE id = $1`,
    [runId],
  );
  return rows[0]?.status;
}

interface Answer {
  status: number;
  body: { items?: { id: string }[]; run?: { status: string } };
}

async function get(i: Install, path: string, token = i.token): Promise<Answer> {
  const res = await fetch(`${i.server.url}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Answer['body'] };
}

describe('two installs with different schemas in one database and one Redis', () => {
  let t: TestDatabase | undefined;
  const installs: Install[] = [];
  let listener: pg.Client | undefined;
  afterEach(async () => {
    for (const i of installs.splice(0)) {
      await i.server.close();
      await i.engine.close();
    }
    await listener?.end();
    listener = undefined;
    await t?.drop();
  });

  it('run side by side without seeing each other’s runs, outbox rows, notifications or queues', async () => {
    t = await createTestDatabase();
    const tag = randomBytes(3).toString('hex');
    const a = await openInstall(t, `iso_a_${tag}`);
    installs.push(a);
    const b = await openInstall(t, `iso_b_${tag}`);
    installs.push(b);

    // Notifications: each install's channel carries only its own commits.
    listener = new pg.Client({ connectionString: t.url });
    await listener.connect();
    const heard: Record<string, number> = { [a.engine.db.schema.channel]: 0, [b.engine.db.schema.channel]: 0 };
    listener.on('notification', (n) => (heard[n.channel] = (heard[n.channel] ?? 0) + 1));
    await listener.query(`LISTEN ${a.engine.db.schema.channel}`);
    await listener.query(`LISTEN ${b.engine.db.schema.channel}`);

    const runA = await trigger(a);
    await waitFor(async () => (await runStatus(a, runA.syncRunId)) === 'success');
    expect(heard[a.engine.db.schema.channel]).toBeGreaterThan(0);
    expect(heard[b.engine.db.schema.channel]).toBe(0);

    const runB = await trigger(b);
    await waitFor(async () => (await runStatus(b, runB.syncRunId)) === 'success');

    // Neither install's tables hold the other's rows.
    for (const [self, other, otherRun] of [
      [a, b, runB.syncRunId],
      [b, a, runA.syncRunId],
    ] as const) {
      expect(await runStatus(self, otherRun)).toBeUndefined();
      const s = self.engine.db.schema;
      const { rows } = await self.engine.db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM ${s.sync_dispatch_outbox} WHERE sync_run_id = $1)
              + (SELECT count(*) FROM ${s.sync_run_units} WHERE sync_run_id = $1)::int AS n`,
        [otherRun],
      );
      expect(Number(rows[0]!.n)).toBe(0);
      // The API: the other install's run is unknown; the other install's token is not a token here.
      expect((await get(self, `/sync-runs/${otherRun}`)).status).toBe(404);
      expect((await get(self, '/integrations', other.token)).status).toBe(401);
      const own = await get(self, '/integrations');
      expect(own.body.items?.map((x) => x.id)).toEqual([self.integrationId]);
      // Each reconciler recorded its passes in its own install.
      const passes = await self.engine.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s.reconciler_passes}`);
      expect(passes.rows[0]!.n).toBeGreaterThan(0);
    }
    expect((await get(a, `/sync-runs/${runA.syncRunId}`)).body.run?.status).toBe('success');

    // Broker messages: each install's queue keys sit under its own prefix (its schema's name).
    const redis = new Redis(REDIS_URL);
    try {
      for (const i of [a, b]) expect((await redis.keys(`${i.schema}:*`)).length).toBeGreaterThan(0);
      for (const i of installs.splice(0)) {
        await i.server.close();
        await i.engine.close();
        const keys = await redis.keys(`${i.schema}:*`);
        if (keys.length > 0) await redis.del(...keys);
      }
    } finally {
      redis.disconnect();
    }
  });
});
