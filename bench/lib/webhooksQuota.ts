/**
 * The webhook benchmark's quota part: what an incremental poll of unchanged repositories costs the
 * credential. A GitHub integration over R repositories of the emulator (a generous primary limit, one
 * window for the whole part), a backfill, a first incremental (its initial depth: a backfill writes
 * no watermark), then a second incremental over data nothing changed: its conditional list requests
 * answer 304, which GitHub does not count. Reported: the primary rate-limit points the emulator
 * counted during the second incremental (GET /rate_limit's `used`, before and after; it spends
 * nothing itself) and its 304 answers.
 */
import { startGithubEmulator } from '../../src/emulators/github/index.js';
import { Engine } from '../../src/engine.js';
import { createLogger } from '../../src/logger.js';
import { openBroker, providerBenchSettings } from './engine.js';
import { incrementalRun, type IncrementalTarget } from './incremental.js';
import { benchPrefix, createBenchDatabase } from './pg.js';
import { deletePrefix } from './redis.js';
import { round } from './stats.js';
import { runTerminal } from './terminal.js';
import type { BenchOptions } from './types.js';

const ORG = 'org-bench-webhooks-quota';
const DAY_MS = 86_400_000;
const DATASETS = ['work-items', 'pull-requests'];

function quotaScale(quick: boolean) {
  const repos = quick ? 10 : 100;
  return {
    repos,
    issues: repos * 3,
    pulls: repos,
    maxComments: 1,
    maxReviews: 1,
    directCommits: 1,
    members: 5,
    days: quick ? 2 : 5,
  };
}

async function usedPoints(url: string, token: string): Promise<number> {
  const res = await fetch(`${url}/rate_limit`, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`GET /rate_limit answered ${res.status}`);
  const { resources } = (await res.json()) as { resources: { core: { used: number } } };
  return resources.core.used;
}

export async function quotaOfUnchangedPoll(opts: BenchOptions) {
  const scale = quotaScale(opts.quick);
  const emu = await startGithubEmulator({
    scale,
    seed: 11,
    rateLimit: { limit: 1_000_000, windowSeconds: 3600 },
    logLimit: 1_000_000,
  });
  const b = await createBenchDatabase('webhooks_quota');
  const prefix = benchPrefix('webhooks-quota');
  const settings = providerBenchSettings(b.url, prefix);
  const broker = openBroker(prefix);
  const engine = await Engine.open({
    settings,
    db: b.db,
    broker,
    migrate: false,
    logger: createLogger(process.env.SYNCRELAY_LOG_LEVEL ?? 'error', 'syncrelay-bench'),
  });
  try {
    engine.startWorker({ concurrency: 16 });
    await engine.startReconciler({ id: 'bench-webhooks-quota', scheduler: false });
    const integration = await engine.createIntegration({
      orgId: ORG,
      provider: 'github',
      name: 'bench-quota',
      sources: emu.data.repos.map((r) => `${emu.data.org.login}/${r.name}`),
      datasets: DATASETS,
      config: { baseUrl: emu.url },
      credential: emu.token,
    });
    const now = Date.now();
    const backfill = await engine.trigger({
      orgId: ORG,
      integrationId: integration.id,
      mode: 'backfill',
      triggeredBy: 'api',
      since: new Date(Math.floor((now - (scale.days + 1) * DAY_MS) / DAY_MS) * DAY_MS),
      before: new Date(now + 60_000),
    });
    const backfillStatus = await runTerminal(b.db, backfill.syncRunId, {
      label: 'webhooks quota: backfill',
      timeoutMs: 900_000,
      noteEveryMs: 10_000,
      note: opts.note,
    });
    const answered = () => emu.log.filter((l) => l.status >= 200 && l.status < 300).length;
    const t: IncrementalTarget = {
      engine,
      db: b.db,
      orgId: ORG,
      integrationId: integration.id,
      answered,
      note: opts.note,
    };
    const first = await incrementalRun(t, 'webhooks quota: first incremental');
    const used0 = await usedPoints(emu.url, emu.token);
    const notModified0 = emu.activity().notModified;
    const second = await incrementalRun(t, 'webhooks quota: incremental over unchanged data');
    const points = (await usedPoints(emu.url, emu.token)) - used0;
    return {
      repositories: scale.repos,
      datasets: DATASETS,
      backfill: { status: backfillStatus, units: backfill.units },
      first_incremental: { status: first.status, requests: first.requests, units: first.units },
      second_incremental: {
        status: second.status,
        units: second.units,
        answered_2xx: second.requests,
        not_modified_304: emu.activity().notModified - notModified0,
        rate_limit_points: points,
        wall_s: round(second.wallMs / 1000),
      },
    };
  } finally {
    await engine.close();
    await broker.close();
    await deletePrefix(prefix);
    await b.drop();
    await emu.close();
  }
}
