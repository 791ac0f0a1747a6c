/**
 * A benchmark worker process:
 *
 *   node --import tsx bench/lib/child.ts worker   a syncrelay worker (bench providers, BullMQ)
 *   node --import tsx bench/lib/child.ts peer     a graphile-worker runner with one no-op task
 *
 * Environment: DATABASE_URL, REDIS_URL, SYNCRELAY_QUEUE_PREFIX and SYNC_* (worker), plus
 * BENCH_CONCURRENCY (jobs at once, default 8) and BENCH_POOL (connections, default 8).
 * Prints one line each on stdout:
 *
 *   ready <pid>            once consuming
 *   unit <unitId> <owner>  (worker) the hanging provider started a unit under this lease
 *   done <runId>           (worker) the run's post_sync handler ran
 *   c <n>                  (peer) n more jobs completed
 *   rss <peak> <now>       answer to the stdin line `rss`: peak and current RSS in bytes
 *
 * Exits when stdin ends or on SIGTERM (gracefully), so a dead runner leaves nothing behind.
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Logger as GraphileLogger, run as runGraphile } from 'graphile-worker';
import { loadSettings } from '../../src/config.js';
import { openDb } from '../../src/db/open.js';
import { Engine } from '../../src/engine.js';
import { createLogger } from '../../src/logger.js';
import { benchRegistry } from './providers.js';

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function positiveInt(name: string, def: number): number {
  const n = Number(process.env[name] ?? def);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
}

/**
 * Peak RSS from the kernel and the current RSS, in bytes. The peak is VmHWM of /proc/self/status:
 * getrusage's ru_maxrss would report the parent's RSS at fork time when that was larger (Linux
 * carries it over exec).
 */
function rssLine(): string {
  let peak = process.resourceUsage().maxRSS * 1024;
  try {
    const kib = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kib) peak = Number(kib) * 1024;
  } catch {
    // not Linux: keep getrusage's figure
  }
  return `rss ${peak} ${process.memoryUsage.rss()}`;
}

async function startWorker(): Promise<() => Promise<void>> {
  const settings = loadSettings(process.env);
  const logger = createLogger(process.env.SYNCRELAY_LOG_LEVEL ?? 'warn', 'syncrelay-bench-worker');
  const db = await openDb(settings, {
    poolSize: positiveInt('BENCH_POOL', 8),
    applicationName: 'syncrelay-bench-worker',
  });
  const registry = benchRegistry({
    onUnitStart: (unitId, owner) => say(`unit ${unitId} ${owner}`),
    handlers: [{ name: 'bench-done', run: async (payload) => say(`done ${payload.runId}`) }],
  });
  const engine = await Engine.open({ settings, db, logger, registry, migrate: false });
  engine.startWorker({ concurrency: positiveInt('BENCH_CONCURRENCY', 8), graceMs: 1000 });
  return async () => {
    await engine.close();
    await db.close();
  };
}

async function startPeer(): Promise<() => Promise<void>> {
  let pending = 0;
  let flushing = false;
  const flush = () => {
    flushing = false;
    say(`c ${pending}`);
    pending = 0;
  };
  const runner = await runGraphile({
    connectionString: process.env.DATABASE_URL,
    concurrency: positiveInt('BENCH_CONCURRENCY', 8),
    maxPoolSize: positiveInt('BENCH_POOL', 8),
    noHandleSignals: true,
    pollInterval: 1000,
    logger: new GraphileLogger(() => () => undefined),
    taskList: { noop: async () => undefined },
  });
  runner.events.on('job:complete', () => {
    pending += 1;
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  });
  return () => runner.stop();
}

async function main(): Promise<void> {
  const mode = process.argv[2];
  if (mode !== 'worker' && mode !== 'peer')
    throw new Error(`usage: child.ts worker|peer (got ${JSON.stringify(mode)})`);
  const close = mode === 'worker' ? await startWorker() : await startPeer();
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    try {
      await close();
    } finally {
      process.exit(0);
    }
  };
  process.once('SIGTERM', () => void stop());
  createInterface({ input: process.stdin })
    .on('line', (line) => {
      if (line.trim() === 'rss') say(rssLine());
    })
    .on('close', () => void stop());
  say(`ready ${process.pid}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench child failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
