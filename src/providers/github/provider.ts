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
 * them (`UnitInfo.datasets`) reads each page once for all.
 */
import type { DatasetSpec, Provider, UnitContext, UnitResult } from '../../sdk/types.js';
import { BudgetLedger } from '../kit/budget.js';
import { createGithubClient } from './client.js';
import { parseGithubConfig, repoOf, validateSource, type RepoRef } from './config.js';
import * as units from './units.js';
import {
  combineResults,
  credentialOf,
  datasetOf,
  recordBudgetsQuietly,
  sourcesOf,
  subjectOf,
  unitBudget,
  httpProvider,
  type HttpProviderOptions,
} from '../kit/unitScaffold.js';

export const GITHUB_PROVIDER = 'github';

const LONG_WINDOW_DAYS = 36_500;

type Runner = (job: units.Job) => Promise<UnitResult>;

interface DatasetDef {
  spec: DatasetSpec;
  /** null: the dataset's data arrives with another dataset's calls (nothing to call). */
  run: Runner | null;
}

function work(
  key: string,
  surfaces: string[],
  run: Runner | null,
  opts: { keepsWatermark?: boolean; fetchedWith?: string } = {},
): DatasetDef {
  const { keepsWatermark = true, fetchedWith } = opts;
  const spec: DatasetSpec = { key, tier: 'work_item', costClass: 'rest', keepsWatermark, surfaces };
  return { spec: fetchedWith ? { ...spec, fetchedWith } : spec, run };
}

function reference(key: string, surface: string, run: Runner): DatasetDef {
  const spec: DatasetSpec = {
    key,
    tier: 'reference',
    costClass: 'rest',
    keepsWatermark: false,
    windowDays: LONG_WINDOW_DAYS,
    surfaces: [surface],
  };
  return { spec, run };
}

const DATASETS: readonly DatasetDef[] = [
  reference('repositories', 'repositories', units.repositories),
  reference('members', 'members', units.members),
  work('work-items', ['work_items'], units.readIssueList),
  work('work-item-comments', ['work_item_comments'], units.workItemComments),
  work('work-item-history', ['work_item_events'], units.workItemHistory),
  work('work-item-labels', [], null, { keepsWatermark: false }),
  // Read from the same issues pages as work-items: planned with it, one unit reads each page once.
  work('pull-requests', ['pull_requests'], units.readIssueList, { fetchedWith: 'work-items' }),
  work('pull-request-reviews', ['pull_request_reviews'], units.readIssueList, { fetchedWith: 'work-items' }),
  work('commits', ['commits'], units.commits),
];

export const GITHUB_DATASETS: readonly DatasetSpec[] = DATASETS.map((d) => d.spec);

export interface GithubProviderOptions extends HttpProviderOptions {
  /** Detail requests in flight at once within a unit. @default 4 */
  detailConcurrency?: number;
}

export function createGithubProvider(opts: GithubProviderOptions = {}): Provider {
  const validateConfig = (config: Record<string, unknown>) => void parseGithubConfig(config);
  return httpProvider(
    { name: GITHUB_PROVIDER, datasets: GITHUB_DATASETS, validateConfig, validateSource },
    opts,
    runGithubUnit,
  );
}

/** Runs one unit: the budget gates every call, and what it saw is recorded however the unit ends. */
export async function runGithubUnit(
  ctx: UnitContext,
  opts: GithubProviderOptions = {},
  ledger?: BudgetLedger,
): Promise<UnitResult> {
  const subject = subjectOf(ctx, GITHUB_PROVIDER);
  const def = datasetOf(DATASETS, ctx, subject);
  const config = parseGithubConfig(ctx.integration.config);
  const repos = await sourcesOf(ctx, def.spec.tier === 'reference', (key) => repoOf(key, subject));
  if (!def.run) return { items: 0, touchedSurfaces: [], coveredBy: 'work-items' };
  const credential = credentialOf(ctx, subject);
  const budget = unitBudget(
    ctx,
    { budgetName: GITHUB_PROVIDER, credentialId: credential.id, subject, share: config.budgetShare, ledger },
    opts.budget,
  );
  const gh = createGithubClient({
    baseUrl: config.baseUrl,
    token: credential.reveal(),
    subject,
    throttleKey: `${ctx.unit.orgId}/${credential.id}`,
    clock: ctx.clock,
    signal: ctx.signal,
    logger: ctx.logger,
    budget,
    ...(opts.retry ? { retry: opts.retry } : {}),
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  const run = def.run;
  try {
    const results: UnitResult[] = [];
    for (const repo of repos) results.push(await runOne(repo));
    return combineResults(results);
  } finally {
    await recordBudgetsQuietly(ctx, [budget]);
  }

  function runOne(repo: RepoRef): Promise<UnitResult> {
    return run({
      ctx,
      gh,
      repo,
      scope: {
        orgId: ctx.unit.orgId,
        integrationId: ctx.unit.integrationId,
        provider: GITHUB_PROVIDER,
        container: repo.full,
        syncedAt: ctx.clock.now(),
      },
      since: ctx.unit.since,
      before: ctx.unit.before,
      backfill: ctx.unit.mode === 'backfill',
      maxPages: opts.maxPages ?? 200,
      detailConcurrency: opts.detailConcurrency ?? 4,
    });
  }
}
