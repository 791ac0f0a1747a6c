/**
 * 6. GitHub under a rate limit: a backfill of an emulated organisation (the emulator's `bench`
 * preset: 4 repositories, 20,000 issues, 5,000 pull requests with comments and reviews, a year of
 * activity) through the GitHub provider, the budget enforced by the emulator at R requests per
 * window. A worker (concurrency 32) and the reconciler run in this process on PostgreSQL + Redis.
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
import type { GithubEmulator, OrgData } from '../../src/emulators/github/index.js';
import type { Db } from '../../src/db/types.js';
import { overlapCost } from '../lib/incremental.js';
import { withProviderEngine, type Ctx } from '../lib/providerRuns.js';
import { round } from '../lib/stats.js';
import { runTerminal } from '../lib/terminal.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';
import { githubBench, githubLimitsPerWindow, githubSizes, startGithub } from './githubBench.js';

const ORG = 'org-bench-github';
const DAY_MS = 86_400_000;
const TABLES = ['work_items', 'work_item_comments', 'pull_requests', 'pull_request_reviews', 'commits'] as const;

export const githubScenario: Scenario = {
  name: 'github',
  run: (opts: BenchOptions) => withProviderEngine(githubBench(opts.quick), opts, budgetedRun),
};

/** The budgeted backfill, then the two incrementals; one result line. */
async function budgetedRun(c: Ctx): Promise<ScenarioResult[]> {
  const { engine, db, opts, bench } = c;
  const rate = githubSizes(opts.quick).rate;
  const emu = await startGithub(opts.quick, rate);
  try {
    const integration = await engine.createIntegration({
      orgId: ORG,
      provider: 'github',
      name: 'bench',
      sources: emu.data.repos.map((r) => `${emu.data.org.login}/${r.name}`),
      datasets: [...bench.datasets],
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
    opts.note(`github: ${run.units} units, ${rate.limit} requests per ${rate.windowSeconds} s`);
    const status = await runTerminal(db, run.syncRunId, {
      label: 'github',
      timeoutMs: 2_400_000,
      noteEveryMs: 5000,
      note: opts.note,
    });
    const wallMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const result = await report(db, emu, integration.id, {
      status,
      wallMs,
      cpuMs,
      units: run.units,
      since: since.getTime(),
    });
    const answered = () => emu.log.filter((l) => l.status >= 200 && l.status < 300).length;
    const target = { engine, db, orgId: ORG, integrationId: integration.id, answered, note: opts.note };
    return [{ ...result, ...(await overlapCost(target, 'github')) }];
  } finally {
    await emu.close();
  }
}

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
  const perWindow = githubLimitsPerWindow(emu);
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
  const maxLimited = Math.max(0, ...perWindow);
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
    limit_responses: perWindow.reduce((a, b) => a + b, 0),
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
