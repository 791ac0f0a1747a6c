/**
 * Behind PgBouncer in transaction pooling mode (.ci/pgbouncer.ini on 127.0.0.1:6432, started by
 * .ci/run). A statement prepared on one server connection is unknown on the next one the pooler
 * hands over: with prepared statements on, a transaction of another process interleaved with the
 * engine's statements makes them fail; with SYNCRELAY_DB_POOLER=transaction they pass. Without
 * DATABASE_DIRECT_URL there is no LISTEN: one warning at start, and runs still finish by polling;
 * with it, LISTEN goes to the server and a NOTIFY wakes the relay at once.
 */
import pg from 'pg';
import { pino, type Logger } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { loadSettings } from '../../src/config.js';
import { openDb } from '../../src/db/open.js';
import { PgDb } from '../../src/db/pg.js';
import type { Db } from '../../src/db/types.js';
import { Engine } from '../../src/engine.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const POOLER = process.env.SYNCRELAY_TEST_PG_POOLED || 'postgres://postgres@127.0.0.1:6432';
/** The pooler ignores it (auth_type any): it is here to prove no log line carries it. */
const PASSWORD = 'pooler-test-pw-5d1c';

const reachable = await answers(POOLER);
if (!reachable) console.warn(`test/db/pooler.test.ts skipped: PgBouncer is not answering on ${new URL(POOLER).host}`);

async function answers(base: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: `${base}/postgres`, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function pooledUrl(database: string): string {
  const url = new URL(`${POOLER}/${database}`);
  url.password = PASSWORD;
  return url.toString();
}

/** A pino logger whose lines land in `lines` (parsed). */
function recordingLogger(): { logger: Logger; lines: { level: number; msg: string }[]; raw: string[] } {
  const raw: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void raw.push(line) });
  return {
    logger,
    raw,
    get lines() {
      return raw.map((l) => JSON.parse(l) as { level: number; msg: string });
    },
  };
}

/** Server backends of `database` whose last statement was a LISTEN (the LISTEN connection). */
async function listeners(t: TestDatabase): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN %'",
    [t.name],
  );
  return rows[0]!.n;
}

