/**
 * The built-in synthetic provider (SPEC §9): deterministic items per source × dataset × window,
 * with configurable latency, failures, rate limits and hangs — a stand-in for Linear, GitHub, Jira.
 * A hang is an asynchronous stall of the one unit: nothing a config says can block the process.
 */
import { fileURLToPath } from 'node:url';
import { loadMigrations } from '../../db/migrator.js';
import { LeaseLostError, RateLimitError } from '../../errors.js';
import type { Db } from '../../db/types.js';
import { PostgresSink } from '../../sinks/postgres.js';
import type { DatasetSpec, IntegrationInfo, Provider, UnitContext, UnitResult } from '../../sdk/types.js';
import { parseSyntheticConfig, validateSyntheticConfig, type SyntheticConfig } from './config.js';
import { decideUnit, generateItems, type SyntheticItem } from './items.js';
import { metricsRollupHandler } from './metricsRollup.js';

export const SYNTHETIC_PROVIDER = 'synthetic';
export const SYNTHETIC_SURFACE = 'synthetic_items';
export const REFERENCE_DATASETS = ['teams', 'members', 'projects'] as const;
export const WORK_ITEM_DATASETS = [
  'work-items',
  'work-item-comments',
  'work-item-labels',
  'work-item-history',
] as const;

/** Rows per sink write (one fenced transaction each). */
const CHUNK_ROWS = 500;

export type ExecutionOutcome = 'running' | 'success' | 'failed' | 'rate_limited' | 'lease_lost' | 'aborted';

export function createSyntheticProvider(): Provider {
  return {
    name: SYNTHETIC_PROVIDER,
    datasets: datasetSpecs(7),
    windowDays: 7,
    initialDepthDays: 30,
    unitProvider: (integration) => configOf(integration).impersonate ?? SYNTHETIC_PROVIDER,
    datasetsFor: (integration) => datasetSpecs(configOf(integration).impersonate === 'linear' ? 14 : 7),
    validateConfig: (config, context) =>
      void validateSyntheticConfig(config, { allowFaultInjection: context?.allowFaultInjection ?? false }),
    runUnit: runSyntheticUnit,
    postSyncHandlers: [metricsRollupHandler],
    migrations: () => loadMigrations(SYNTHETIC_MIGRATIONS_DIR),
  };
}

/** The synthetic provider's own migrations (copied beside the compiled module by the build). */
const SYNTHETIC_MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/** A Postgres sink with the `synthetic_items` surface (in the install's schema): idempotent upserts, so retry-safe. */
export function syntheticSink(db: Db): PostgresSink {
  return new PostgresSink(db, {
    [SYNTHETIC_SURFACE]: {
      table: 'synthetic_items',
      conflictColumns: ['integration_id', 'source_key', 'dataset_key', 'item_key'],
      columns: [
        'org_id',
        'integration_id',
        'source_key',
        'dataset_key',
        'item_key',
        'item_day',
        'payload',
        'unit_id',
        'lease_owner',
        'written_at',
      ],
      jsonColumns: ['payload'],
      retrySafe: true,
    },
  });
}

function datasetSpecs(windowDays: number): DatasetSpec[] {
  const surfaces = [SYNTHETIC_SURFACE];
  return [
    ...REFERENCE_DATASETS.map((key) => ({
      key,
      tier: 'reference' as const,
      costClass: 'light',
      windowDays,
      keepsWatermark: false,
      surfaces,
    })),
    ...WORK_ITEM_DATASETS.map((key) => ({
      key,
      tier: 'work_item' as const,
      costClass: 'standard',
      windowDays,
      keepsWatermark: true,
      surfaces,
    })),
  ];
}

function configOf(integration: IntegrationInfo): SyntheticConfig {
  return parseSyntheticConfig(integration.config);
}

/** Runs one unit, recording it in synthetic_executions (started now, outcome set when it ends). */
export async function runSyntheticUnit(ctx: UnitContext): Promise<UnitResult> {
  const config = configOf(ctx.integration);
  const executionId = await startExecution(ctx);
  let outcome: ExecutionOutcome = 'failed';
  try {
    const result = await execute(ctx, config);
    outcome = 'success';
    return result;
  } catch (err) {
    outcome = outcomeOf(err, ctx.signal);
    throw err;
  } finally {
    await finishExecution(ctx, executionId, outcome);
  }
}

async function execute(ctx: UnitContext, config: SyntheticConfig): Promise<UnitResult> {
  await sleep(config.latencyMs, ctx.signal);
  const decision = decideUnit(config, ctx.unit.id, ctx.unit.attempt);
  if (decision.hang) await sleep(config.hangMs, ctx.signal);
  if (decision.rateLimit) throw new RateLimitError(config.rateLimitRetryAfterMs, 'synthetic rate limit');
  if (decision.fail) throw new Error('synthetic provider failure');

  const items = generateItems(config, ctx.unit, ctx.clock.now());
  for (let i = 0; i < items.length; i += CHUNK_ROWS) {
    ctx.signal.throwIfAborted();
    // The writer's time of this chunk; the chaos audit times each row write by the database's clock.
    const writtenAt = ctx.clock.now();
    const rows = items.slice(i, i + CHUNK_ROWS).map((item) => toRow(ctx, item, writtenAt));
    await ctx.sink.write(ctx.lease, SYNTHETIC_SURFACE, rows);
  }
  return { items: items.length, touchedSurfaces: [SYNTHETIC_SURFACE] };
}

function toRow(ctx: UnitContext, item: SyntheticItem, writtenAt: Date): Record<string, unknown> {
  return {
    org_id: ctx.unit.orgId,
    integration_id: ctx.unit.integrationId,
    source_key: item.sourceKey,
    dataset_key: item.datasetKey,
    item_key: item.itemKey,
    item_day: item.itemDay,
    payload: item.payload,
    unit_id: ctx.unit.id,
    lease_owner: ctx.lease.owner,
    written_at: writtenAt,
  };
}

/** Waits `ms`; an abort rejects at once with the signal's reason. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted', { cause: signal.reason }));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function outcomeOf(err: unknown, signal: AbortSignal): ExecutionOutcome {
  if (err instanceof LeaseLostError || (signal.aborted && signal.reason instanceof LeaseLostError)) return 'lease_lost';
  if (signal.aborted) return 'aborted';
  if (err instanceof RateLimitError) return 'rate_limited';
  return 'failed';
}

/** Inserts the execution row (outcome 'running'); returns its id. */
async function startExecution(ctx: UnitContext): Promise<string> {
  const res = await ctx.db.query<{ id: string }>(
    `INSERT INTO ${ctx.db.schema.table('synthetic_executions')} (org_id, unit_id, lease_owner, started_at, outcome)
     VALUES ($1, $2, $3, $4, 'running') RETURNING id::text AS id`,
    [ctx.unit.orgId, ctx.unit.id, ctx.lease.owner, ctx.clock.now()],
  );
  return res.rows[0]!.id;
}

/** Best effort: a failure here is logged and never masks the unit's own outcome. */
async function finishExecution(ctx: UnitContext, id: string, outcome: ExecutionOutcome): Promise<void> {
  try {
    await ctx.db.query(
      `UPDATE ${ctx.db.schema.table('synthetic_executions')} SET ended_at = $2, outcome = $3 WHERE id = $1::bigint`,
      [id, ctx.clock.now(), outcome],
    );
  } catch (err) {
    ctx.logger.warn({ err, unitId: ctx.unit.id, outcome }, 'synthetic_execution_record_failed');
  }
}
