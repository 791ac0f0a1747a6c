/**
 * The Linear provider (`linear`): one team (its key, `ENG`) per source, read through Linear's
 * GraphQL API with queries of our own and written onto the normalized surfaces.
 *
 * Datasets (cross-provider keys): reference `teams`, `members` (users), `projects`, `cycles`
 * (→ sprints), `workflow-states` (the states arrive on the issues: nothing to call); work-item
 * family `work-items` (the anchor: issues with labels, assignee, state, cycle, project),
 * `work-item-comments`, `work-item-history` (IssueHistory → work_item_events) and
 * `work-item-labels`, fetched with `work-items`: one unit per (team, window) reads the enabled
 * family members in one query per page. Planned alone, a member's unit asks only for its own
 * connection. A verify run lists a team's issue ids and update times and fetches the missing and
 * stale with their comments and history (./verify.ts); the labels come with the issues. Every
 * surface is a normalized upsert table, so an expired lease on a backfill unit of the family is
 * retried (the `linearBackfillEligibility` policy).
 */
import type { DatasetSpec, Provider, UnitContext } from '../../sdk/types.js';
import type { BudgetLedger } from '../kit/budget.js';
import { datasetTable, specsOf } from '../kit/datasets.js';
import { rowScope } from '../kit/rows.js';
import { httpProvider, runUnit, type ProviderUnits } from '../kit/runner.js';
import type { HttpProviderOptions } from '../kit/unitScaffold.js';
import { createLinearClient, type LinearClient } from './client.js';
import { parseLinearConfig, teamKeyOf, validateSource, type LinearConfig } from './config.js';
import { LINEAR_ENDPOINT_BUDGET_PREFIX } from './limits.js';
import * as units from './units.js';
import { verifyFamily } from './verify.js';

export const LINEAR_PROVIDER = 'linear';
/** The complexity budget's row in rate_budgets (the request budget's is `linear`). */
export const LINEAR_COMPLEXITY_BUDGET = 'linear:complexity';

const ANCHOR = 'work-items';

const { work, reference } = datasetTable<units.Job>('graphql');

/**
 * A member of the work-item family: fetched with the anchor, in one query per page. A verify run
 * lists the anchor's issues (./verify.ts); `verified` members are fetched with what it finds.
 */
const member = (key: string, surfaces: string[], verified = false) =>
  work(
    key,
    surfaces,
    units.workItemFamily,
    key === ANCHOR ? { verify: verifyFamily } : { fetchedWith: ANCHOR, ...(verified ? { verify: true as const } : {}) },
  );

const DATASETS = [
  reference('teams', ['teams'], units.teams),
  reference('members', ['members'], units.members),
  reference('projects', ['projects'], units.projects),
  reference('cycles', ['sprints'], units.cycles),
  // The states arrive on the issues: the work-items unit writes them.
  reference('workflow-states', [], null, { coveredBy: ANCHOR }),
  member('work-items', ['work_items']),
  member('work-item-comments', ['work_item_comments'], true),
  member('work-item-history', ['work_item_events'], true),
  member('work-item-labels', ['work_items']),
];

export const LINEAR_DATASETS: readonly DatasetSpec[] = specsOf(DATASETS);

/** Page sizes when the options give none (see LinearProviderOptions). */
export const LINEAR_PAGE_DEFAULTS = { pageSize: 50, nestedPageSize: 10 } as const;

export interface LinearProviderOptions extends HttpProviderOptions {
  /** Issues (and reference objects) per page. @default 50 */
  pageSize?: number;
  /**
   * Comments, history entries and labels per issue in the issues query (more are paged per issue).
   * 50 issues × 10 keeps the family query near 8 000 points, under Linear's 10 000 per query.
   * @default 10
   */
  nestedPageSize?: number;
}

const LINEAR: ProviderUnits<LinearProviderOptions, LinearConfig, string, LinearClient, units.Job> = {
  name: LINEAR_PROVIDER,
  // `updatedAt` is Linear's clock, not ours; a minute covers the skew and an in-flight write (docs/linear.md).
  incrementalOverlapMs: 60_000,
  datasets: DATASETS,
  parseConfig: parseLinearConfig,
  sources: { validate: validateSource, of: teamKeyOf },
  // Every call spends from two budgets, requests and query complexity points; some from an endpoint's too.
  client: ({ config, credential, call, budget }) =>
    createLinearClient({
      ...call,
      apiUrl: config.apiUrl,
      credential: credential.reveal(),
      budgets: {
        requests: budget(),
        complexity: budget(LINEAR_COMPLEXITY_BUDGET),
        endpoint: (name) => budget(`${LINEAR_ENDPOINT_BUDGET_PREFIX}${name}`),
      },
    }),
  // One job for every team the unit reads: the queries filter by all of them at once.
  jobs: ({ ctx, opts, client, base }, teams) =>
    teams.length === 0
      ? []
      : [
          {
            ...base,
            client,
            teams: [...teams],
            scope: rowScope(ctx, LINEAR_PROVIDER),
            pageSize: opts.pageSize ?? LINEAR_PAGE_DEFAULTS.pageSize,
            nestedPageSize: opts.nestedPageSize ?? LINEAR_PAGE_DEFAULTS.nestedPageSize,
          },
        ],
};

/** The Linear provider, for the engine's registry. */
export const createLinearProvider = (opts: LinearProviderOptions = {}): Provider => httpProvider(LINEAR, opts);

/** Runs one unit: the budgets gate every call, and what they saw is recorded however the unit ends. */
export const runLinearUnit = (ctx: UnitContext, opts: LinearProviderOptions = {}, ledger?: BudgetLedger) =>
  runUnit(LINEAR, ctx, opts, ledger);
