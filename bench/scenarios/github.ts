/**
 * 6. GitHub under a rate limit: a backfill of an emulated organisation (the emulator's `bench`
 * preset: 4 repositories, 20,000 issues, 5,000 pull requests with comments and reviews, a year of
 * activity) through the GitHub provider, the budget enforced by the emulator at R requests per
 * window. A worker (concurrency 8) and the reconciler run in this process on PostgreSQL + Redis.
 *
 * Requests needed = the emulator's 2xx answers (every list page and detail call the sync made; a
 * refused call is not counted). The theoretical minimum is requests needed ÷ R × window, so
 * ratio = wall time (trigger → run terminal) ÷ that minimum (target ≤ 1.15). Also reported: the
 * most limit responses (403/429) in one window for the credential (target ≤ 1), requests per stored
 * row, and duplicates: per normalized table count(*) − count(DISTINCT external_id), and stored rows
 * against the emulator's own records; requests per second and this process's CPU per request.
 * Then two incrementals (bench/lib/incremental.ts): the second, over unchanged data, is the cost of
 * its window's overlap with the first.
 */
import { Engine } from '../../src/engine.js';
import { createLogger } from '../../src/logger.js';
import { createGithubProvider } from '../../src/providers/github/index.js';
import { OutboundPolicy } from '../../src/providers/kit/outbound.js';
import { startGithubEmulator, type GithubEmulator, type OrgData } from '../../src/emulators/github/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { normalizedSink, workItemMetricsHandler } from '../../src/sinks/normalized/index.js';
import type { Db } from '../../src/db/types.js';
import { openBroker, providerBenchSettings } from '../lib/engine.js';
import { overlapCost } from '../lib/incremental.js';
import { spread, verifyCost } from '../lib/verify.js';
import { benchPrefix, createBenchDatabase } from '../lib/pg.js';
import { deletePrefix } from '../lib/redis.js';
import { round } from '../lib/stats.js';
import { runTerminal } from '../lib/terminal.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';

const ORG = 'org-bench-github';
/** Units at once: enough that requests in flight, not the per-request round trip, meet the budget. */
const WORKER_CONCURRENCY = 32;
const DAY_MS = 86_400_000;
const DATASETS = ['work-items', 'work-item-comments', 'pull-requests', 'pull-request-reviews', 'commits'];
const TABLES = ['work_items', 'work_item_comments', 'pull_requests', 'pull_request_reviews', 'commits'] as const;

/** Full: the `bench` preset at 1,000 requests per 2 s. Quick: a small organisation, same shape. */
function sizes(quick: boolean) {
  return quick
    ? {
        scale: {
          repos: 2,
          issues: 300,
          pulls: 60,
          maxComments: 2,
          maxReviews: 2,
          directCommits: 20,
          members: 5,
          days: 20,
        },
        rate: { limit: 150, windowSeconds: 2 },
      }
    : { scale: 'bench' as const, rate: { limit: 1200, windowSeconds: 60 } };
}

export const githubScenario: Scenario = {
  name: 'github',
  async run(opts: BenchOptions): Promise<ScenarioResult[]> {
    const size = sizes(opts.quick);
    const b = await createBenchDatabase('github');
    const prefix = benchPrefix('gh');
    const broker = openBroker(prefix);
    const emu = await startGithubEmulator({ scale: size.scale, rateLimit: size.rate, seed: 5, logLimit: 1_000_000 });
    const settings = providerBenchSettings(b.url, prefix);
    const engine = await Engine.open({
      settings,
      db: b.db,
      broker,
      migrate: false,
      registry: new ProviderRegistry().register(
        createGithubProvider({
          postSyncHandlers: [workItemMetricsHandler],
          outbound: new OutboundPolicy(settings.providerOutbound),
        }),
        normalizedSink(b.db),
      ),
      logger: createLogger(process.env.SYNCRELAY_LOG_LEVEL ?? 'error', 'syncrelay-bench'),
    });
    try {
      engine.startWorker({ concurrency: WORKER_CONCURRENCY });
      await engine.startReconciler({ id: 'bench-github', scheduler: false });
      const integration = await engine.createIntegration({
        orgId: ORG,
        provider: 'github',
        name: 'bench',
        sources: emu.data.repos.map((r) => `${emu.data.org.login}/${r.name}`),
        datasets: DATASETS,
        config: { baseUrl: emu.url },
        credential: emu.token,
      });
      const now = Date.now();
      const since = new Date(Math.floor((now - (emu.scale.days + 1) * DAY_MS) / DAY_MS) * DAY_MS);
      const started = performance.now();
      const cpuBefore = process.cpuUsage();
      const run = await engine.trigger({
        orgId: ORG,
        integrationId: integration.id,
        mode: 'backfill',
        triggeredBy: 'api',
        since,
        before: new Date(now + 60_000),
      });
      opts.note(`github: ${run.units} units, ${size.rate.limit} requests per ${size.rate.windowSeconds} s`);
      const status = await runTerminal(b.db, run.syncRunId, {
        label: 'github',
        timeoutMs: 2_400_000,
        noteEveryMs: 5000,
        note: opts.note,
      });
      const wallMs = performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      const result = await report(b.db, emu, integration.id, {
        status,
        wallMs,
        cpuMs,
        units: run.units,
        since: since.getTime(),
      });
      const answered = () => emu.log.filter((l) => l.status >= 200 && l.status < 300).length;
      const target = { engine, db: b.db, orgId: ORG, integrationId: integration.id, answered, note: opts.note };
      const overlap = await overlapCost(target, 'github');
      const verify = await verifyCost(
        {
          ...target,
          requests: () => emu.log.length,
          items: emu.data.repos.reduce((n, r) => n + r.items.length, 0),
          limit: emu.rateLimit.limit,
          windowMs: emu.rateLimit.windowSeconds * 1000,
          deleteAtProvider: (n) => deleteIssues(emu, n),
        },
        'github',
      );
      return [{ ...result, ...overlap, ...verify }];
    } finally {
      await engine.close();
      await broker.close();
      await emu.close();
      await deletePrefix(prefix);
      await b.drop();
    }
  },
};

