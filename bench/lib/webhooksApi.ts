/**
 * The webhook benchmark's API process: `node bench/lib/webhooksApi.js` (transpiled like child.ts).
 * The API server on 127.0.0.1 (a port of its own), and the reconciler unless BENCH_RECONCILER=0 (an
 * engine of its own on a pool of its own, as a deployment runs it beside the API), on the database
 * and queue prefix of the environment (DATABASE_URL, REDIS_URL, SYNCRELAY_QUEUE_PREFIX, SYNC_*,
 * SYNCRELAY_SECRET_KEY). The API's pool (BENCH_POOL connections) is wrapped to time every
 * transaction: statements, the wait for the first statement (the
 * integration's row lock on the delivery path), the time from then to the end of the commit (the
 * lock held) and the commit alone.
 *
 * Prints `ready <pid> <url>` once listening; to the stdin line `stats` it answers
 * `stats <json>` (see TxStats, with the process's CPU time since the last `stats`) and starts
 * counting afresh. Exits when stdin ends or on SIGTERM.
 */
import { createInterface } from 'node:readline';
import { startApiServer } from '../../src/api/server.js';
import { openBroker } from '../../src/broker/open.js';
import { loadSettings } from '../../src/config.js';
import { openDb } from '../../src/db/open.js';
import type { Db, Tx } from '../../src/db/types.js';
import { Engine } from '../../src/engine.js';
import { createLogger } from '../../src/logger.js';

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** What the transactions since the last `stats` took, in milliseconds (samples kept for quantiles). */
export interface TxStats {
  transactions: number;
  statements: number;
  /** Per transaction: the first statement's answer (on the delivery path: the row lock acquired). */
  firstMs: number[];
  /** Per transaction: first statement answered → commit answered (on the delivery path: the lock held). */
  heldMs: number[];
  /** Per transaction: the COMMIT alone (the WAL flush). */
  commitMs: number[];
  /** Per transaction: its statements. */
  perTx: number[];
  /** The whole process's CPU time (process.cpuUsage(), user + system) since the last `stats`. */
  cpuMs: number;
}

function emptyStats(): TxStats {
  return { transactions: 0, statements: 0, firstMs: [], heldMs: [], commitMs: [], perTx: [], cpuMs: 0 };
}

/** `db` with its transactions timed into `stats()`. */
function timedDb(db: Db): { db: Db; take: () => TxStats } {
  let stats = emptyStats();
  const transaction = async <T>(fn: (tx: Tx) => Promise<T>): Promise<T> => {
    const start = performance.now();
    let first = 0;
    let count = 0;
    let bodyDone = 0;
    const out = await db.transaction(async (tx) => {
      const timed: Tx = {
        schema: tx.schema,
        exec: (script) => tx.exec(script),
        async query(text, values) {
          const r = await tx.query(text, values);
          count += 1;
          if (first === 0) first = performance.now();
          return r as never;
        },
      };
      const r = await fn(timed);
      bodyDone = performance.now();
      return r;
    });
    const end = performance.now();
    stats.transactions += 1;
    stats.statements += count + 2; // BEGIN and COMMIT
    stats.perTx.push(count + 2);
    stats.firstMs.push((first || end) - start);
    stats.heldMs.push(end - (first || start));
    stats.commitMs.push(end - bodyDone);
    return out;
  };
  const wrapped: Db = {
    kind: db.kind,
    schema: db.schema,
    query: (text, values) => db.query(text, values),
    exec: (script) => db.exec(script),
    transaction,
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close(),
  };
  let cpuSince = process.cpuUsage();
  return {
    db: wrapped,
    take: () => {
      const cpu = process.cpuUsage(cpuSince);
      cpuSince = process.cpuUsage();
      const s = { ...stats, cpuMs: (cpu.user + cpu.system) / 1000 };
      stats = emptyStats();
      return s;
    },
  };
}

async function main(): Promise<void> {
  const settings = loadSettings(process.env);
  const logger = createLogger(process.env.SYNCRELAY_LOG_LEVEL ?? 'error', 'syncrelay-bench-api');
  const pool = Number(process.env.BENCH_POOL ?? 16);
  const raw = await openDb(settings, { poolSize: pool, applicationName: 'syncrelay-bench-api' });
  const { db, take } = timedDb(raw);
  const broker = openBroker(settings);
  const engine = await Engine.open({ settings, db, broker, logger, migrate: false });
  const server = await startApiServer({ engine, host: '127.0.0.1', port: 0 });
  const reconcilerDb = await openDb(settings, { poolSize: 4, applicationName: 'syncrelay-bench-reconciler' });
  const reconciler = await Engine.open({ settings, db: reconcilerDb, broker, logger, migrate: false });
  if (process.env.BENCH_RECONCILER !== '0')
    await reconciler.startReconciler({ id: 'bench-webhooks', scheduler: false });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    try {
      await server.close();
      await engine.close();
      await reconciler.close();
      await broker.close();
      await raw.close();
      await reconcilerDb.close();
    } finally {
      process.exit(0);
    }
  };
  process.once('SIGTERM', () => void stop());
  createInterface({ input: process.stdin })
    .on('line', (line) => {
      if (line.trim() === 'stats') say(`stats ${JSON.stringify(take())}`);
    })
    .on('close', () => void stop());
  say(`ready ${process.pid} ${server.url}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench api failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
