/**
 * 7. Linear under a rate limit: a backfill of an emulated workspace (the emulator's `bench` preset:
 * 4 teams, 20,000 issues with comments, history and labels, a year of activity) through the Linear
 * provider, on PostgreSQL + Redis with a worker (concurrency 8) and the reconciler in this process.
 *
 * Three phases, each on an integration of its own:
 * 1. Capacity: the work-item family (work-items, -comments, -history, -labels) backfilled against
 *    the emulator with no effective budget: the requests per second the sync reaches on this
 *    (shared, loaded) machine. Its units carry the family (`sync_run_units.carried_datasets`).
 * 2. One unit per dataset: each member backfilled alone (a run per dataset), still unthrottled:
 *    requests per issue without family fetching.
 * 3. Budgeted: every dataset (reference tier and family) against an emulator enforcing R requests
 *    per window (complexity budget out of the way, so the request budget is the one that binds).
 *    R is the nominal figure, lowered to half the capacity of phase 1 when the machine is slower:
 *    the run is bound by the budget, not by CPU, and `budget_share_of_capacity` (R/window ÷ the
 *    unthrottled rate) says by how much (`budget_binds` when ≤ 0.5).
 * Between 1 and 2, two incrementals of the family integration (bench/lib/incremental.ts): the
 * first reads its initial depth, the second, over unchanged data, only its window's overlap with the
 * first — `incremental_unchanged`, the overlap's cost in requests and items read.
 *
 * Requests needed = the emulator's 2xx answers; the theoretical minimum is requests needed ÷ R ×
 * window; ratio = wall time (trigger → run terminal) ÷ that minimum (target ≤ 1.15). Also: the
 * most limit responses in one window (target ≤ 1), requests per issue with family fetching and per
 * dataset, and duplicates (per normalized table count(*) − count(DISTINCT external_id), over all
 * three integrations) with the stored work items and comments against the emulator's records.
 * `requests_beyond_unthrottled` and `ratio_to_unthrottled_minimum` (wall ÷ the unthrottled family
 * run's requests ÷ R × window) show what `ratio` hides: pages read again when a unit deferred by
 * the budget part-way through its window starts that window over. What a verify run costs under
 * the same budget is the verify scenario's (verify.ts).
 */
import type { Db } from '../../src/db/types.js';
import {
  LINEAR_EMULATED_DATASETS,
  startLinearEmulator,
  type LinearEmulator,
} from '../../src/emulators/linear/index.js';
import { createLinearProvider } from '../../src/providers/linear/index.js';
import { workItemMetricsHandler } from '../../src/sinks/normalized/index.js';
import { overlapCost } from '../lib/incremental.js';
import {
  bindingLimit,
  enforcedWindow,
  RESERVE,
  tallyKinds,
  UNLIMITED,
  type BenchEmulator,
  type ProviderBench,
} from '../lib/providerBench.js';
import { backfill, integrate, orgOf, withProviderEngine, type Ctx, type Phase } from '../lib/providerRuns.js';
import { round } from '../lib/stats.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';
import { spread } from '../lib/verify.js';

const LINEAR_FAMILY = ['work-items', 'work-item-comments', 'work-item-history', 'work-item-labels'];
const TABLES = ['work_items', 'work_item_comments', 'work_item_events'] as const;

export function linearBench(quick: boolean): ProviderBench {
  const scale = quick
    ? { teams: 2, issues: 600, users: 8, projects: 4, cycles: 4, maxComments: 4, maxLabels: 3, days: 30 }
    : ('bench' as const);
  return {
    name: 'linear',
    scenario: 'linear_rate_limited_sync',
    provider: (outbound) =>
      createLinearProvider({ postSyncHandlers: [workItemMetricsHandler], budget: { reserve: RESERVE }, outbound }),
    datasets: LINEAR_EMULATED_DATASETS,
    family: LINEAR_FAMILY,
    days: quick ? 30 : 365,
    nominal: quick ? { limit: 20, windowSeconds: 4 } : { limit: 40, windowSeconds: 4 },
    async start(budget) {
      const emu = await startLinearEmulator({
        scale,
        seed: 7,
        logLimit: 1_000_000,
        rateLimit: { requests: budget, complexity: { limit: 1_000_000_000, windowSeconds: budget.windowSeconds } },
      });
      return linearView(emu);
    },
  };
}

