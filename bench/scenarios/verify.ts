/**
 * 9. What a verify run costs, per provider (Jira, Linear, GitHub), under the provider benchmark's
 * binding budget, on its emulator at the same size (jira.ts, linear.ts, github.ts): a verify of the
 * unchanged source (requests per item; nothing to find), then one after 0.5 % of the issues was
 * deleted at the provider and 0.5 % lost from the store (each found). One line per provider.
 *
 * The store is filled by a real backfill of every dataset against the emulator with no effective
 * budget. A verify of the unchanged store then runs with no budget: its pace sets the budget R per
 * window (`verifyBudget`: at most the nominal rate, at most half that pace; a window of at least
 * 200 requests where the emulator lets it be set, Jira's whole minutes where not). The emulator
 * enforces R per window (its budget replaced at run time), and each verify run is triggered at the
 * start of a fresh window of that budget, waited for outside the timed part (bench/lib/verify.ts;
 * under `--quick` only for windows of 10 s or less: longer ones would add minutes to the smoke run
 * for ratios that mean nothing at that size).
 *
 * The measured runs verify the work-item families (issues, pull requests, their comments); the
 * reference datasets the bench syncs and a provider verifies (Jira's members and sprints: a fixed
 * cost per source, whatever the items) are verified once before them, unbudgeted, and reported
 * apart.
 *
 * ratio = the larger of the two runs' wall ÷ (requests ÷ R × window) (target ≤ 1.15); requests
 * per item of the unchanged verify ≤ 0.011 for GitHub and Jira, ≤ 0.021 for Linear.
 */
import {
  enforcedWindow,
  freshWindow,
  UNLIMITED,
  type BenchEmulator,
  type ProviderBench,
} from '../lib/providerBench.js';
import { backfill, integrate, orgOf, withProviderEngine, type Ctx, type Phase } from '../lib/providerRuns.js';
import { round } from '../lib/stats.js';
import type { BenchOptions, Scenario, ScenarioResult } from '../lib/types.js';
import { unthrottledVerify, verifyCost } from '../lib/verify.js';
import { githubBench } from './githubBench.js';
import { jiraBench } from './jira.js';
import { linearBench } from './linear.js';

const BENCHES: readonly ((quick: boolean) => ProviderBench)[] = [jiraBench, linearBench, githubBench];
/** Requests per item of a verify over unchanged data, at most. */
const PER_ITEM_TARGET: Readonly<Record<string, number>> = { github: 0.011, jira: 0.011, linear: 0.021 };
const RATIO_TARGET = 1.15;

export const verifyScenario: Scenario = {
  name: 'verify',
  async run(opts: BenchOptions): Promise<ScenarioResult[]> {
    const lines: ScenarioResult[] = [];
    for (const bench of BENCHES) lines.push(await withProviderEngine(bench(opts.quick), opts, measure));
    return lines;
  },
};

async function measure(c: Ctx): Promise<ScenarioResult> {
  const emu = await c.bench.start(UNLIMITED);
  try {
    const id = await integrate(c, emu, 'verify', c.bench.datasets);
    const fill = await backfill(c, emu, id, 'filling the store (unthrottled)');
    if (fill.status !== 'success')
      throw new Error(`${c.bench.name}: the backfill filling the store ended ${fill.status}`);
    // The store just filled has no statistics yet where autovacuum is off (as on the CI machines):
    // its planner would then walk every comment of the source for each batch a verify compares.
    // Analyzed as autovacuum does a table this size within a minute of the fill.
    await c.db.query('ANALYZE');
    const kinds = emu.requestKinds ? { requestKinds: () => emu.requestKinds!() } : {};
    const base = { engine: c.engine, db: c.db, orgId: orgOf(c, 'verify'), integrationId: id, requests: emu.total };
    const { family, reference } = verifiedDatasets(c);
    // The reference datasets' verify (members, sprints: a fixed cost per source, whatever the items), unbudgeted.
    const ref =
      reference.length === 0
        ? null
        : await unthrottledVerify(
            { ...base, ...kinds, datasets: reference, note: c.opts.note },
            `${c.bench.name}: verify of ${reference.join(', ')}`,
          );
    const free = await unthrottledVerify(
      { ...base, ...kinds, datasets: family, note: c.opts.note },
      `${c.bench.name}: verify (unthrottled)`,
    );
    const verifyRate = free.requests / Math.max(0.001, free.wallMs / 1000);
    const budget = verifyBudget(c.bench, verifyRate);
    emu.setBudget({ limit: budget.limit, windowSeconds: budget.windowSeconds });
    const pace = `${round(verifyRate)} requests/s`;
    c.opts.note(`${c.bench.name}: verify unthrottled ${pace}; verify under ${budget.limit} per ${budget.w} s`);
    const verify = await verifyCost(
      {
        ...base,
        ...kinds,
        datasets: family,
        note: c.opts.note,
        items: emu.items ?? emu.issues,
        limit: budget.limit,
        windowMs: budget.w * 1000,
        deleteAtProvider: (n) => emu.deleteIssues(n),
        freshWindow: () => (alignWindows(c, budget.w) ? freshWindow(emu) : Promise.resolve()),
      },
      c.bench.name,
    );
    return line(c.bench, emu, { fill, free, verifyRate, ref, ...budget }, verify);
  } finally {
    await emu.close();
  }
}

