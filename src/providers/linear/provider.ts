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
 * connection. Every surface is a normalized upsert table, so an expired lease on a backfill unit of
 * the family is retried (the `linearBackfillEligibility` policy).
 */
import { BudgetLedger } from '../kit/budget.js';
import type { DatasetSpec, Provider, UnitContext, UnitResult } from '../../sdk/types.js';
import { createLinearClient, type LinearBudgets } from './client.js';
import { parseLinearConfig, teamKeyOf, validateSource } from './config.js';
import * as units from './units.js';
import {
  credentialOf,
  datasetOf,
  recordBudgetsQuietly,
  sourcesOf,
  subjectOf,
  unitBudget,
  httpProvider,
  type HttpProviderOptions,
} from '../kit/unitScaffold.js';

export const LINEAR_PROVIDER = 'linear';
/** The complexity budget's row in rate_budgets (the request budget's is `linear`). */
export const LINEAR_COMPLEXITY_BUDGET = 'linear:complexity';

const LONG_WINDOW_DAYS = 36_500;
const ANCHOR = 'work-items';

type Runner = (job: units.Job) => Promise<UnitResult>;

interface DatasetDef {
  spec: DatasetSpec;
  /** null: the dataset's data arrives with another dataset's calls (nothing to call). */
  run: Runner | null;
  /** Reads every enabled team of the integration (reference datasets planned without a source). */
  allTeams?: boolean;
}

function work(key: string, surfaces: string[]): DatasetDef {
  const spec: DatasetSpec = { key, tier: 'work_item', costClass: 'graphql', keepsWatermark: true, surfaces };
  if (key !== ANCHOR) spec.fetchedWith = ANCHOR;
  return { spec, run: units.workItemFamily };
}

function reference(key: string, surfaces: string[], run: Runner | null): DatasetDef {
  const spec: DatasetSpec = {
    key,
    tier: 'reference',
    costClass: 'graphql',
    keepsWatermark: false,
    windowDays: LONG_WINDOW_DAYS,
    surfaces,
  };
  return { spec, run, allTeams: true };
}

const DATASETS: readonly DatasetDef[] = [
  reference('teams', ['teams'], units.teams),
  reference('members', ['members'], units.members),
  reference('projects', ['projects'], units.projects),
  reference('cycles', ['sprints'], units.cycles),
  reference('workflow-states', [], null),
  work('work-items', ['work_items']),
  work('work-item-comments', ['work_item_comments']),
  work('work-item-history', ['work_item_events']),
  work('work-item-labels', ['work_items']),
];

export const LINEAR_DATASETS: readonly DatasetSpec[] = DATASETS.map((d) => d.spec);

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

export function createLinearProvider(opts: LinearProviderOptions = {}): Provider {
  const validateConfig = (config: Record<string, unknown>) => void parseLinearConfig(config);
  return httpProvider(
    { name: LINEAR_PROVIDER, datasets: LINEAR_DATASETS, validateConfig, validateSource },
    opts,
    runLinearUnit,
  );
}

/** Runs one unit: the budgets gate every call, and what they saw is recorded however the unit ends. */
export async function runLinearUnit(
  ctx: UnitContext,
  opts: LinearProviderOptions = {},
  ledger?: BudgetLedger,
): Promise<UnitResult> {
  const subject = subjectOf(ctx, LINEAR_PROVIDER);
  const def = datasetOf(DATASETS, ctx, subject);
  const config = parseLinearConfig(ctx.integration.config);
  const teams = await sourcesOf(ctx, def.allTeams === true, (key) => teamKeyOf(key, subject));
  if (!def.run) return { items: 0, touchedSurfaces: [], coveredBy: ANCHOR };
  const credential = credentialOf(ctx, subject);
  const budget = (budgetName: string) =>
    unitBudget(
      ctx,
      { budgetName, credentialId: credential.id, subject, share: config.budgetShare, ledger },
      opts.budget,
    );
  const budgets: LinearBudgets = { requests: budget(LINEAR_PROVIDER), complexity: budget(LINEAR_COMPLEXITY_BUDGET) };
  const client = createLinearClient({
    apiUrl: config.apiUrl,
    credential: credential.reveal(),
    subject,
    clock: ctx.clock,
    signal: ctx.signal,
    logger: ctx.logger,
    budgets,
    ...(opts.retry ? { retry: opts.retry } : {}),
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  try {
    if (teams.length === 0) return { items: 0, touchedSurfaces: [] };
    return await def.run({
      ctx,
      client,
      teams,
      scope: {
        orgId: ctx.unit.orgId,
        integrationId: ctx.unit.integrationId,
        provider: LINEAR_PROVIDER,
        syncedAt: ctx.clock.now(),
      },
      since: ctx.unit.since,
      before: ctx.unit.before,
      backfill: ctx.unit.mode === 'backfill',
      datasets: ctx.unit.datasets.length > 0 ? ctx.unit.datasets : [ctx.unit.datasetKey],
      pageSize: opts.pageSize ?? LINEAR_PAGE_DEFAULTS.pageSize,
      nestedPageSize: opts.nestedPageSize ?? LINEAR_PAGE_DEFAULTS.nestedPageSize,
      maxPages: opts.maxPages ?? 200,
    });
  } finally {
    await recordBudgetsQuietly(ctx, [budgets.requests, budgets.complexity]);
  }
}
