/**
 * plan_sync_run: the run, all its units and the dispatch outbox row in the caller's transaction.
 * The units are computed in memory first (`computePlan`), so a run over SYNC_RUN_MAX_UNITS is
 * refused by the same code that would plan it, before anything is written.
 */
import type { Tracer } from '@opentelemetry/api';
import type { Clock } from '../clock.js';
import type { ResolvedSettings } from '../config.js';
import type { Tx } from '../db/types.js';
import type { SyncMode } from '../domain/statuses.js';
import { chunkWindow, DAY_MS, incrementalWindow, type Window } from '../domain/windows.js';
import { NotFoundError, RunTooLargeError, ValidationError } from '../errors.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { DatasetSpec, IntegrationInfo, Provider } from '../sdk/types.js';
import {
  getIntegration,
  listDatasets,
  listSources,
  type IntegrationRow,
  type SourceRow,
} from '../store/integrations.js';
import { armOutbox } from '../store/outbox.js';
import { familiesOf, familyWatermark } from './families.js';
import type { RunRow } from '../store/rows.js';
import { insertRun, setPlannedUnits } from '../store/runs.js';
import { insertUnits, type NewUnit } from '../store/units.js';
import { loadWatermarks } from '../store/watermarks.js';

export interface PlanArgs {
  orgId: string;
  integrationId: string;
  mode: SyncMode;
  triggeredBy: string;
  /** Backfill window (required for backfill, refused otherwise). */
  since?: Date;
  before?: Date;
  /** Restrict to these enabled datasets. @default every enabled dataset */
  datasets?: readonly string[];
  /** Restrict the work-item units to these enabled sources (ids). @default every enabled source */
  sourceIds?: readonly string[];
  /** When the run's dispatch row comes due. @default the planning time */
  dispatchAt?: Date;
  /** Trace context stored with the run and its dispatch row. */
  trace?: Record<string, string> | null;
}

export interface PlanDeps {
  registry: ProviderRegistry;
  clock: Clock;
  /**
   * `runMaxUnits` (SYNC_RUN_MAX_UNITS): a run that would plan more units is refused, writing nothing;
   * `incrementalOverlapMs` (SYNC_INCREMENTAL_OVERLAP_SECONDS; null or absent: the provider's own).
   */
  settings: Pick<ResolvedSettings, 'runMaxUnits'> & Partial<Pick<ResolvedSettings, 'incrementalOverlapMs'>>;
  /** Where the trigger's span comes from. @default the global `syncrelay` tracer */
  tracer?: Tracer;
}

export interface PlannedRun {
  run: RunRow;
  units: number;
}

/** The units of one dataset — and one source, for the work-item tier — one per window. */
export interface UnitGroup {
  spec: DatasetSpec;
  /** Datasets the group's units fetch with `spec` (a family read together, ./families.ts). */
  carried: readonly string[];
  source: SourceRow | null;
  windows: readonly Window[];
}

/** What a run would plan, computed in memory; nothing is written yet. */
export interface RunPlan {
  integration: IntegrationRow;
  /** The provider name the units carry (a provider may impersonate another). */
  unitProvider: string;
  /** The time the windows were computed at; the run and its units are written with it. */
  now: Date;
  groups: readonly UnitGroup[];
  /** How many units the groups hold: what `writePlan` inserts. */
  units: number;
  /** Units per dataset key. */
  byDataset: Record<string, number>;
  /** Enabled sources the work-item datasets are planned for. */
  sources: number;
}

/**
 * Plans a run inside `tx` (a library user may pass their own transaction): reference-tier datasets
 * once per run, work-item datasets per enabled source × window (a verify run: only the datasets
 * whose spec `verifies`, one unit each over the whole source); then arms dispatch_sync_run. A run
 * of more than `settings.runMaxUnits` units throws RunTooLargeError before anything is written.
 */
export async function planSyncRun(tx: Tx, deps: PlanDeps, args: PlanArgs): Promise<PlannedRun> {
  const row = await getIntegration(tx, args.integrationId, { orgId: args.orgId });
  if (!row) throw new NotFoundError('integration', args.integrationId);
  const plan = await computePlan(tx, deps, row, args);
  assertWithinUnitCap(plan, args.mode, deps.settings.runMaxUnits);
  return writePlan(tx, args, plan);
}

