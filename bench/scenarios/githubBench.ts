/**
 * The GitHub benchmark's emulated organisation and budget (github.ts), and the emulator as the
 * provider benchmarks' driver sees it (the verify scenario runs it so).
 */
import { createGithubProvider } from '../../src/providers/github/index.js';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { workItemMetricsHandler } from '../../src/sinks/normalized/index.js';
import { pathKind, tallyKinds, type Budget, type BenchEmulator, type ProviderBench } from '../lib/providerBench.js';
import { spread } from '../lib/verify.js';

export const GITHUB_DATASETS = ['work-items', 'work-item-comments', 'pull-requests', 'pull-request-reviews', 'commits'];
/** Units at once: enough that requests in flight, not the per-request round trip, meet the budget. */
export const GITHUB_CONCURRENCY = 32;

/** Full: the `bench` preset at 1,200 requests per 60 s. Quick: a small organisation, same shape. */
export function githubSizes(quick: boolean) {
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

export function startGithub(quick: boolean, rate: Budget): Promise<GithubEmulator> {
  return startGithubEmulator({ scale: githubSizes(quick).scale, rateLimit: rate, seed: 5, logLimit: 1_000_000 });
}

export function githubBench(quick: boolean): ProviderBench {
  return {
    name: 'github',
    scenario: 'github_rate_limited_sync',
    provider: (outbound) => createGithubProvider({ postSyncHandlers: [workItemMetricsHandler], outbound }),
    datasets: GITHUB_DATASETS,
    family: [],
    days: quick ? 20 : 365,
    concurrency: GITHUB_CONCURRENCY,
    nominal: githubSizes(quick).rate,
    fixedBudget: true,
    start: async (budget) => githubView(await startGithub(quick, budget)),
  };
}

/** Limit answers (403/429) per credential and window. */
export function githubLimitsPerWindow(emu: GithubEmulator): number[] {
  const perWindow = new Map<string, number>();
  for (const l of emu.log) {
    if (l.status !== 403 && l.status !== 429) continue;
    const key = `${l.tokenId ?? '-'} ${String(l.rate.reset)}`;
    perWindow.set(key, (perWindow.get(key) ?? 0) + 1);
  }
  return [...perWindow.values()];
}

function githubView(emu: GithubEmulator): BenchEmulator {
  const answered = () => emu.log.filter((l) => l.status >= 200 && l.status < 300).length;
  const repos = emu.data.repos;
  const issues = repos.reduce((n, r) => n + r.items.filter((i) => !i.pull).length, 0);
  return {
    url: emu.url,
    token: emu.token,
    sources: repos.map((r) => `${emu.data.org.login}/${r.name}`),
    config: { baseUrl: emu.url },
    issues,
    items: repos.reduce((n, r) => n + r.items.length, 0),
    expected: {
      work_items: issues,
      work_item_comments: repos.reduce((n, r) => n + r.comments.filter((c) => !c.item.pull).length, 0),
    },
    ok: answered,
    total: () => emu.log.length,
    requestKinds: () => tallyKinds(emu.log.map((l) => pathKind(l.path))),
    limitsPerWindow: () => githubLimitsPerWindow(emu),
    deleteIssues: (n) => deleteGithubIssues(emu, n),
    setBudget: (budget) => emu.setRateLimit(budget),
    freshWindowAt: (now) => githubFreshWindowAt(emu, now),
    close: () => emu.close(),
  };
}

/**
 * GitHub's window starts with the first request after the previous one ended: fresh now when
 * `GET /rate_limit` (which spends nothing) shows nothing used, else at the running window's reset.
 */
async function githubFreshWindowAt(emu: GithubEmulator, now: number): Promise<number> {
  const res = await fetch(`${emu.url}/rate_limit`, { headers: { authorization: `Bearer ${emu.token}` } });
  if (!res.ok) throw new Error(`GET /rate_limit answered ${res.status}`);
  const { resources } = (await res.json()) as { resources: { core: { used: number; reset: number } } };
  return resources.core.used === 0 ? now : Math.max(now, resources.core.reset * 1000);
}

/** Deletes `n` issues (pull requests cannot be) spread over the organisation; returns their store keys. */
export function deleteGithubIssues(emu: GithubEmulator, n: number): string[] {
  const issues = emu.data.repos.flatMap((repo) =>
    repo.items.filter((i) => !i.pull && !i.deletedAt).map((i) => ({ repo, i })),
  );
  return spread(issues, n).map(({ repo, i }) => {
    emu.edit.remove(i.number, repo);
    return `${emu.data.org.login}/${repo.name}#${i.number}`;
  });
}