function linearView(emu: LinearEmulator): BenchEmulator {
  const log = emu.requestLog;
  return {
    url: emu.url,
    token: emu.token,
    sources: emu.data.teams.map((t) => t.key),
    config: { apiUrl: emu.url },
    issues: emu.data.issues.length,
    expected: {
      work_items: emu.data.issues.length,
      work_item_comments: emu.data.issues.reduce((n, i) => n + i.comments.length, 0),
    },
    ok: () => log.filter((l) => l.status >= 200 && l.status < 300 && l.errorCode === null).length,
    total: () => log.length,
    requestKinds: () => tallyKinds(log.map((l) => l.operation ?? '(none)')),
    limitsPerWindow() {
      const per = new Map<string, number>();
      for (const l of log) {
        if (l.errorCode !== 'RATELIMITED' && l.status !== 429) continue;
        const key = `${l.keyId ?? '-'} ${String(l.requests?.reset)}`;
        per.set(key, (per.get(key) ?? 0) + 1);
      }
      return [...per.values()];
    },
    deleteIssues: (n) => spread(emu.data.issues, n).map((i) => (emu.deleteIssue(i.id), i.id)),
    setBudget: (budget) => emu.setRequestLimit(budget),
    freshWindowAt: (now) => Promise.resolve(linearFreshWindowAt(log, now)),
    close: () => emu.close(),
  };
}

/**
 * Linear's requests budget is a leaky bucket: a fresh window is a full bucket, due at the `reset`
 * the key's last request carried (when the bucket is full again if nothing more is spent).
 */
function linearFreshWindowAt(log: LinearEmulator['requestLog'], now: number): number {
  for (let k = log.length - 1; k >= 0; k--) {
    const requests = log[k]!.requests;
    if (requests) return Math.max(now, requests.reset);
  }
  return now;
}

export const linearScenario: Scenario = {
  name: 'linear',
  run: (opts) => runProviderBench(linearBench(opts.quick), opts),
};

/** The three phases on one engine and database; one result line. */
export function runProviderBench(bench: ProviderBench, opts: BenchOptions): Promise<ScenarioResult[]> {
  return withProviderEngine(bench, opts, async (c) => [await phases(c)]);
}

