/** plan_sync_run: the run, all its units and the dispatch outbox row in the caller's transaction. */
import type { Tracer } from '@opentelemetry/api';
import type { Clock } from '../clock.js';
import type { Tx } from '../db/types.js';
import type { SyncMode } from '../domain/statuses.js';
import { chunkWindow, DAY_MS, incrementalWindow, type Window } from '../domain/windows.js';
import { NotFoundError, ValidationError } from '../errors.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { DatasetSpec, IntegrationInfo, Provider } from '../providers/types.js';
import { getIntegration, listDatasets, listSources, type SourceRow } from '../store/integrations.js';
import { armOutbox } from '../store/outbox.js';
import type { RunRow } from '../store/rows.js';
import { insertRun } from '../store/runs.js';
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
  /** Trace context stored with the run and its dispatch row. */
  trace?: Record<string, string> | null;
}

export interface PlanDeps {
  registry: ProviderRegistry;
  clock: Clock;
  /** Where the trigger's span comes from. @default the global `syncrelay` tracer */
  tracer?: Tracer;
}

export interface PlannedRun {
  run: RunRow;
  units: number;
}

/**
 * Plans a run inside `tx` (a library user may pass their own transaction): reference-tier datasets
 * once per run, work-item datasets per enabled source × window; then arms dispatch_sync_run.
 */
export async function planSyncRun(tx: Tx, deps: PlanDeps, args: PlanArgs): Promise<PlannedRun> {
  const now = deps.clock.now();
  const row = await getIntegration(tx, args.integrationId, { orgId: args.orgId });
  if (!row) throw new NotFoundError('integration', args.integrationId);
  const integration: IntegrationInfo = {
    id: row.id,
    orgId: row.org_id,
    provider: row.provider,
    name: row.name,
    config: row.config,
  };
  const provider = deps.registry.get(row.provider);
  const specs = await enabledSpecs(tx, provider, integration, args.datasets);
  const sources = (await listSources(tx, row.id)).filter((s) => s.enabled);
  const run = await insertRun(
    tx,
    {
      orgId: args.orgId,
      integrationId: row.id,
      triggeredBy: args.triggeredBy,
      mode: args.mode,
      result: planResult(args),
    },
    now,
  );
  const watermarks = args.mode === 'incremental' ? await loadWatermarks(tx, row.id) : new Map<string, Date>();
  const unitProvider = provider.unitProvider?.(integration) ?? provider.name;
  const units: NewUnit[] = [];
  for (const spec of specs) {
    const base = {
      org_id: args.orgId,
      sync_run_id: run.id,
      integration_id: row.id,
      provider: unitProvider,
      mode: args.mode,
    };
    const unit = (source: SourceRow | null, w: Window): NewUnit => ({
      ...base,
      source_id: source?.id ?? null,
      dataset_key: spec.key,
      tier: spec.tier,
      cost_class: spec.costClass,
      since_at: w.since?.toISOString() ?? null,
      before_at: w.before?.toISOString() ?? null,
    });
    if (spec.tier === 'reference') {
      units.push(unit(null, { since: null, before: null }));
      continue;
    }
    for (const source of sources) {
      for (const w of windowsFor(provider, spec, args, now, watermarks.get(`${source.id}/${spec.key}`) ?? null)) {
        units.push(unit(source, w));
      }
    }
  }
  await insertUnits(tx, units, now);
  await armOutbox(tx, 'dispatch_sync_run', [{ orgId: args.orgId, runId: run.id }], now, now, args.trace);
  return { run, units: units.length };
}

function planResult(args: PlanArgs): Record<string, unknown> {
  const r: Record<string, unknown> = {};
  if (args.since) r.since = args.since.toISOString();
  if (args.before) r.before = args.before.toISOString();
  if (args.datasets) r.datasets = [...args.datasets];
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

function windowsFor(
  provider: Provider,
  spec: DatasetSpec,
  args: PlanArgs,
  now: Date,
  watermark: Date | null,
): Window[] {
  const depth = provider.initialDepthDays ?? 30;
  const size = spec.windowDays ?? provider.windowDays ?? 7;
  switch (args.mode) {
    case 'backfill':
      return chunkWindow(args.since!, args.before!, size);
    case 'full_resync':
      return [{ since: new Date(now.getTime() - depth * DAY_MS), before: now }];
    case 'incremental': {
      const w = incrementalWindow(spec.keepsWatermark ? watermark : null, now, depth);
      return w.since!.getTime() < now.getTime() ? [w] : [];
    }
  }
}