describe.skipIf(!reachable)(`behind PgBouncer in transaction pooling mode (${new URL(POOLER).host})`, () => {
  let t: TestDatabase;
  const opened: { close(): Promise<void> }[] = [];
  beforeEach(async () => {
    t = await createTestDatabase({ poolSize: 2 });
    opened.push(t.db);
  });
  afterEach(async () => {
    for (const o of opened.splice(0).reverse()) await o.close();
    await t.drop();
  });

  /** Two engines' pools of one connection each (two processes) on the pooled URL, as `env` sets them up. */
  async function twoProcesses(env: Record<string, string>): Promise<[Db, Db]> {
    const settings = loadSettings({ DATABASE_URL: pooledUrl(t.name), ...env });
    const a = await openDb(settings, { poolSize: 1 });
    const b = await openDb(settings, { poolSize: 1 });
    opened.push(a, b);
    return [a, b];
  }

  /**
   * A statement of process A, then a transaction of process B that takes the server connection A
   * just used, and A's statement again while B's transaction is open: the pooler gives A another
   * server connection. Returns A's second outcome and B's own run of A's statement afterwards.
   */
  async function interleave(a: Db, b: Db): Promise<PromiseSettledResult<unknown>[]> {
    const text = `SELECT count(*)::int AS n FROM ${t.db.schema.sync_runs}`;
    await a.query(text);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let holding!: () => void;
    const held = new Promise<void>((r) => (holding = r));
    const other = b.transaction(async (tx) => {
      await tx.query('SELECT 1');
      holding();
      await gate;
    });
    await held;
    const again = await Promise.allSettled([a.query(text)]);
    release();
    await other;
    const third = await Promise.allSettled([b.query(text), a.query(text)]);
    return [...again, ...third];
  }

  it('with prepared statements on, statements of interleaved transactions fail: a name unknown or taken', async () => {
    const [a, b] = await twoProcesses({});
    expect((a as PgDb).pool.options.max).toBe(1);
    const outcomes = await interleave(a, b);
    const codes = outcomes.map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : 'ok'));
    // 26000: prepared statement "sr_…" does not exist; 42P05: prepared statement "sr_…" already exists.
    expect(codes[0]).toBe('26000');
    expect(codes.some((c) => c === '26000' || c === '42P05')).toBe(true);
  });

  it('with SYNCRELAY_DB_POOLER=transaction the same interleaving passes (statements go unnamed)', async () => {
    const [a, b] = await twoProcesses({ SYNCRELAY_DB_POOLER: 'transaction' });
    for (let i = 0; i < 3; i++) {
      const outcomes = await interleave(a, b);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    }
  });

  it('without DATABASE_DIRECT_URL: no LISTEN, one warning at start, and a run finishes by polling', async () => {
    const log = recordingLogger();
    const settings = loadSettings({ DATABASE_URL: pooledUrl(t.name), SYNCRELAY_DB_POOLER: 'transaction' });
    const db = await openDb(settings, { poolSize: 4, logger: log.logger });
    opened.push(db);
    const engine = await startEngine(db, log.logger, 1000);
    const status = await runToEnd(engine, 'org-poll');
    expect(status).toBe('success');
    const warnings = log.lines.filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/no LISTEN.*polling/);
    expect(log.raw.join('\n')).not.toContain(PASSWORD);
    expect(await listeners(t)).toBe(0);
    // Woken by the interval passes alone: the start-up pass could not have finished it.
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${db.schema.reconciler_passes}`);
    expect(rows[0]!.n).toBeGreaterThan(1);
  });

  it('with DATABASE_DIRECT_URL: LISTEN goes to the server and a NOTIFY wakes the relay at once', async () => {
    const log = recordingLogger();
    const settings = loadSettings({
      DATABASE_URL: pooledUrl(t.name),
      DATABASE_DIRECT_URL: t.url,
      SYNCRELAY_DB_POOLER: 'transaction',
    });
    const db = await openDb(settings, { poolSize: 4, logger: log.logger });
    opened.push(db);
    // With a 10-minute interval only NOTIFY (and the due-row timer) can move the run.
    const engine = await startEngine(db, log.logger, 600_000);
    expect(await listeners(t)).toBe(1);
    const status = await runToEnd(engine, 'org-notify');
    expect(status).toBe('success');
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${db.schema.reconciler_passes}`);
    expect(rows[0]!.n).toBe(1); // only the start-up pass ran
    expect(log.lines.filter((l) => l.level >= 40)).toEqual([]);
  });

  async function startEngine(db: Db, logger: Logger, reconcileIntervalMs: number): Promise<Engine> {
    const broker = new InProcessBroker();
    opened.push(broker);
    const engine = await Engine.open({
      settings: testSettings({ reconcileIntervalMs, redispatchCountdownMs: reconcileIntervalMs }),
      db,
      broker,
      logger,
      migrate: false,
    });
    opened.push(engine);
    engine.startWorker({ concurrency: 4 });
    await engine.startReconciler();
    return engine;
  }

  async function runToEnd(engine: Engine, orgId: string): Promise<string> {
    const integ = await engine.createIntegration({
      orgId,
      provider: 'synthetic',
      name: orgId,
      sources: ['s1', 's2'],
      datasets: ['teams', 'work-items'],
      config: { itemsPerDay: 1, latencyMs: 1 },
    });
    const { syncRunId } = await engine.trigger({
      orgId,
      integrationId: integ.id,
      mode: 'full_resync',
      triggeredBy: 'manual',
    });
    return waitFor(async () => {
      const { rows } = await engine.db.query<{ status: string }>(
        `SELECT status FROM ${engine.db.schema.sync_runs} WHERE id = $1 AND status NOT IN ('planned','dispatching')`,
        [syncRunId],
      );
      return rows[0]?.status;
    }, 60_000);
  }
});
