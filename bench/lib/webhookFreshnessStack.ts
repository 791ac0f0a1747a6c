/**
 * The webhook-freshness benchmark's install: the GitHub emulator with many small repositories, one
 * bench database holding one integration over all of them (backfilled, then one incremental so
 * every repository has its watermarks, as a deployed integration has), and per shape engines of
 * their own on that database (its settings, its queue prefix): the API server's, and the worker's
 * with the reconciler — each with its own pool as separate processes would have, in this process —
 * or `syncrelay worker` and `syncrelay reconciler` in processes of their own.
 */
import { startApiServer, type RunningApiServer } from '../../src/api/server.js';
import type { BullMqBroker } from '../../src/broker/bullmq.js';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { Engine } from '../../src/engine.js';
import { createLogger } from '../../src/logger.js';
import { SecretKey } from '../../src/secrets/key.js';
import { createWebhookSecret } from '../../src/secrets/webhookSecrets.js';
import { CliProcess } from './cliProcess.js';
import { benchSettings, childEnv, openBroker } from './engine.js';
import { benchPrefix, type BenchDatabase } from './pg.js';
import { deletePrefix } from './redis.js';
import { runTerminal } from './terminal.js';
import type { BenchOptions } from './types.js';

export const FRESHNESS_ORG = 'org-bench-webhook-freshness';
const DAY_MS = 86_400_000;
const DAYS = 2;

/** What one engine is shaped like: the settings the sweep varies. */
export interface FreshnessShape {
  /** SYNC_WEBHOOK_DEBOUNCE_SECONDS, in ms. */
  debounceMs: number;
  /** SYNC_INTEGRATION_MAX_LIVE_RUNS. */
  maxLiveRuns: number;
  /** Worker slots. */
  concurrency: number;
  /** SYNC_RECONCILE_INTERVAL_SECONDS, in ms. */
  reconcileMs: number;
  /**
   * Where the worker and the reconciler run: `one` — in this process, beside the emulator, the API
   * server, the driver and the watcher; `split` — `syncrelay worker` and `syncrelay reconciler`
   * in processes of their own (the deployed shape; the API server stays here).
   */
  processes: 'one' | 'split';
}

export function shapeName(s: FreshnessShape): string {
  const debounce = `debounce ${s.debounceMs / 1000} s`;
  const where = s.processes === 'split' ? 'worker and reconciler apart' : 'one process';
  return `${debounce}, cap ${s.maxLiveRuns}, c${s.concurrency}, reconcile ${s.reconcileMs / 1000} s, ${where}`;
}

/** The emulator with `repos` small repositories (three issues each, nothing else to read). */
export function startFreshnessEmulator(repos: number): Promise<GithubEmulator> {
  const scale = { repos, issues: repos * 3, pulls: 0, maxComments: 0, maxReviews: 0, directCommits: 0, members: 3 };
  return startGithubEmulator({
    scale: { ...scale, days: DAYS },
    seed: 61,
    rateLimit: { limit: 10_000_000, windowSeconds: 3600 },
    logLimit: 1000,
  });
}

/** Settings every engine of the benchmark shares (one secret key: credentials and the secret stay readable). */
export class FreshnessEngines {
  private readonly key = SecretKey.generate().toBase64();

  constructor(private readonly b: BenchDatabase) {}