/** Rows the emulator's records call for in each table (commits from the window's start). */
function expectedRows(data: OrgData, since: number): Record<(typeof TABLES)[number], number> {
  const out = { work_items: 0, work_item_comments: 0, pull_requests: 0, pull_request_reviews: 0, commits: 0 };
  for (const repo of data.repos) {
    for (const item of repo.items) {
      if (item.pull) {
        out.pull_requests++;
        out.pull_request_reviews += item.pull.reviews.length;
      } else out.work_items++;
    }
    out.work_item_comments += repo.comments.filter((c) => !c.item.pull).length;
    out.commits += repo.commits.filter((c) => c.date >= since).length;
  }
  return out;
}

async function report(
  db: Db,
  emu: GithubEmulator,
  integrationId: string,
  r: { status: string; wallMs: number; cpuMs: number; units: number; since: number },
): Promise<ScenarioResult> {
  const ok = emu.log.filter((l) => l.status >= 200 && l.status < 300).length;
  const perWindow = new Map<string, number>();
  for (const l of emu.log) {
    if (l.status !== 403 && l.status !== 429) continue;
    const key = `${l.tokenId ?? '-'} ${String(l.rate.reset)}`;
    perWindow.set(key, (perWindow.get(key) ?? 0) + 1);
  }
  const expected = expectedRows(emu.data, r.since);
  const stored: Record<string, number> = {};
  let duplicates = 0;
  let missing = 0;
  for (const table of TABLES) {
    const { rows } = await db.query<{ n: number; keys: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT external_id)::int AS keys
         FROM ${db.schema.table(table)} WHERE integration_id = $1`,
      [integrationId],
    );
    stored[table] = rows[0]!.n;
    duplicates += rows[0]!.n - rows[0]!.keys;
    missing += Math.abs(expected[table] - rows[0]!.keys);
  }
  const items = Object.values(stored).reduce((a, b) => a + b, 0);
  const minimumMs = (ok / emu.rateLimit.limit) * emu.rateLimit.windowSeconds * 1000;
  const ratio = round(r.wallMs / minimumMs);
  const maxLimited = Math.max(0, ...perWindow.values());
  const { rows: waits } = await db.query<{ deferrals: number }>(
    `SELECT coalesce(sum(rate_limit_deferrals), 0)::int AS deferrals FROM ${db.schema.sync_run_units}
      WHERE integration_id = $1`,
    [integrationId],
  );
  const deferrals = waits[0]!.deferrals;
  return {
    scenario: 'github_rate_limited_sync',
    status: r.status,
    units: r.units,
    rate_limit: `${emu.rateLimit.limit}/${emu.rateLimit.windowSeconds}s`,
    requests_needed: ok,
    requests_total: emu.log.length,
    limit_responses: [...perWindow.values()].reduce((a, b) => a + b, 0),
    max_limit_responses_per_window: maxLimited,
    wall_s: round(r.wallMs / 1000),
    requests_per_s: round(ok / (r.wallMs / 1000)),
    // This process's CPU (engine, provider, sink and the emulator) per answered request: on a busy
    // machine, whether the run was bound by CPU rather than by the budget.
    cpu_ms_per_request: round(r.cpuMs / Math.max(1, ok)),
    minimum_s: round(minimumMs / 1000),
    // Units deferred to a reset (a limit answer or an exhausted shared budget): none means the
    // budget never bound the run, and the ratio then measures this machine, not the scheduling.
    rate_limit_deferrals: deferrals,
    budget_bound: deferrals > 0,
    rows: stored,
    requests_per_item: round(ok / Math.max(1, items)),
    duplicate_rows: duplicates,
    rows_off_from_emulator: missing,
    ratio,
    target: '<= 1.15 (wall ÷ requests needed ÷ R × window); <= 1 limit response per window; 0 duplicates',
    met: r.status === 'success' && ratio <= 1.15 && maxLimited <= 1 && duplicates === 0 && missing === 0,
  };
}

/** Deletes `n` issues (pull requests cannot be) spread over the organisation; returns their store keys. */
function deleteIssues(emu: GithubEmulator, n: number): string[] {
  const issues = emu.data.repos.flatMap((repo) =>
    repo.items.filter((i) => !i.pull && !i.deletedAt).map((i) => ({ repo, i })),
  );
  return spread(issues, n).map(({ repo, i }) => {
    emu.edit.remove(i.number, repo);
    return `${emu.data.org.login}/${repo.name}#${i.number}`;
  });
}
