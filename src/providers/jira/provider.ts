/**
 * The Jira Cloud provider (`jira`): one project (its key) per source, read through the REST API v3
 * and the Jira Software Agile API with plain `fetch`, and written onto the normalized surfaces.
 *
 * Datasets (cross-provider keys): reference `projects`, `members` (assignable users), `sprints`
 * (of the project's scrum boards) and `boards` (fetched with `sprints`: boards have no surface of
 * their own, their sprints carry them); work-item family `work-items` (the anchor: issues with
 * status, type, assignee, labels, parent, project and sprint), `work-item-comments`,
 * `work-item-history` (status, assignee and label changes from the changelog) and
 * `work-item-labels` (labels arrive on the issues: nothing of its own to call), all fetched with
 * `work-items` in one unit per (project, window).
 */
import type { DatasetSpec, Provider, UnitContext } from '../../sdk/types.js';
import type { BudgetLedger } from '../kit/budget.js';
import { datasetTable, specsOf } from '../kit/datasets.js';
import { rowScope } from '../kit/rows.js';
import { httpProvider, runUnit, type ProviderUnits } from '../kit/runner.js';
import type { HttpProviderOptions } from '../kit/unitScaffold.js';
import type { JiraClient } from './client.js';
import { parseJiraConfig, projectOf, validateSource, type JiraConfig } from './config.js';
import { checkJiraCredential, jiraClientFor } from './signIn.js';
import * as units from './units.js';
import { verifyFamily } from './verify.js';
import { verifyMembers, verifySprints } from './verifyReference.js';
import { workItemFamily } from './namedIssues.js';

export const JIRA_PROVIDER = 'jira';

const { work, reference } = datasetTable<units.Job>('rest');

const FAMILY_SURFACES = ['work_items', 'work_item_comments', 'work_item_events'];

const DATASETS = [
  reference('projects', ['projects'], units.projects),
  reference('members', ['members'], units.members, { verify: verifyMembers }),
  reference('sprints', ['sprints'], units.sprints, { verify: verifySprints }),
  reference('boards', [], null, { fetchedWith: 'sprints' }),
  work('work-items', FAMILY_SURFACES, workItemFamily, { verify: verifyFamily }),
  work('work-item-comments', ['work_item_comments'], workItemFamily, { fetchedWith: 'work-items', verify: true }),
  work('work-item-history', ['work_item_events'], workItemFamily, { fetchedWith: 'work-items', verify: true }),
  work('work-item-labels', [], null, { fetchedWith: 'work-items' }),
];

export const JIRA_DATASETS: readonly DatasetSpec[] = specsOf(DATASETS);

export interface JiraProviderOptions extends HttpProviderOptions {
  /** Issues per search page. @default 100 */
  pageSize?: number;
  /** Per-issue requests (long comment lists, changelogs) in flight at once within a unit. @default 4 */
  detailConcurrency?: number;
}

const JIRA: ProviderUnits<JiraProviderOptions, JiraConfig, string, JiraClient, units.Job> = {
  name: JIRA_PROVIDER,
  // Search is eventually consistent: a fresh update may not be visible to it yet (docs/jira.md).
  incrementalOverlapMs: 300_000,
  // Beta-RateLimit gives the reset in whole seconds from the answer (quota.ts); the quota's window
  // starts with the first request after the last one ended, so a deferred unit comes back promptly.
  budgetWindows: { resetResolutionMs: 2_000, deferralSpreadMs: 500 },
  datasets: DATASETS,
  parseConfig: parseJiraConfig,
  sources: { validate: validateSource, of: projectOf },
  client: (setup) => jiraClientFor(setup),
  checkCredential: checkJiraCredential,
  // One job per project, each timed when it starts; a reference verify reads every project in one
  // job (members are the integration's: one listing of them all before any is confirmed gone).
  *jobs({ ctx, opts, config, client, base }, projects) {
    const verifiesAll = ctx.unit.mode === 'verify' && ctx.unit.tier === 'reference';
    for (const project of verifiesAll ? projects.slice(0, 1) : projects) {
      yield {
        ...base,
        jira: client,
        project,
        config,
        scope: { ...rowScope(ctx, JIRA_PROVIDER), siteUrl: config.siteUrl },
        pageSize: opts.pageSize ?? 100,
        detailConcurrency: opts.detailConcurrency ?? 4,
        projects,
      };
    }
  },
};

/** The Jira provider, for the engine's registry. */
export const createJiraProvider = (opts: JiraProviderOptions = {}): Provider => httpProvider(JIRA, opts);

/** Runs one unit: the budget gates every call, and what it saw is recorded however the unit ends. */
export const runJiraUnit = (ctx: UnitContext, opts: JiraProviderOptions = {}, ledger?: BudgetLedger) =>
  runUnit(JIRA, ctx, opts, ledger);
