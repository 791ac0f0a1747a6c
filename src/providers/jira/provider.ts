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
import { BudgetLedger } from '../kit/budget.js';
import type { DatasetSpec, Provider, UnitContext, UnitResult } from '../../sdk/types.js';
import { createJiraClient } from './client.js';
import { authorizationFor, parseJiraConfig, projectOf, validateSource } from './config.js';
import * as units from './units.js';
import { workItemFamily } from './workItems.js';
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

export const JIRA_PROVIDER = 'jira';

const LONG_WINDOW_DAYS = 36_500;

type Runner = (job: units.Job) => Promise<UnitResult>;

interface DatasetDef {
  spec: DatasetSpec;
  /** null: the dataset's data arrives with another dataset's calls (nothing to call). */
  run: Runner | null;
}

function work(key: string, surfaces: string[], run: Runner | null, fetchedWith?: string): DatasetDef {
  const spec: DatasetSpec = {
    key,
    tier: 'work_item',
    costClass: 'rest',
    keepsWatermark: run !== null,
    surfaces,
    ...(fetchedWith ? { fetchedWith } : {}),
  };
  return { spec, run };
}

function reference(key: string, surfaces: string[], run: Runner | null, fetchedWith?: string): DatasetDef {
  const spec: DatasetSpec = {
    key,
    tier: 'reference',
    costClass: 'rest',
    keepsWatermark: false,
    windowDays: LONG_WINDOW_DAYS,
    surfaces,
    ...(fetchedWith ? { fetchedWith } : {}),
  };
  return { spec, run };
}

const FAMILY_SURFACES = ['work_items', 'work_item_comments', 'work_item_events'];

const DATASETS: readonly DatasetDef[] = [
  reference('projects', ['projects'], units.projects),
  reference('members', ['members'], units.members),
  reference('sprints', ['sprints'], units.sprints),
  reference('boards', [], null, 'sprints'),
  work('work-items', FAMILY_SURFACES, workItemFamily),
  work('work-item-comments', ['work_item_comments'], workItemFamily, 'work-items'),
  work('work-item-history', ['work_item_events'], workItemFamily, 'work-items'),
  work('work-item-labels', [], null, 'work-items'),
];

export const JIRA_DATASETS: readonly DatasetSpec[] = DATASETS.map((d) => d.spec);

export interface JiraProviderOptions extends HttpProviderOptions {
  /** Issues per search page. @default 100 */
  pageSize?: number;
  /** Per-issue requests (long comment lists, changelogs) in flight at once within a unit. @default 4 */
  detailConcurrency?: number;
}

export function createJiraProvider(opts: JiraProviderOptions = {}): Provider {
  const validateConfig = (config: Record<string, unknown>) => void parseJiraConfig(config);
  return httpProvider(
    { name: JIRA_PROVIDER, datasets: JIRA_DATASETS, validateConfig, validateSource },
    opts,
    runJiraUnit,
  );
}

/** Runs one unit: the budget gates every call, and what it saw is recorded however the unit ends. */
export async function runJiraUnit(
  ctx: UnitContext,
  opts: JiraProviderOptions = {},
  ledger?: BudgetLedger,
): Promise<UnitResult> {
  const subject = subjectOf(ctx, JIRA_PROVIDER);
  const def = datasetOf(DATASETS, ctx, subject);
  const config = parseJiraConfig(ctx.integration.config);
  const projects = await sourcesOf(ctx, def.spec.tier === 'reference', (key) => projectOf(key, subject));
  if (!def.run) return { items: 0, touchedSurfaces: [], coveredBy: def.spec.fetchedWith };
  const credential = credentialOf(ctx, subject);
  const budget = unitBudget(
    ctx,
    { budgetName: JIRA_PROVIDER, credentialId: credential.id, subject, share: config.budgetShare, ledger },
    opts.budget,
  );
  const jira = createJiraClient({
    siteUrl: config.siteUrl,
    authorization: authorizationFor(credential.reveal(), subject),
    subject,
    clock: ctx.clock,
    signal: ctx.signal,
    logger: ctx.logger,
    budget,
    ...(opts.retry ? { retry: opts.retry } : {}),
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
  const run = def.run;
  const datasets = ctx.unit.datasets.includes(ctx.unit.datasetKey)
    ? ctx.unit.datasets
    : [ctx.unit.datasetKey, ...ctx.unit.datasets];
  try {
    const results: UnitResult[] = [];
    for (const project of projects) results.push(await run(job(project)));
    return combineResults(results);
  } finally {
    await recordBudgetsQuietly(ctx, [budget]);
  }

  function job(project: string): units.Job {
    return {
      ctx,
      jira,
      project,
      config,
      scope: {
        orgId: ctx.unit.orgId,
        integrationId: ctx.unit.integrationId,
        provider: JIRA_PROVIDER,
        siteUrl: config.siteUrl,
        syncedAt: ctx.clock.now(),
      },
      since: ctx.unit.since,
      before: ctx.unit.before,
      backfill: ctx.unit.mode === 'backfill',
      datasets,
      maxPages: opts.maxPages ?? 200,
      pageSize: opts.pageSize ?? 100,
      detailConcurrency: opts.detailConcurrency ?? 4,
    };
  }
}
