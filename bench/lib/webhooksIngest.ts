/**
 * The webhook benchmark's ingestion part: per API-process count P, P API processes
 * (./webhooksApi.ts; the reconciler in the first only) on one database, and per client shape C a
 * GitHub integration of S repositories, its secret made as the API makes one, and the signed
 * deliveries of ./webhooksLoad.ts posted at them (client k to process k mod P); then the database is
 * asked whether every delivery is there (rows = sent, received = unique ids, duplicate =
 * redeliveries). Beside each shape, the CPU time the load generator (this process) and the API
 * processes used. Where taskset is installed, one extra shape pins the load generator to one CPU and
 * the API process to another (PostgreSQL unpinned), labelled as such and never the best shape.
 */
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { Engine } from '../../src/engine.js';
import { createLogger } from '../../src/logger.js';
import { SecretKey } from '../../src/secrets/key.js';
import { createWebhookSecret } from '../../src/secrets/webhookSecrets.js';
import { benchSettings, childEnv } from './engine.js';
import type { BenchDatabase } from './pg.js';
import { benchPrefix } from './pg.js';
import { deletePrefix } from './redis.js';
import type { BenchOptions } from './types.js';
import type { TxStats } from './webhooksApi.js';
import { planDeliveries, postAll, type DeliveryPlan } from './webhooksLoad.js';
import { cpuFigures, shapeFigures, shapeName, type DeliveryRows, type ShapeFigures } from './webhooksShapes.js';

export type { ShapeFigures } from './webhooksShapes.js';
import {
  cpuAffinity,
  cpuList,
  mergeStats,
  setCpuAffinity,
  startApiProcesses,
  stopApiProcesses,
  txFigures,
  type WebhookApiProcess,
} from './webhooksServer.js';

export const ORG = 'org-bench-webhooks';
/** Connections of each API process's pool: SYNCRELAY_BENCH_WEBHOOK_API_POOL overrides (reported). */
export const API_POOL = 16;

export function apiPool(): number {
  const override = Number(process.env.SYNCRELAY_BENCH_WEBHOOK_API_POOL ?? 0);
  return Number.isInteger(override) && override > 0 ? override : API_POOL;
}

export interface IngestSizes {
  deliveries: number;
  sources: number;
  /** API-process counts P; each is swept over every client count. */
  processes: number[];
  /** Client counts C. */
  shapes: number[];
  warmup: number;
  /** The extra pinned shape (when taskset is installed). */
  pinned: { processes: number; concurrency: number };
}

/** Deliveries per shape: SYNCRELAY_BENCH_WEBHOOK_DELIVERIES overrides the full run's 20,000 (reported). */
export function ingestSizes(quick: boolean): IngestSizes {
  const override = Number(process.env.SYNCRELAY_BENCH_WEBHOOK_DELIVERIES ?? 0);
  const common = { sources: 200, processes: [1, 2], pinned: { processes: 1, concurrency: 32 } };
  if (quick) return { ...common, deliveries: 300, shapes: [8, 32], warmup: 50 };
  const deliveries = Number.isInteger(override) && override > 0 ? override : 20_000;
  return { ...common, deliveries, shapes: [8, 16, 32, 64], warmup: Math.min(1000, deliveries) };
}

interface Ctx {
  b: BenchDatabase;
  engine: Engine;
  opts: BenchOptions;
  /** The API processes' environment. */
  env: Record<string, string>;
}

/** P API processes serving one shape group, and where they were pinned. */
interface Apis {
  procs: WebhookApiProcess[];
  urls: string[];
  pinned: string | null;
}

/** A GitHub integration of `sources` repositories (not served: nothing reads them here) and its secret. */
async function integration(
  c: Ctx,
  tag: string,
  sources: number,
): Promise<{ id: string; repos: string[]; secret: string }> {
  const repos = Array.from({ length: sources }, (_, i) => `bench-org/repo-${String(i + 1).padStart(3, '0')}`);
  const row = await c.engine.createIntegration({
    orgId: ORG,
    provider: 'github',
    name: `bench-webhooks-${tag}`,
    sources: repos,
    datasets: ['work-items', 'work-item-comments', 'pull-requests'],
    config: { baseUrl: 'http://127.0.0.1:9' },
    credential: 'bench-token-not-used',
  });
  const made = await c.engine.ctx.db.transaction((tx) =>
    createWebhookSecret(
      tx,
      c.engine.ctx.secrets,
      { orgId: ORG, integrationId: row.id },
      { rotate: false, graceMs: 0 },
      new Date(),
    ),
  );
  return { id: row.id, repos, secret: made!.secret };
}

async function deliveryRows(c: Ctx, integrationId: string): Promise<DeliveryRows> {
  const db = c.b.db;
  const { rows } = await db.query<{ status: string; outcome: string | null; n: number }>(
    `SELECT status, outcome, count(*)::int AS n FROM ${db.schema.webhook_deliveries}
      WHERE integration_id = $1 GROUP BY status, outcome`,
    [integrationId],
  );
  const by = (status: string) => rows.filter((r) => r.status === status).reduce((a, r) => a + r.n, 0);
  const outcomes = Object.fromEntries(rows.filter((r) => r.status === 'received').map((r) => [r.outcome ?? '-', r.n]));
  return { rows: rows.reduce((a, r) => a + r.n, 0), received: by('received'), duplicate: by('duplicate'), outcomes };
}

/** The API processes' figures since their last `stats` (which starts them counting afresh). */
async function apiStats(apis: Apis): Promise<TxStats[]> {
  return Promise.all(apis.procs.map((p) => p.stats()));
}

