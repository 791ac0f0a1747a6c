import type { Broker } from '../../src/broker/types.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import type { Clock } from '../../src/clock.js';
import { loadSettings, type ResolvedSettings } from '../../src/config.js';
import type { Db } from '../../src/db/types.js';
import { isTerminalRun, type RunStatus } from '../../src/domain/statuses.js';
import { Engine } from '../../src/engine.js';
import { Faults } from '../../src/faults.js';
import { silentLogger } from '../../src/logger.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Provider } from '../../src/sdk/types.js';
import { SecretKey } from '../../src/secrets/key.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { createTestDatabase, type TestDatabase } from './pg.js';

/**
 * Settings shrunk for tests (never sleep for production defaults). Tests inject faults through the
 * synthetic provider's knobs, so fault injection is allowed unless `overrides` says otherwise.
 */
export function testSettings(overrides: Partial<ResolvedSettings> = {}): ResolvedSettings {
  return loadSettings(
    {
      SYNCRELAY_ALLOW_FAULT_INJECTION: 'true',
      SYNC_UNIT_RUNNING_LEASE_SECONDS: '2',
      SYNC_RECONCILE_INTERVAL_SECONDS: '1',
      SYNC_UNIT_EXPIRED_LEASE_RETRY_BACKOFF_SECONDS: '0',
      SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '1',
    },
    overrides,
  );
}

export interface TestEngine {
  engine: Engine;
  t: TestDatabase;
  broker: Broker;
  faults: Faults;
  close(): Promise<void>;
}

/** A TestEngine whose close() ends the engine, then its broker, then drops its database. */
function handle(engine: Engine, t: TestDatabase, broker: Broker, faults: Faults): TestEngine {
  return {
    engine,
    t,
    broker,
    faults,
    async close() {
      await engine.close();
      await broker.close();
      await t.drop();
    },
  };
}

/** An engine on its own cloned database with the given broker (in-process by default). */
export async function openTestEngine(
  opts: { settings?: Partial<ResolvedSettings>; broker?: Broker; clock?: Clock } = {},
): Promise<TestEngine> {
  const t = await createTestDatabase();
  const broker = opts.broker ?? new InProcessBroker();
  const faults = new Faults();
  const engine = await Engine.open({
    settings: testSettings(opts.settings),
    db: t.db,
    broker,
    clock: opts.clock,
    logger: silentLogger(),
    faults,
    migrate: false,
  });
  return handle(engine, t, broker, faults);
}

/**
 * An engine on its own cloned database running `provider` into the normalized tables, with a
 * secret key for credentials, its worker (`concurrency` slots) and a reconciler (no scheduler)
 * started. `random` replaces the engine's jitter source before anything runs.
 */
export async function openProviderEngine(opts: {
  provider: Provider;
  concurrency: number;
  poolSize?: number;
  random?: () => number;
}): Promise<TestEngine> {
  const t = await createTestDatabase(opts.poolSize === undefined ? {} : { poolSize: opts.poolSize });
  const broker = new InProcessBroker();
  const faults = new Faults();
  const engine = await Engine.open({
    settings: testSettings({ secretKey: SecretKey.generate() }),
    db: t.db,
    broker,
    registry: new ProviderRegistry().register(opts.provider, normalizedSink(t.db)),
    logger: silentLogger(),
    faults,
    migrate: false,
  });
  if (opts.random) engine.ctx.random = opts.random;
  engine.startWorker({ concurrency: opts.concurrency });
  await engine.startReconciler({ scheduler: false });
  return handle(engine, t, broker, faults);
}

/** The run's status once it is terminal (polled every 100 ms), or fails after `timeoutMs`. */
export async function runTerminal(db: Db, runId: string, timeoutMs = 45_000): Promise<RunStatus> {
  return waitFor(
    async () => {
      const { rows } = await db.query<{ status: RunStatus }>(
        `SELECT status FROM ${db.schema.sync_runs} WHERE id = $1`,
        [runId],
      );
      const s = rows[0]?.status;
      return s !== undefined && isTerminalRun(s) ? s : null;
    },
    timeoutMs,
    100,
  );
}

/** Resolves when `check` returns a truthy value (polled against the database), or fails after `timeoutMs`. */
export async function waitFor<T>(check: () => Promise<T>, timeoutMs = 30_000, everyMs = 25): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
