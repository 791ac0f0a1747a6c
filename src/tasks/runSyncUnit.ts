/** run_sync_unit(unit_id) — executes a provider unit at most once per lease. */
import { randomUUID } from 'node:crypto';
import { verifyCountsOf } from '../domain/verify.js';
import { LeaseLostError, RateLimitError, classifyError, describeError } from '../errors.js';
import type { TaskPayload } from '../broker/types.js';
import type { TraceCarrier } from '../observability/trace.js';
import type { Logger } from 'pino';
import type {
  DatasetSpec,
  IntegrationInfo,
  Provider,
  Sink,
  UnitCredential,
  UnitInfo,
  UnitResult,
} from '../sdk/types.js';
import { declaredSurfaces, specsOf } from '../providers/datasets.js';
import { claimedUnitCredential } from '../secrets/credentials.js';
import type { UnitRow } from '../store/rows.js';
import type { ClaimedUnit } from '../store/units.js';
import type { EngineContext } from '../context.js';
import { UnitLease } from './lease.js';
import { namedItemsOf } from './namedItems.js';
import { storableCheckpoint } from './checkpoint.js';
import { claimForRun } from './unitClaims.js';
import { deferUnit, endUnit, failure, softTimeoutUnit, type EndOutcome } from './unitEnd.js';
import { yieldUnit } from './unitYield.js';

/** How long a unit that yielded its slot waits before its run's dispatch takes it again (default). */
export const DEFAULT_YIELD_DELAY_MS = 5000;

export type UnitOutcome = 'not_dispatchable' | EndOutcome | 'abandoned' | 'cancelled' | 'yielded';

export interface RunUnitOptions {
  /** Aborted when the worker shuts down: the unit is abandoned (its lease ended at once). */
  shutdown?: AbortSignal;
  /** The run's trace context (from the task payload), stored on the outbox rows the unit's end arms. */
  trace?: TraceCarrier | null;
  /**
   * Told each unit's lease once claimed, before its provider runs: the worker watches it (a cancelled
   * run stops it; a slot over the org's share may be yielded). See src/worker/unitWatch.ts.
   */
  onLease?: (lease: UnitLease) => void;
  /** A yielded unit is due again this much later. @default DEFAULT_YIELD_DELAY_MS */
  yieldDelayMs?: number;
}

export async function runSyncUnit(ctx: EngineContext, unitId: string, opts: RunUnitOptions = {}): Promise<UnitOutcome> {
  const [outcome] = await runSyncUnits(ctx, [unitId], opts);
  return outcome!;
}

/** A run_sync_unit message's task: its one unit (`unitId`, one outcome) or its batch (`unitIds`, one each). */
export function runUnitMessage(
  ctx: EngineContext,
  payload: Pick<TaskPayload, 'unitId' | 'unitIds'>,
  opts: RunUnitOptions = {},
): Promise<UnitOutcome | UnitOutcome[]> {
  if (payload.unitIds) return runSyncUnits(ctx, payload.unitIds, opts);
  if (payload.unitId) return runSyncUnit(ctx, payload.unitId, opts);
  return Promise.reject(new Error('run_sync_unit message names no unit'));
}

/**
 * run_sync_unit of several units of one run (one message): each claimed under its own owner by its
 * own CAS, all in one statement; the claimed ones then run side by side, each under its own lease
 * and with its own end. Resolves with each unit's outcome, in order.
 */
export async function runSyncUnits(
  ctx: EngineContext,
  unitIds: readonly string[],
  opts: RunUnitOptions = {},
): Promise<UnitOutcome[]> {
  const claims = unitIds.map((unitId) => ({ unitId, owner: randomUUID() }));
  const claimed = await claimForRun(ctx, claims);
  return Promise.all(
    claimed.map((c, i) => (c ? runOne(ctx, c, claims[i]!.owner, opts) : Promise.resolve('not_dispatchable' as const))),
  );
}

async function runOne(
  ctx: EngineContext,
  claimed: ClaimedUnit,
  owner: string,
  opts: RunUnitOptions,
): Promise<UnitOutcome> {
  const { integration, source_key: sourceKey, credential, ...unit } = claimed;
  const started = performance.now();
  let outcome: UnitOutcome | 'error' = 'error';
  try {
    outcome = await runClaimed(ctx, unit, { integration, sourceKey, credential }, owner, opts);
    return outcome;
  } finally {
    ctx.metrics?.unitEnded(unit.provider, outcome, (performance.now() - started) / 1000);
  }
}

/** The claimed attempt: provider under the lease, then its one ending (terminal, retry or nothing). */
async function runClaimed(
  ctx: EngineContext,
  unit: UnitRow,
  found: Found,
  owner: string,
  opts: RunUnitOptions,
): Promise<UnitOutcome> {
  const { clock } = ctx;
  await ctx.faults.hit('unit.afterClaim');
  const logger = ctx.logger.child({ runId: unit.sync_run_id, unitId: unit.id });
  const plugin = resolvePlugin(ctx, unit, found);
  if ('error' in plugin)
    return endUnit(ctx, unit, owner, failure('adapter_error', plugin.error), undefined, opts.trace);
  // Read by the claim, not decrypted: the provider reveals it when it needs it. Never a logger binding.
  const credential = claimedUnitCredential(ctx.secrets, found.credential, { db: ctx.db, clock });
  const lease = new UnitLease(ctx, unit.id, owner, unit.lease_expires_at!, opts.shutdown, unit.sync_run_id);
  lease.preemptible = retrySafe(plugin);
  opts.onLease?.(lease);
  const namedItems = namedItemsOf(ctx.db, unit, clock.now());
  let result: UnitResult | undefined;
  let error: unknown;
  try {
    result = await plugin.provider.runUnit({
      unit: unitInfo(unit, plugin.sourceKey),
      integration: plugin.integration,
      signal: lease.signal,
      lease,
      sink: plugin.sink,
      logger,
      clock,
      db: ctx.db,
      credential,
      checkpoint: unit.resume_checkpoint,
      ...(namedItems ? { namedItems } : {}),
    });
  } catch (err) {
    error = err;
  } finally {
    lease.stop();
  }
  await ctx.faults.hit('unit.beforeComplete');
  const yieldDelayMs = opts.yieldDelayMs ?? DEFAULT_YIELD_DELAY_MS;
  const attempt: Attempt = { unit, owner, plugin, credential, logger, trace: opts.trace, yieldDelayMs };
  return settle(ctx, attempt, lease, result, error);
}