async function phases(c: Ctx): Promise<ScenarioResult> {
  const { bench, opts } = c;
  const free = await bench.start(UNLIMITED);
  let capacity: Phase;
  const perDataset: Record<string, number> = {};
  const integrations: string[] = [];
  let issues: number;
  let overlap: Awaited<ReturnType<typeof overlapCost>>;
  try {
    issues = free.issues;
    const fam = await integrate(c, free, 'family', bench.family);
    integrations.push(fam);
    capacity = await backfill(c, free, fam, 'capacity (unthrottled, family)');
    const orgId = orgOf(c, 'family');
    const target = { engine: c.engine, db: c.db, orgId, integrationId: fam, answered: free.ok, note: opts.note };
    overlap = await overlapCost(target, bench.name);
    const alone = await integrate(c, free, 'alone', bench.family);
    integrations.push(alone);
    for (const d of bench.family) {
      perDataset[d] = (await backfill(c, free, alone, `unthrottled, ${d} alone`, [d])).requests;
    }
  } finally {
    await free.close();
  }
  const capacityRate = capacity.requests / (capacity.wallMs / 1000);
  const w = enforcedWindow(bench);
  const limit = bindingLimit(bench, capacityRate);
  opts.note(`${bench.name}: unthrottled ${round(capacityRate)} requests/s; budget ${limit} per ${w} s`);
  const emu = await bench.start({ limit, windowSeconds: bench.nominal.windowSeconds });
  if (bench.startOnMinute) await new Promise((r) => setTimeout(r, 60_000 - (Date.now() % 60_000) + 20));
  try {
    const id = await integrate(c, emu, 'budgeted', bench.datasets);
    integrations.push(id);
    const cpuBefore = process.cpuUsage();
    const budgeted = await backfill(c, emu, id, `budget ${limit}/${w}s`);
    const cpu = process.cpuUsage(cpuBefore);
    const rows = await tableRows(c.db, id);
    const duplicates = (await Promise.all(integrations.map((i) => duplicatesOf(c.db, i)))).reduce((a, n) => a + n, 0);
    const missing =
      Math.abs(emu.expected.work_items - rows.work_items.keys) +
      Math.abs(emu.expected.work_item_comments - rows.work_item_comments.keys);
    const minimumMs = (budgeted.requests / limit) * w * 1000;
    const ratio = round(budgeted.wallMs / minimumMs);
    const limits = emu.limitsPerWindow();
    const maxLimited = Math.max(0, ...limits);
    const total = emu.total();
    const share = limit / w / capacityRate;
    const perDatasetTotal = Object.values(perDataset).reduce((a, n) => a + n, 0);
    return {
      scenario: bench.scenario,
      status: budgeted.status,
      issues,
      units: budgeted.units,
      units_carrying_family: budgeted.carried,
      rate_limit: `${limit}/${w}s`,
      rate_limit_nominal: `${bench.nominal.limit}/${w}s`,
      ...(bench.enforcedWindowSeconds ? { emulator_window_s: bench.nominal.windowSeconds } : {}),
      unthrottled_requests_per_s: round(capacityRate),
      unthrottled_note: 'family backfill with no budget, measured in this process in this run',
      budget_share_of_capacity: round(share),
      budget_binds: share <= 0.5,
      requests_needed: budgeted.requests,
      requests_total: total,
      limit_responses: limits.reduce((a, n) => a + n, 0),
      max_limit_responses_per_window: maxLimited,
      wall_s: round(budgeted.wallMs / 1000),
      minimum_s: round(minimumMs / 1000),
      // Answered requests beyond what the unthrottled family run needed (that run has no reference
      // units: a handful of these are theirs); the rest were read again after a unit was deferred.
      requests_beyond_unthrottled: budgeted.requests - capacity.requests,
      ratio_to_unthrottled_minimum: round(budgeted.wallMs / ((capacity.requests / limit) * w * 1000)),
      requests_per_s: round(budgeted.requests / (budgeted.wallMs / 1000)),
      ...overlap,
      cpu_ms_per_request: round((cpu.user + cpu.system) / 1000 / Math.max(1, budgeted.requests)),
      family_requests: capacity.requests,
      family_requests_per_issue: round(capacity.requests / issues),
      per_dataset_requests: perDataset,
      per_dataset_requests_per_issue: round(perDatasetTotal / issues),
      family_saving: round(perDatasetTotal / Math.max(1, capacity.requests)),
      rows: Object.fromEntries(TABLES.map((t) => [t, rows[t].n])),
      duplicate_rows: duplicates,
      rows_off_from_emulator: missing,
      ratio,
      target:
        '<= 1.15 (wall ÷ requests needed ÷ R × window), budget binding (R/window <= half the unthrottled rate); ' +
        '<= 1 limit response per window; 0 duplicates',
      met:
        budgeted.status === 'success' &&
        ratio <= 1.15 &&
        share <= 0.5 &&
        maxLimited <= 1 &&
        duplicates === 0 &&
        missing === 0,
    };
  } finally {
    await emu.close();
  }
}

type Counts = Record<(typeof TABLES)[number], { n: number; keys: number }>;

async function tableRows(db: Db, integrationId: string): Promise<Counts> {
  const out = {} as Counts;
  for (const table of TABLES) {
    const { rows } = await db.query<{ n: number; keys: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT external_id)::int AS keys
         FROM ${db.schema.table(table)} WHERE integration_id = $1`,
      [integrationId],
    );
    out[table] = rows[0]!;
  }
  return out;
}

async function duplicatesOf(db: Db, integrationId: string): Promise<number> {
  const rows = await tableRows(db, integrationId);
  return Object.values(rows).reduce((a, r) => a + r.n - r.keys, 0);
}
