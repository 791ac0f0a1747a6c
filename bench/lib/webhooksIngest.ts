/**
 * The webhook benchmark's ingestion part: one API process (./webhooksApi.ts, the reconciler in it),
 * a GitHub integration of S repositories per client shape, its secret made as the API makes one,
 * and the signed deliveries of ./webhooksLoad.ts posted at it; then the database is asked whether
 * every delivery is there (rows = sent, received = unique ids, duplicate = redeliveries).
 */
import { loadavg } from 'node:os';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { Engine } from '../../src/engine.js';
import { createLogger } from '../../src/logger.js';
import { SecretKey } from '../../src/secrets/key.js';
import { createWebhookSecret } from '../../src/secrets/webhookSecrets.js';
import { benchSettings, childEnv } from './engine.js';
import type { BenchDatabase } from './pg.js';
import { benchPrefix } from './pg.js';
import { deletePrefix } from './redis.js';
import { quantile, round } from './stats.js';
import type { BenchOptions } from './types.js';
import type { TxStats } from './webhooksApi.js';
import { planDeliveries, postAll, type DeliveryPlan, type LoadResult } from './webhooksLoad.js';
import { WebhookApiProcess } from './webhooksServer.js';

export const ORG = 'org-bench-webhooks';
/** Connections of the API process's pool. */
export const API_POOL = 16;

export interface IngestSizes {
  deliveries: number;
  sources: number;
  shapes: number[];
  warmup: number;
}

/** Deliveries per shape: SYNCRELAY_BENCH_WEBHOOK_DELIVERIES overrides the full run's 20,000 (reported). */
export function ingestSizes(quick: boolean): IngestSizes {
  const override = Number(process.env.SYNCRELAY_BENCH_WEBHOOK_DELIVERIES ?? 0);
  if (quick) return { deliveries: 300, sources: 200, shapes: [8, 32], warmup: 50 };
  const deliveries = Number.isInteger(override) && override > 0 ? override : 20_000;
  return { deliveries, sources: 200, shapes: [8, 16, 32, 64], warmup: Math.min(1000, deliveries) };
}

export interface ShapeFigures {
  concurrency: number;
  accepted_per_s: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
  non_202: number;
  non_202_statuses: Record<string, number>;
  sent: number;
  rows: number;
  received: number;
  duplicate: number;
  none_lost: boolean;
  outcomes: Record<string, number>;
  transactions: TxFigures;
  load_avg_1m: number;
}

/** The API process's delivery transactions: statements, the lock's wait and hold, the commit. */
export interface TxFigures {
  count: number;
  statements_per_delivery: number;
  lock_wait_p50_ms: number;
  lock_wait_p99_ms: number;
  lock_held_p50_ms: number;
  lock_held_mean_ms: number;
  commit_p50_ms: number;
  /** 1000 ÷ mean lock hold: the most deliveries per second one integration's row lock lets through. */
  serial_bound_per_s: number;
}

function mean(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

function txFigures(s: TxStats): TxFigures {
  const held = mean(s.heldMs);
  return {
    count: s.transactions,
    statements_per_delivery: round(s.statements / Math.max(1, s.transactions)),
    lock_wait_p50_ms: round(quantile(s.firstMs, 0.5)),
    lock_wait_p99_ms: round(quantile(s.firstMs, 0.99)),
    lock_held_p50_ms: round(quantile(s.heldMs, 0.5)),
    lock_held_mean_ms: round(held),
    commit_p50_ms: round(quantile(s.commitMs, 0.5)),
    serial_bound_per_s: round(1000 / held),
  };
}

interface Ctx {
  b: BenchDatabase;
  engine: Engine;
  api: WebhookApiProcess;
  url: string;
  opts: BenchOptions;
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

async function deliveryRows(c: Ctx, integrationId: string) {
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

async function oneShape(c: Ctx, sizes: IngestSizes, concurrency: number, seed: number): Promise<ShapeFigures> {
  const target = await integration(c, `c${concurrency}`, sizes.sources);
  const plan: DeliveryPlan = planDeliveries(sizes.deliveries, target.repos, target.secret, seed);
  await c.api.stats(); // counts afresh
  const r: LoadResult = await postAll(c.url, `/api/v1/webhooks/github/${target.id}`, plan, concurrency);
  const tx = txFigures(await c.api.stats());
  const found = await deliveryRows(c, target.id);
  // Every delivery answered 202 wrote its row; one that was not answered 202 may have written none.
  const noneLost =
    r.non202 === 0 &&
    found.rows === plan.deliveries.length &&
    found.received === plan.unique &&
    found.duplicate === plan.redeliveries;
  c.opts.note(
    `webhooks c${concurrency}: ${r.acceptedPerS}/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, non-202 ${r.non202}; ` +
      `rows ${found.rows} (received ${found.received}, duplicate ${found.duplicate}); lock held p50 ` +
      `${tx.lock_held_p50_ms} ms, ${tx.statements_per_delivery} statements per delivery`,
  );
  return {
    concurrency,
    accepted_per_s: r.acceptedPerS,
    p50_ms: r.p50Ms,
    p95_ms: r.p95Ms,
    p99_ms: r.p99Ms,
    max_ms: r.maxMs,
    non_202: r.non202,
    non_202_statuses: r.statuses,
    sent: plan.deliveries.length,
    rows: found.rows,
    received: found.received,
    duplicate: found.duplicate,
    none_lost: noneLost,
    outcomes: found.outcomes,
    transactions: tx,
    load_avg_1m: round(loadavg()[0]!),
  };
}

/** Every client shape on one API process; a warm-up integration first (its figures discarded). */
export async function measureIngestion(opts: BenchOptions, b: BenchDatabase): Promise<ShapeFigures[]> {
  const sizes = ingestSizes(opts.quick);
  const prefix = benchPrefix('webhooks');
  const env = {
    SYNC_RECONCILE_INTERVAL_SECONDS: '1',
    SYNCRELAY_SECRET_KEY: SecretKey.generate().toBase64(),
    SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: 'true',
  };
  const engine = await Engine.open({
    settings: benchSettings(b.url, prefix, env),
    db: b.db,
    broker: new InProcessBroker(),
    migrate: false,
    logger: createLogger(process.env.SYNCRELAY_LOG_LEVEL ?? 'error', 'syncrelay-bench'),
  });
  const api = new WebhookApiProcess({ ...childEnv(b.url, prefix, env), BENCH_POOL: String(API_POOL) });
  try {
    const c: Ctx = { b, engine, api, url: await api.url, opts };
    const warm = await integration(c, 'warmup', sizes.sources);
    const warmPlan = planDeliveries(sizes.warmup, warm.repos, warm.secret, 1);
    await postAll(c.url, `/api/v1/webhooks/github/${warm.id}`, warmPlan, 8);
    const out: ShapeFigures[] = [];
    for (const [i, concurrency] of sizes.shapes.entries()) out.push(await oneShape(c, sizes, concurrency, 100 + i));
    return out;
  } finally {
    await api.stop();
    await engine.close();
    await engine.ctx.broker.close();
    await deletePrefix(prefix);
  }
}