/**
 * The units a run of `args` would plan, in memory: reads the integration's datasets, sources and
 * watermarks, writes nothing. Throws ValidationError for a dataset that is not enabled, and for a
 * verify run of datasets none of which (or, asked for by name, not each of which) `verifies`.
 */
export async function computePlan(
  tx: Tx,
  deps: Pick<PlanDeps, 'registry' | 'clock'> & { settings?: PlanDeps['settings'] },
  row: IntegrationRow,
  args: PlanArgs,
): Promise<RunPlan> {
  const now = deps.clock.now();
  const integration: IntegrationInfo = {
    id: row.id,
    orgId: row.org_id,
    provider: row.provider,
    name: row.name,
    config: row.config,
  };
  const provider = deps.registry.get(row.provider);
  const enabled = await enabledSpecs(tx, provider, integration, args.datasets);
  const specs = args.mode === 'verify' ? verifiableSpecs(provider, enabled, args.datasets) : enabled;
  const only = args.sourceIds ? new Set(args.sourceIds) : null;
  const sources = (await listSources(tx, row.id)).filter((s) => s.enabled && (only === null || only.has(s.id)));
  const watermarks = args.mode === 'incremental' ? await loadWatermarks(tx, row.id) : new Map<string, Date>();
  const families = familiesOf(specs);
  const overlapMs = deps.settings?.incrementalOverlapMs ?? provider.incrementalOverlapMs ?? 0;
  const groups: UnitGroup[] = [];
  for (const spec of specs) {
    if (families.members.has(spec.key)) continue;
    const carried = families.carried.get(spec.key) ?? [];
    if (spec.tier === 'reference') {
      // A verify compares what the provider lists with what the store holds from before it began.
      const before = args.mode === 'verify' ? now : null;
      groups.push({ spec, carried, source: null, windows: [{ since: null, before }] });
      continue;
    }
    const family = [spec, ...specs.filter((s) => carried.includes(s.key))];
    // Sources with the same watermark (all of them, outside incremental) share one window list.
    const shared = new Map<number | null, Window[]>();
    for (const source of sources) {
      const mark = familyWatermark(family, (key) => watermarks.get(`${source.id}/${key}`) ?? null);
      let windows = shared.get(mark?.getTime() ?? null);
      if (!windows)
        shared.set(mark?.getTime() ?? null, (windows = windowsFor(provider, spec, args, now, mark, overlapMs)));
      groups.push({ spec, carried, source, windows });
    }
  }
  const byDataset: Record<string, number> = {};
  for (const g of groups) byDataset[g.spec.key] = (byDataset[g.spec.key] ?? 0) + g.windows.length;
  const units = groups.reduce((n, g) => n + g.windows.length, 0);
  const unitProvider = provider.unitProvider?.(integration) ?? provider.name;
  return { integration: row, unitProvider, now, groups, units, byDataset, sources: sources.length };
}

/** Throws RunTooLargeError, naming the count, the cap and how to narrow the request, over `maxUnits`. */
export function assertWithinUnitCap(plan: RunPlan, mode: SyncMode, maxUnits: number): void {
  if (plan.units <= maxUnits) return;
  const narrow =
    mode === 'backfill'
      ? 'narrow it: fewer datasets, a shorter window (since/before) or fewer enabled sources'
      : `narrow it: fewer datasets or fewer enabled sources (a ${mode} plans one unit per source × dataset)`;
  throw new RunTooLargeError(plan.units, maxUnits, plan.byDataset, narrow);
}

/** Units per insert statement: a large run is written in slices, in the same transaction. */
export const INSERT_SLICE = 5000;

/** Writes the run, the plan's units (in slices) and the dispatch outbox row in `tx`. */
export async function writePlan(tx: Tx, args: PlanArgs, plan: RunPlan): Promise<PlannedRun> {
  const run = await insertRun(
    tx,
    {
      orgId: args.orgId,
      integrationId: plan.integration.id,
      triggeredBy: args.triggeredBy,
      mode: args.mode,
      result: planResult(args),
    },
    plan.now,
  );
  const shared = {
    org_id: args.orgId,
    sync_run_id: run.id,
    integration_id: plan.integration.id,
    provider: plan.unitProvider,
    mode: args.mode,
  };
  let units = 0;
  for (const slice of unitSlices(plan, INSERT_SLICE)) units += await insertUnits(tx, shared, slice, plan.now);
  await setPlannedUnits(tx, run.id, units);
  const due = args.dispatchAt ?? plan.now;
  await armOutbox(tx, 'dispatch_sync_run', [{ orgId: args.orgId, runId: run.id }], due, plan.now, args.trace);
  return { run, units };
}

