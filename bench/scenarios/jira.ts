/**
 * 8. Jira under a rate limit: a backfill of an emulated Jira Cloud site (the emulator's `bench`
 * preset: 4 projects, 20,000 issues with comments and changelogs, 40 of them longer than a search
 * embeds, a year of activity) through the Jira provider, in the same three phases as the Linear
 * scenario (linear.ts): the family backfilled unthrottled (the capacity of this shared, loaded
 * machine), each family member backfilled alone (one unit per dataset), then every dataset under R
 * requests per window, R lowered to half the measured capacity when the machine is slower.
 *
 * The emulator ends a budget window on a whole minute: a 59 s window that starts on a minute's
 * start lasts 60 s, so the budget enforced is R per 60 s and the minimum is requests needed ÷ R ×
 * 60 s; the budgeted run (full size) is triggered on a whole minute so its first window is a whole one too.
 * What a verify run costs under the same budget is the verify scenario's (verify.ts).
 * `work-item-labels` has no unit of its own (the labels arrive on the issues): the per-dataset
 * figure is the sum of work-items, work-item-comments and work-item-history alone.
 */
import { createJiraProvider } from '../../src/providers/jira/index.js';
import { startJiraEmulator, type JiraEmulator } from '../../src/emulators/jira/index.js';
import { workItemMetricsHandler } from '../../src/sinks/normalized/index.js';
import { pathKind, RESERVE, tallyKinds, type BenchEmulator, type ProviderBench } from '../lib/providerBench.js';
import type { Scenario } from '../lib/types.js';
import { spread } from '../lib/verify.js';
import { runProviderBench } from './linear.js';

const MINUTE_MS = 60_000;
const DATASETS = [
  'projects',
  'members',
  'sprints',
  'boards',
  'work-items',
  'work-item-comments',
  'work-item-history',
  'work-item-labels',
];
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history'];

export function jiraBench(quick: boolean): ProviderBench {
  const scale = quick
    ? { projects: 2, issues: 600, users: 8, maxComments: 4, maxHistories: 3, longLists: 4, sprints: 4, days: 30 }
    : 'bench';
  return {
    name: 'jira',
    scenario: 'jira_rate_limited_sync',
    provider: (outbound) =>
      createJiraProvider({ postSyncHandlers: [workItemMetricsHandler], budget: { reserve: RESERVE }, outbound }),
    datasets: DATASETS,
    family: FAMILY,
    days: quick ? 30 : 365,
    nominal: quick ? { limit: 30, windowSeconds: 59 } : { limit: 150, windowSeconds: 59 },
    enforcedWindowSeconds: 60,
    startOnMinute: !quick,
    async start(budget) {
      const emu = await startJiraEmulator({ scale, seed: 8, rateLimit: budget, logLimit: 1_000_000 });
      return jiraView(emu);
    },
  };
}

function jiraView(emu: JiraEmulator): BenchEmulator {
  const log = emu.requestLog;
  const issues = emu.data.projects.flatMap((p) => p.issues);
  return {
    url: emu.url,
    token: emu.token,
    sources: emu.data.projects.map((p) => p.key),
    config: { siteUrl: emu.url },
    issues: issues.length,
    expected: {
      work_items: issues.length,
      work_item_comments: issues.reduce((n, i) => n + i.comments.length, 0),
    },
    ok: () => log.filter((l) => l.status >= 200 && l.status < 300).length,
    total: () => log.length,
    requestKinds: () => tallyKinds(log.map((l) => pathKind(l.path))),
    limitsPerWindow: () => limitsPerWindow(emu),
    deleteIssues: (n) => spread(issues, n).map((i) => (emu.deleteIssue(i.id), i.id)),
    setBudget: (budget) => emu.setRateLimit(budget),
    // A fresh window opens with the first request after the running one ended, on a whole minute
    // (its end is one too): then it lasts whole minutes from its very start.
    freshWindowAt: (now) =>
      Promise.resolve(Math.ceil(Math.max(now, emu.quotaWindowEnd() ?? now) / MINUTE_MS) * MINUTE_MS),
    close: () => emu.close(),
  };
}

/**
 * 429s per budget window, the windows replayed from the log as the emulator opens them: the first
 * authenticated request at or after a window's end opens the next, ending on the whole minute at
 * or after its start + windowSeconds.
 */
function limitsPerWindow(emu: JiraEmulator): number[] {
  const counts: number[] = [];
  let resetAt = -Infinity;
  for (const l of emu.requestLog) {
    if (l.auth === null) continue;
    const t = Date.parse(l.at);
    if (t >= resetAt) {
      resetAt = Math.ceil((t + emu.rateLimit.windowSeconds * 1000) / MINUTE_MS) * MINUTE_MS;
      counts.push(0);
    }
    if (l.status === 429) counts[counts.length - 1]!++;
  }
  return counts.filter((n) => n > 0);
}

export const jiraScenario: Scenario = {
  name: 'jira',
  run: (opts) => runProviderBench(jiraBench(opts.quick), opts),
};