/**
 * The bench's datasets a verify covers: the work-item families (what the per-item figures are of)
 * and the reference datasets (members, sprints: verified in a run of their own, unbudgeted).
 */
function verifiedDatasets(c: Ctx): { family: string[]; reference: string[] } {
  const specs = c.engine.ctx.registry.get(c.bench.name).datasets;
  const verified = specs.filter((s) => s.verifies === true && c.bench.datasets.includes(s.key));
  const keys = (tier: string) => verified.filter((s) => s.tier === tier).map((s) => s.key);
  return { family: keys('work_item'), reference: keys('reference') };
}

/**
 * Requests a budget window holds at least, where the emulator lets the window be set: the engine
 * keeps back a reserve of 1 % of a window, at least 10 requests (kit/budget.ts `reserveFor`), so
 * in a window of 200 it is 5 % — in GitHub's 5,000 an hour it is 1 %. Smaller windows measure
 * mostly the reserve, a share no real budget has.
 */
const VERIFY_WINDOW_MIN_REQUESTS = 200;
/** The longest budget window a verify is measured under where the emulator lets it be set. */
const VERIFY_WINDOW_MAX_S = 60;

/**
 * The budget the verify runs are measured under: R per window `w`, at most the nominal rate and at
 * most half of what the verify reached unthrottled, so the budget, not the listing's own pace (one
 * page after another per source), bounds the run. Where the emulator lets the window be set, it is
 * the shortest that holds VERIFY_WINDOW_MIN_REQUESTS at that rate (at most 60 s), so a run of a few
 * hundred requests spans more than one window (within one a budget cannot bind: it lets them all
 * through at once) while the reserve stays a small share of each.
 */
function verifyBudget(bench: ProviderBench, verifyRate: number): { limit: number; windowSeconds: number; w: number } {
  const nominalPerS = bench.nominal.limit / enforcedWindow(bench);
  const perS = Math.min(nominalPerS, 0.5 * verifyRate);
  const settable = Math.ceil(VERIFY_WINDOW_MIN_REQUESTS / Math.max(perS, 0.001));
  const windowSeconds = bench.enforcedWindowSeconds
    ? bench.nominal.windowSeconds
    : Math.min(Math.max(settable, 1), VERIFY_WINDOW_MAX_S);
  const w = bench.enforcedWindowSeconds ?? windowSeconds;
  const limit = Math.max(1, Math.floor(perS * w));
  return { limit, windowSeconds, w };
}

/** Windows this long are not waited for under `--quick`: its ratios mean nothing, its run time does (the CI smoke). */
const QUICK_ALIGN_MAX_WINDOW_S = 10;

/** Whether each verify run waits for a fresh window (always at full size). */
function alignWindows(c: Ctx, windowS: number): boolean {
  return !c.opts.quick || windowS <= QUICK_ALIGN_MAX_WINDOW_S;
}

type Verify = Awaited<ReturnType<typeof verifyCost>>;
type Free = Awaited<ReturnType<typeof unthrottledVerify>>;

function line(
  bench: ProviderBench,
  emu: BenchEmulator,
  b: { fill: Phase; free: Free; ref: Free | null; verifyRate: number; limit: number; w: number },
  v: Verify,
): ScenarioResult {
  const share = b.limit / b.w / b.verifyRate;
  const ratio = Math.max(v.verify_unchanged.ratio, v.verify_one_percent.ratio);
  const perItem = PER_ITEM_TARGET[bench.name]!;
  const refOk = b.ref === null || b.ref.status === 'success';
  const success = refOk && v.verify_unchanged.status === 'success' && v.verify_one_percent.status === 'success';
  return {
    scenario: `verify_${bench.name}`,
    status: success ? 'success' : `${v.verify_unchanged.status}/${v.verify_one_percent.status}`,
    issues: emu.issues,
    items: emu.items ?? emu.issues,
    rate_limit: `${b.limit}/${b.w}s`,
    rate_limit_nominal: `${bench.nominal.limit}/${enforcedWindow(bench)}s`,
    ...(bench.enforcedWindowSeconds ? { emulator_window_s: bench.nominal.windowSeconds } : {}),
    fill: { requests: b.fill.requests, wall_s: round(b.fill.wallMs / 1000), units: b.fill.units },
    verify_unthrottled: {
      status: b.free.status,
      requests: b.free.requests,
      wall_s: round(b.free.wallMs / 1000),
      requests_per_s: round(b.verifyRate),
    },
    reference_verify:
      b.ref === null
        ? null
        : {
            status: b.ref.status,
            requests: b.ref.requests,
            wall_s: round(b.ref.wallMs / 1000),
            counts: b.ref.counts,
            requests_by_kind: b.ref.requests_by_kind,
          },
    unthrottled_note: 'a verify of the unchanged store with no budget, in this process in this run',
    budget_share_of_capacity: round(share),
    budget_binds: share <= 0.5,
    ...v,
    ratio,
    target:
      `<= ${RATIO_TARGET} (each verify: wall ÷ requests ÷ R × window); <= ${perItem} requests per unchanged item; ` +
      'nothing found in unchanged data; every deletion and loss found',
    met:
      success &&
      ratio <= RATIO_TARGET &&
      v.verify_unchanged.requests_per_item <= perItem &&
      v.verify_unchanged.nothing_found &&
      v.verify_one_percent.found_all,
  };
}