/** The plan's units (one per group × window), `size` at a time: memory bounded by a slice, not the run. */
function* unitSlices(plan: RunPlan, size: number): Generator<NewUnit[]> {
  let slice: NewUnit[] = [];
  for (const { spec, carried, source, windows } of plan.groups) {
    for (const w of windows) {
      slice.push({
        source_id: source?.id ?? null,
        dataset_key: spec.key,
        carried_datasets: [...carried],
        tier: spec.tier,
        cost_class: spec.costClass,
        since_at: w.since,
        before_at: w.before,
      });
      if (slice.length === size) {
        yield slice;
        slice = [];
      }
    }
  }
  if (slice.length > 0) yield slice;
}

function planResult(args: PlanArgs): Record<string, unknown> {
  const r: Record<string, unknown> = {};
  if (args.since) r.since = args.since.toISOString();
  if (args.before) r.before = args.before.toISOString();
  if (args.datasets) r.datasets = [...args.datasets];
  if (args.sourceIds) r.sources = [...args.sourceIds];
  if (args.trace) r.trace = args.trace;
  return r;
}

async function enabledSpecs(
  tx: Tx,
  provider: Provider,
  integration: IntegrationInfo,
  only: readonly string[] | undefined,
): Promise<DatasetSpec[]> {
  const specs = provider.datasetsFor?.(integration) ?? provider.datasets;
  const enabled = new Set((await listDatasets(tx, integration.id)).filter((d) => d.enabled).map((d) => d.dataset_key));
  for (const key of only ?? []) {
    if (!enabled.has(key)) throw new ValidationError('datasets', `dataset "${key}" is not enabled on this integration`);
  }
  const wanted = only ? new Set(only) : enabled;
  return specs.filter((s) => enabled.has(s.key) && wanted.has(s.key));
}

/**
 * The datasets a verify run plans: those whose spec `verifies`. A dataset asked for by name that
 * does not is a ValidationError on `datasets`; none at all is one on `mode`, naming the provider.
 */
function verifiableSpecs(
  provider: Provider,
  specs: readonly DatasetSpec[],
  only: readonly string[] | undefined,
): DatasetSpec[] {
  const refused = only ? specs.find((s) => s.verifies !== true) : undefined;
  if (refused) {
    throw new ValidationError(
      'datasets',
      `dataset "${refused.key}" cannot be verified: ${provider.name} lists no ids for it`,
    );
  }
  // A dataset fetched with another is verified by its anchor's unit: without the anchor, none carries it.
  const listed = new Set(specs.filter((s) => s.verifies === true).map((s) => s.key));
  const orphan = specs.find((s) => s.verifies === true && s.fetchedWith !== undefined && !listed.has(s.fetchedWith));
  if (orphan && only) {
    const anchor = orphan.fetchedWith ?? '';
    throw new ValidationError(
      'datasets',
      `dataset "${orphan.key}" is verified with "${anchor}": ask for both (or for "${anchor}")`,
    );
  }
  const verified = specs.filter(
    (s) => s.verifies === true && (s.fetchedWith === undefined || listed.has(s.fetchedWith)),
  );
  if (verified.length === 0) {
    throw new ValidationError(
      'mode',
      `provider "${provider.name}" cannot verify any enabled dataset of this integration ` +
        '(a verify run needs a dataset whose provider declares `verifies`)',
    );
  }
  return verified;
}

function windowsFor(
  provider: Provider,
  spec: DatasetSpec,
  args: PlanArgs,
  now: Date,
  watermark: Date | null,
  overlapMs: number,
): Window[] {
  const depth = provider.initialDepthDays ?? 30;
  const size = spec.windowDays ?? provider.windowDays ?? 7;
  switch (args.mode) {
    case 'backfill':
      return chunkWindow(args.since!, args.before!, size);
    case 'full_resync':
      return [{ since: new Date(now.getTime() - depth * DAY_MS), before: now }];
    case 'verify':
      // The whole source: a listing compared with the store is complete only from its beginning.
      return [{ since: null, before: now }];
    case 'incremental': {
      const w = incrementalWindow(spec.keepsWatermark ? watermark : null, now, depth, overlapMs);
      return w.since!.getTime() < now.getTime() ? [w] : [];
    }
  }
}
