/**
 * A worker process for multi-process Linear tests (test/fixtures/role.ts serves the synthetic and
 * GitHub providers only):
 *
 *   node --import tsx test/helpers/linearRole.ts
 *
 * Reads DATABASE_URL, REDIS_URL, SYNCRELAY_QUEUE_PREFIX, SYNCRELAY_SECRET_KEY and SYNC_* like the
 * fixture, plus LINEAR_PAGE_SIZE (issues per page, default the provider's). Prints `ready <pid>`
 * once the worker runs and `unit <unitId> <leaseOwner>` when a Linear unit starts under a lease.
 * Exits when stdin ends (the test runner died) or on SIGTERM.
 */
import { loadSettings } from '../../src/config.js';
import { openDb } from '../../src/db/open.js';
import { Engine } from '../../src/engine.js';
import { createLogger } from '../../src/logger.js';
import { createLinearProvider } from '../../src/providers/linear/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Provider } from '../../src/sdk/types.js';
import { normalizedSink, workItemMetricsHandler } from '../../src/sinks/normalized/index.js';

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function announcing(provider: Provider): Provider {
  return {
    ...provider,
    runUnit(ctx) {
      say(`unit ${ctx.unit.id} ${ctx.lease.owner}`);
      return provider.runUnit(ctx);
    },
  };
}

async function main(): Promise<void> {
  const settings = loadSettings(process.env);
  if (!settings.databaseUrl || !settings.redisUrl) throw new Error('DATABASE_URL and REDIS_URL are required');
  const logger = createLogger(process.env.SYNCRELAY_LOG_LEVEL ?? 'warn', 'syncrelay-linear-worker');
  const db = await openDb(settings, { applicationName: 'syncrelay-linear-worker' });
  const pageSize = Number(process.env.LINEAR_PAGE_SIZE ?? '0');
  const linear = createLinearProvider({
    postSyncHandlers: [workItemMetricsHandler],
    ...(pageSize > 0 ? { pageSize } : {}),
  });
  const registry = new ProviderRegistry().register(announcing(linear), normalizedSink(db));
  const engine = await Engine.open({ settings, db, logger, registry, migrate: false });
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await engine.close();
    await db.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.stdin.on('end', () => void stop()).resume();
  engine.startWorker({ concurrency: 1 });
  say(`ready ${process.pid}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`linear worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