  /**
   * Two engines of `shape` on one broker, each with a pool of its own as deployed processes have:
   * the API server's (deliveries) and the worker's with the reconciler.
   */
  async open(shape: FreshnessShape, tag: string): Promise<ShapeEngine> {
    const prefix = benchPrefix(`freshness-${tag}`);
    const env = {
      SYNC_RECONCILE_INTERVAL_SECONDS: String(shape.reconcileMs / 1000),
      SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '1',
      SYNC_WEBHOOK_DEBOUNCE_SECONDS: String(shape.debounceMs / 1000),
      SYNC_INTEGRATION_MAX_LIVE_RUNS: String(shape.maxLiveRuns),
      SYNC_RUN_MAX_UNITS: '5000',
      SYNCRELAY_SECRET_KEY: this.key,
      SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: 'true',
    };
    const settings = benchSettings(this.b.url, prefix, env);
    const broker = openBroker(prefix);
    const logger = createLogger(process.env.SYNCRELAY_LOG_LEVEL ?? 'error', 'syncrelay-bench');
    const se = new ShapeEngine(broker, prefix);
    try {
      se.api = await Engine.open({ settings, broker, poolSize: API_POOL, migrate: false, logger });
      se.server = await startApiServer({ engine: se.api, host: '127.0.0.1', port: 0 });
      if (shape.processes === 'split') {
        const child = childEnv(this.b.url, prefix, env);
        se.children.push(new CliProcess('worker', ['--concurrency', String(shape.concurrency)], child));
        se.children.push(new CliProcess('reconciler', ['--id', `bench-freshness-${tag}`], child));
        await Promise.all(se.children.map((c) => c.ready));
        return se;
      }
      se.engine = await Engine.open({ settings, broker, poolSize: shape.concurrency + 8, migrate: false, logger });
      se.engine.startWorker({ concurrency: shape.concurrency });
      await se.engine.startReconciler({ id: `bench-freshness-${tag}`, scheduler: false });
      return se;
    } catch (err) {
      await se.close();
      throw err;
    }
  }
}

/** The API's pool: deliveries of one integration take its row lock in turn. */
const API_POOL = 10;

export class ShapeEngine {
  api: Engine | null = null;
  server: RunningApiServer | null = null;
  /** The worker and reconciler in this process (shape `one`), or null. */
  engine: Engine | null = null;
  /** `syncrelay worker` and `syncrelay reconciler` (shape `split`). */
  readonly children: CliProcess[] = [];

  constructor(
    private readonly broker: BullMqBroker,
    private readonly prefix: string,
  ) {}

  get url(): string {
    return this.server!.url;
  }

  /** Safe after a failed open. */
  async close(): Promise<void> {
    await this.server?.close();
    await this.api?.close();
    await Promise.all(this.children.map((c) => c.stop()));
    await this.engine?.close();
    await this.broker.close();
    await deletePrefix(this.prefix);
  }
}

/** The integration over every repository of `emu`, its webhook secret, a backfill and one incremental. */
export async function prepareIntegration(
  opts: BenchOptions,
  se: ShapeEngine,
  b: BenchDatabase,
  emu: GithubEmulator,
): Promise<{ id: string; secret: string }> {
  const engine = se.engine!;
  const row = await engine.createIntegration({
    orgId: FRESHNESS_ORG,
    provider: 'github',
    name: 'bench-freshness',
    sources: emu.data.repos.map((r) => `${emu.data.org.login}/${r.name}`),
    datasets: ['work-items'],
    config: { baseUrl: emu.url },
    credential: emu.token,
  });
  const made = await b.db.transaction((tx) =>
    createWebhookSecret(
      tx,
      engine.ctx.secrets,
      { orgId: FRESHNESS_ORG, integrationId: row.id },
      { rotate: false, graceMs: 0 },
      new Date(),
    ),
  );
  const now = Date.now();
  const wait = { timeoutMs: 600_000, noteEveryMs: 10_000, note: opts.note };
  const backfill = await engine.trigger({
    orgId: FRESHNESS_ORG,
    integrationId: row.id,
    mode: 'backfill',
    triggeredBy: 'api',
    since: new Date(Math.floor((now - (DAYS + 1) * DAY_MS) / DAY_MS) * DAY_MS),
    before: new Date(now + 60_000),
  });
  const first = await runTerminal(b.db, backfill.syncRunId, { ...wait, label: 'freshness: backfill' });
  const inc = await engine.trigger({
    orgId: FRESHNESS_ORG,
    integrationId: row.id,
    mode: 'incremental',
    triggeredBy: 'api',
  });
  const second = await runTerminal(b.db, inc.syncRunId, { ...wait, label: 'freshness: first incremental' });
  if (first !== 'success' || second !== 'success') {
    throw new Error(`freshness: the backfill ended ${first}, the first incremental ${second}`);
  }
  return { id: row.id, secret: made!.secret };
}
