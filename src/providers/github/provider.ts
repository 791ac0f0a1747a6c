/**
 * The GitHub provider (`github`): one repository (`owner/repo`) per source, read through the REST API
 * (github.com or GitHub Enterprise Server) and written onto the normalized surfaces.
 *
 * Datasets (cross-provider keys): reference `repositories`, `members` (assignable users); work-item
 * family `work-items` (issues, labels and assignees included), `work-item-comments`,
 * `work-item-history` (issue events), `work-item-labels` (labels arrive on the issues: the
 * `work-items` unit writes them, this one calls nothing); git family `pull-requests`,
 * `pull-request-reviews`, `commits`.
 *
 * `work-items`, `pull-requests` and `pull-request-reviews` are all read from the repository's issues
 * list (issueList.ts), which lists pull requests too and has a `since`: a unit carrying several of
 * them (`UnitInfo.datasets`) reads each page once for all. A verify run (verify.ts) lists the same
 * list once for the three: issues are compared with `work_items`, pull requests with `pull_requests`.
 * Its unit of `work-item-comments` (verifyComments.ts) lists the repository's issue comments and
 * compares them with `work_item_comments`; its unit of `members` (verifyMembers.ts) lists each
 * repository's assignees and marks a member deleted only once GitHub answers 404 for the account.
 */
import type { DatasetSpec, Provider, UnitContext } from '../../sdk/types.js';
import type { BudgetLedger } from '../kit/budget.js';
import { datasetTable, specsOf } from '../kit/datasets.js';
import { rowScope } from '../kit/rows.js';
import { httpProvider, runUnit, type ProviderUnits } from '../kit/runner.js';
import type { HttpProviderOptions } from '../kit/unitScaffold.js';
import { budgetHolderOf, checkGithubCredential, clientAuth } from './auth.js';
import { createGithubClient, type GithubOctokit } from './client.js';
import { parseGithubConfig, repoOf, validateSource, type GithubConfig, type RepoRef } from './config.js';
import { githubSourceDiscovery } from './discovery.js';
import { withInstallation } from './installation.js';
import { GITHUB_SURFACE_HOOKS } from './starts.js';
import * as units from './units.js';
import { verifyIssueList } from './verify.js';
import { verifyComments } from './verifyComments.js';
import { verifyMembers } from './verifyMembers.js';

export const GITHUB_PROVIDER = 'github';

const { work, reference } = datasetTable<units.Job>('rest');

const DATASETS = [
  reference('repositories', ['repositories'], units.repositories),
  reference('members', ['members'], units.members, { verify: verifyMembers }),
  work('work-items', ['work_items'], units.readIssueList, { verify: verifyIssueList }),
  work('work-item-comments', ['work_item_comments'], units.workItemComments, { verify: verifyComments }),
  work('work-item-history', ['work_item_events'], units.workItemHistory),
  // Labels arrive on the issues: the work-items unit writes them.
  work('work-item-labels', [], null, { coveredBy: 'work-items' }),
  // Read from the same issues pages as work-items: planned with it, one unit reads each page once.
  // A verify of work-items lists the same pages: its unit carries these two as well (verify.ts).
  work('pull-requests', ['pull_requests'], units.readIssueList, { fetchedWith: 'work-items', verify: true }),
  work('pull-request-reviews', ['pull_request_reviews'], units.readIssueList, {
    fetchedWith: 'work-items',
    verify: true,
  }),
  work('commits', ['commits'], units.commits),
];

export const GITHUB_DATASETS: readonly DatasetSpec[] = specsOf(DATASETS);

export interface GithubProviderOptions extends HttpProviderOptions {
  /** Detail requests in flight at once within a unit. @default 4 */
  detailConcurrency?: number;
}

const GITHUB: ProviderUnits<GithubProviderOptions, GithubConfig, RepoRef, GithubOctokit, units.Job> = {
  name: GITHUB_PROVIDER,
  // List reads are served from replicas, and `updated_at` is GitHub's clock, not ours (docs/github.md).
  incrementalOverlapMs: 120_000,
  datasets: DATASETS,
  parseConfig: parseGithubConfig,
  sources: { validate: validateSource, of: repoOf },
  surfaceHooks: GITHUB_SURFACE_HOOKS,
  checkCredential: checkGithubCredential,
  budgetHolder: budgetHolderOf,
  client: ({ ctx, config, credential, budgetHolder, call, budget }) =>
    createGithubClient({
      ...call,
      baseUrl: config.baseUrl,
      auth: clientAuth(ctx, config, credential, call),
      throttleKey: `${ctx.unit.orgId}/${budgetHolder}`,
      budget: budget(),
    }),
  // One job per repository, each timed when it starts.
  *jobs({ ctx, opts, client, base }, repos) {
    for (const repo of repos) {
      const scope = { ...rowScope(ctx, GITHUB_PROVIDER), container: repo.full };
      yield { ...base, gh: client, repo, scope, detailConcurrency: opts.detailConcurrency ?? 4 };
    }
  },
};

/**
 * The GitHub provider, for the engine's registry. An App integration without `installationId` finds
 * its installation before a unit runs (installation.ts); one with `sources: "installation"` has its
 * sources found before a run is planned (discovery.ts).
 */
export function createGithubProvider(opts: GithubProviderOptions = {}): Provider {
  const provider = httpProvider(GITHUB, opts);
  return {
    ...provider,
    runUnit: async (ctx) => provider.runUnit(await withInstallation(ctx, opts)),
    sourceDiscovery: githubSourceDiscovery(opts),
  };
}

/** Runs one unit: the budget gates every call, and what it saw is recorded however the unit ends. */
export const runGithubUnit = async (ctx: UnitContext, opts: GithubProviderOptions = {}, ledger?: BudgetLedger) =>
  runUnit(GITHUB, await withInstallation(ctx, opts), opts, ledger);