async function oneShape(c: Ctx, apis: Apis, sizes: IngestSizes, concurrency: number, seed: number) {
  const name = shapeName({ api_processes: apis.urls.length, concurrency, pinned: apis.pinned });
  const target = await integration(c, name, sizes.sources);
  const plan: DeliveryPlan = planDeliveries(sizes.deliveries, target.repos, target.secret, seed);
  await apiStats(apis); // counts afresh
  const r = await postAll(apis.urls, `/api/v1/webhooks/github/${target.id}`, plan, concurrency);
  const perProcess = await apiStats(apis);
  const tx = txFigures(mergeStats(perProcess));
  const cpu = cpuFigures(r, perProcess);
  const found = await deliveryRows(c, target.id);
  // Every delivery answered 202 wrote its row; one that was not answered 202 may have written none.
  const noneLost =
    r.non202 === 0 &&
    found.rows === plan.deliveries.length &&
    found.received === plan.unique &&
    found.duplicate === plan.redeliveries;
  c.opts.note(
    `webhooks ${name}: ${r.acceptedPerS}/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, non-202 ${r.non202}; ` +
      `rows ${found.rows} (received ${found.received}, duplicate ${found.duplicate}); ` +
      `${tx.statements_per_delivery} statements per delivery; CPU cores: load generator ` +
      `${cpu.load_generator_cores}, API ${cpu.api_cores}`,
  );
  const shape = { processes: apis.urls.length, pool: apiPool(), pinned: apis.pinned };
  return shapeFigures(name, shape, r, { tx, cpu, found, noneLost, sent: plan.deliveries.length });
}

/** A warm-up integration's deliveries over every API process (figures discarded). */
async function warmUp(c: Ctx, apis: Apis, sizes: IngestSizes): Promise<void> {
  const tag = `warmup-p${apis.urls.length}${apis.pinned ? '-pinned' : ''}`;
  const warm = await integration(c, tag, sizes.sources);
  const plan = planDeliveries(sizes.warmup, warm.repos, warm.secret, 1);
  await postAll(apis.urls, `/api/v1/webhooks/github/${warm.id}`, plan, 8);
}

/** Every client count on `processes` API processes, started afresh and warmed up. */
async function sweepProcesses(c: Ctx, sizes: IngestSizes, processes: number, seed: number): Promise<ShapeFigures[]> {
  const procs = await startApiProcesses(c.env, processes);
  try {
    const apis: Apis = { procs, urls: await Promise.all(procs.map((p) => p.url)), pinned: null };
    await warmUp(c, apis, sizes);
    const out: ShapeFigures[] = [];
    for (const [i, concurrency] of sizes.shapes.entries())
      out.push(await oneShape(c, apis, sizes, concurrency, seed + i));
    return out;
  } finally {
    await stopApiProcesses(procs);
  }
}

/**
 * The extra shape: this process (the load generator) moved to the first CPU it may use, the API
 * processes started on the second; null without taskset or a second CPU. The affinity is restored.
 */
async function pinnedShape(c: Ctx, sizes: IngestSizes, seed: number): Promise<ShapeFigures | null> {
  const own = cpuAffinity(process.pid);
  const cpus = own ? cpuList(own) : [];
  if (!own || cpus.length < 2) return null;
  const [loadCpu, apiCpu] = [String(cpus[0]), String(cpus[1])];
  const procs = await startApiProcesses(c.env, sizes.pinned.processes, apiCpu);
  try {
    setCpuAffinity(process.pid, loadCpu);
    const pinned = `load generator on CPU ${loadCpu}, API processes on CPU ${apiCpu}, PostgreSQL unpinned`;
    const apis: Apis = { procs, urls: await Promise.all(procs.map((p) => p.url)), pinned };
    await warmUp(c, apis, sizes);
    return await oneShape(c, apis, sizes, sizes.pinned.concurrency, seed);
  } finally {
    setCpuAffinity(process.pid, own);
    await stopApiProcesses(procs);
  }
}

async function openEngine(b: BenchDatabase, prefix: string, env: Record<string, string>): Promise<Engine> {
  return Engine.open({
    settings: benchSettings(b.url, prefix, env),
    db: b.db,
    broker: new InProcessBroker(),
    migrate: false,
    logger: createLogger(process.env.SYNCRELAY_LOG_LEVEL ?? 'error', 'syncrelay-bench'),
  });
}

/** Every (API processes × clients) shape, then the pinned one when the machine allows it. */
export async function measureIngestion(opts: BenchOptions, b: BenchDatabase): Promise<ShapeFigures[]> {
  const sizes = ingestSizes(opts.quick);
  const prefix = benchPrefix('webhooks');
  const env = {
    SYNC_RECONCILE_INTERVAL_SECONDS: '1',
    SYNCRELAY_SECRET_KEY: SecretKey.generate().toBase64(),
    SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: 'true',
  };
  const engine = await openEngine(b, prefix, env);
  try {
    const c: Ctx = { b, engine, opts, env: { ...childEnv(b.url, prefix, env), BENCH_POOL: String(apiPool()) } };
    const out: ShapeFigures[] = [];
    for (const [i, processes] of sizes.processes.entries())
      out.push(...(await sweepProcesses(c, sizes, processes, 100 + 10 * i)));
    const pinned = await pinnedShape(c, sizes, 200);
    return pinned ? [...out, pinned] : out;
  } finally {
    await engine.close();
    await engine.ctx.broker.close();
    await deletePrefix(prefix);
  }
}