/** One claimed attempt, as its end needs it. */
interface Attempt {
  unit: UnitRow;
  owner: string;
  plugin: Plugin;
  credential: UnitCredential | null;
  logger: Logger;
  trace: TraceCarrier | null | undefined;
  yieldDelayMs: number;
}

async function settle(
  ctx: EngineContext,
  { unit, owner, plugin, credential, logger, trace, yieldDelayMs }: Attempt,
  lease: UnitLease,
  result: UnitResult | undefined,
  error: unknown,
): Promise<UnitOutcome> {
  const dataset = plugin.dataset;
  switch (lease.outcome) {
    case 'lost':
      return 'lease_lost';
    case 'shutdown':
      await lease.abandon();
      return 'abandoned';
    case 'cancelled':
      // The cancel already ended the unit (`cancelled`) and fenced out our writes.
      return 'cancelled';
    case 'yielded':
      return yieldUnit(ctx, unit, owner, yieldDelayMs, trace);
    case 'soft_timeout':
      return softTimeoutUnit(
        ctx,
        unit,
        owner,
        surfaceFacts(plugin),
        error ?? new Error('soft timeout'),
        dataset,
        trace,
      );
    case 'held':
      break;
  }
  if (error instanceof LeaseLostError) return 'lease_lost';
  if (error instanceof RateLimitError) {
    const checkpoint = storableCheckpoint(error, credential, logger);
    return deferUnit(ctx, unit, owner, error, checkpoint, dataset, trace);
  }
  if (error !== undefined) {
    ctx.logger.info({ runId: unit.sync_run_id, unitId: unit.id, err: describeError(error) }, 'unit failed');
    return endUnit(ctx, unit, owner, failure(classifyError(error), error), dataset, trace);
  }
  const r = result ?? {};
  const ended = await endUnit(
    ctx,
    unit,
    owner,
    {
      status: 'success',
      result: { ...r, touchedSurfaces: undefined, watermark: undefined },
      error: null,
      touchedSurfaces: r.touchedSurfaces ?? [],
      watermark: r.watermark === undefined ? unit.before_at : r.watermark,
    },
    dataset,
    trace,
  );
  const verify = ended === 'success' ? verifyCountsOf(r) : null;
  if (verify) ctx.metrics?.verifyCounted(unit.provider, verify);
  return ended;
}

interface Plugin {
  provider: Provider;
  sink: Sink;
  integration: IntegrationInfo;
  dataset: DatasetSpec | undefined;
  /** Every surface the unit's datasets (its own and those it carries) declare. */
  declaredSurfaces: readonly string[];
  sourceKey: string | null;
}

/** The integration, source key and encrypted credential read by the claim (null when gone or none). */
interface Found {
  integration: ClaimedUnit['integration'];
  sourceKey: string | null;
  credential: ClaimedUnit['credential'];
}

function resolvePlugin(ctx: EngineContext, unit: UnitRow, found: Found): Plugin | { error: Error } {
  try {
    const row = found.integration;
    if (!row) throw new Error(`integration ${unit.integration_id} not found`);
    const integration: IntegrationInfo = {
      id: row.id,
      orgId: row.org_id,
      provider: row.provider,
      name: row.name,
      config: row.config,
    };
    const provider = ctx.registry.get(row.provider);
    const keys = [unit.dataset_key, ...unit.carried_datasets];
    const specs = specsOf(provider, integration, keys);
    if (!specs) throw new Error(`provider ${row.provider} lacks one of the datasets ${keys.join(', ')}`);
    const sink = ctx.registry.sinkFor(provider);
    const declared = declaredSurfaces(specs);
    return { provider, sink, integration, dataset: specs[0], declaredSurfaces: declared, sourceKey: found.sourceKey };
  } catch (err) {
    return { error: err instanceof Error ? err : new Error(String(err)) };
  }
}

/** Every surface the unit may write is retry-safe: it may be stopped and run again (a yield). */
function retrySafe(p: Plugin): boolean {
  return p.declaredSurfaces.every((s) => p.sink.retrySafeSurfaces.includes(s));
}

function surfaceFacts(p: Plugin) {
  return { declaredSurfaces: p.declaredSurfaces, retrySafeSurfaces: p.sink.retrySafeSurfaces };
}

function unitInfo(u: UnitRow, sourceKey: string | null): UnitInfo {
  return {
    id: u.id,
    orgId: u.org_id,
    runId: u.sync_run_id,
    integrationId: u.integration_id,
    sourceId: u.source_id,
    sourceKey,
    provider: u.provider,
    datasetKey: u.dataset_key,
    datasets: [u.dataset_key, ...u.carried_datasets],
    tier: u.tier,
    mode: u.mode,
    since: u.since_at,
    before: u.before_at,
    attempt: u.attempts,
  };
}
