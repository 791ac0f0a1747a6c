/** What the API answers with (times as ISO 8601 strings, ids as UUIDs, snake_case as stored). */
import { z } from 'zod';
import { JOB_RUN_STATUSES, RUN_STATUSES, SYNC_MODES, TIERS, TRIGGERS, UNIT_STATUSES } from '../../domain/statuses.js';
import { page, TimeOut } from './common.js';

const Id = z.string().meta({ format: 'uuid' });
const Json = z.record(z.string(), z.unknown());
const Status = <T extends readonly [string, ...string[]]>(values: T) => z.enum(values);

/** Whether the integration has a credential and when it was last set; the credential itself is never answered. */
export const CredentialStatus = z
  .union([z.strictObject({ set: z.literal(true), updated_at: TimeOut }), z.strictObject({ set: z.literal(false) })])
  .meta({ id: 'CredentialStatus', example: { set: true, updated_at: '2026-01-01T00:00:00.000Z' } });

export const Integration = z
  .strictObject({
    id: Id,
    org_id: z.string(),
    provider: z.string(),
    name: z.string(),
    config: Json,
    enabled: z.boolean(),
    sources: z.array(z.string()).meta({ description: 'external keys of the enabled sources' }),
    datasets: z.array(z.string()).meta({ description: 'keys of the enabled datasets' }),
    credential: CredentialStatus,
    created_at: TimeOut,
    updated_at: TimeOut,
  })
  .meta({ id: 'Integration' });

export const IntegrationList = z.strictObject({ items: z.array(Integration) });

export const IntegrationDeletion = z
  .strictObject({
    integration: Integration,
    runs_deleted: z.number().int().meta({ description: 'its runs, deleted with it (with their units)' }),
    schedules_deleted: z.number().int(),
    purged_rows: z
      .record(z.string(), z.number().int())
      .nullable()
      .meta({ description: 'rows deleted per normalized table with purge_data=true; null when its data stays' }),
  })
  .meta({ id: 'IntegrationDeletion' });

export const Accepted = z
  .strictObject({ status: z.literal('accepted'), job_run_id: Id, sync_run_id: Id })
  .meta({ id: 'TriggerAccepted' });

export const CancelAccepted = z
  .strictObject({
    status: z.literal('accepted'),
    sync_run_id: Id,
    outcome: z.enum(['cancelled', 'already_terminal']),
  })
  .meta({ id: 'CancelAccepted' });

export const SyncRun = z
  .strictObject({
    id: Id,
    org_id: z.string(),
    integration_id: Id,
    triggered_by: z.string(),
    mode: Status(SYNC_MODES),
    status: Status(RUN_STATUSES),
    total_units: z.number().int(),
    completed_units: z.number().int(),
    failed_units: z.number().int(),
    started_at: TimeOut.nullable(),
    completed_at: TimeOut.nullable(),
    result: Json,
    error: z.string().nullable(),
    created_at: TimeOut,
    updated_at: TimeOut,
  })
  .meta({ id: 'SyncRun' });

const jobRunFields = {
  id: Id,
  org_id: z.string(),
  job_id: Id.nullable(),
  integration_id: Id,
  status: Status(JOB_RUN_STATUSES),
  triggered_by: Status(TRIGGERS),
  started_at: TimeOut.nullable(),
  completed_at: TimeOut.nullable(),
  duration_ms: z.number().int().nullable(),
  result: Json,
  error: z.string().nullable(),
  created_at: TimeOut,
};

export const JobRun = z.strictObject(jobRunFields).meta({ id: 'JobRun' });

export const JobRunListItem = z
  .strictObject({
    ...jobRunFields,
    sync_run_id: Id.nullable(),
    mode: z.string().nullable(),
    run_status: z.string().nullable(),
    total_units: z.number().int().nullable(),
    completed_units: z.number().int().nullable(),
    failed_units: z.number().int().nullable(),
  })
  .meta({ id: 'JobRunListItem' });

export const JobRunPage = page(JobRunListItem);

export const VerifyCounts = z
  .strictObject({
    checked: z.number().int().meta({ description: 'objects listed (or confirmed present) and compared' }),
    missing: z.number().int().meta({ description: 'at the provider, not in the store: fetched and written' }),
    stale: z.number().int().meta({ description: "the provider's update newer than the stored one: fetched again" }),
    restored: z.number().int().meta({ description: 'stored as deleted but listed again: written back' }),
    deleted: z.number().int().meta({ description: 'confirmed gone at the provider: marked deleted' }),
  })
  .meta({ id: 'VerifyCounts' });

export const RunDetail = z
  .strictObject({
    run: SyncRun,
    unit_counts: z.record(z.string(), z.number().int()).meta({ description: 'units by status' }),
    job_run: JobRun.nullable(),
    verify_counts: VerifyCounts.nullable().meta({
      description: "a verify run's counts so far, over its successful units; null for the other modes",
    }),
  })
  .meta({ id: 'SyncRunDetail' });

export const Unit = z
  .strictObject({
    id: Id,
    org_id: z.string(),
    sync_run_id: Id,
    integration_id: Id,
    source_id: Id.nullable(),
    source_key: z.string().nullable(),
    provider: z.string(),
    dataset_key: z.string(),
    /** Datasets the unit fetches with `dataset_key` (a family read together). */
    carried_datasets: z.array(z.string()),
    tier: Status(TIERS),
    cost_class: z.string(),
    mode: z.string(),
    since_at: TimeOut.nullable(),
    before_at: TimeOut.nullable(),
    status: Status(UNIT_STATUSES),
    attempts: z.number().int(),
    available_at: TimeOut.nullable(),
    lease_owner: z.string().nullable(),
    lease_expires_at: TimeOut.nullable(),
    last_heartbeat_at: TimeOut.nullable(),
    started_at: TimeOut.nullable(),
    dispatched_at: TimeOut.nullable(),
    rate_limit_deferrals: z.number().int(),
    rate_limit_first_seen_at: TimeOut.nullable(),
    expired_lease_retry_count: z.number().int(),
    last_retry_reason: z.string().nullable(),
    retry_exhausted_at: TimeOut.nullable(),
    touched_surfaces: z.array(z.string()),
    duration_ms: z.number().int().nullable(),
    error: z.string().nullable(),
    error_category: z.string().nullable(),
    result: Json.nullable(),
    created_at: TimeOut,
    updated_at: TimeOut,
  })
  .meta({ id: 'SyncRunUnit' });

export const UnitPage = page(Unit);

export const OutboxStats = z
  .strictObject({
    counts: z.array(z.strictObject({ kind: z.string(), status: z.string(), count: z.number().int() })),
    live_claims: z.number().int(),
    due: z.number().int().meta({ description: 'pending rows that are due now' }),
    oldest_pending_age_seconds: z
      .number()
      .nullable()
      .meta({ description: 'seconds since the longest-due pending row came due (null when none is due)' }),
    recent_errors: z.array(
      z.strictObject({
        id: Id,
        sync_run_id: Id,
        kind: z.string(),
        status: z.string(),
        attempts: z.number().int(),
        last_error: z.string(),
        available_at: TimeOut,
        updated_at: TimeOut,
      }),
    ),
  })
  .meta({ id: 'OutboxStats' });

export const ReconcilerPasses = z.strictObject({
  items: z.array(
    z
      .strictObject({
        id: z.string(),
        reconciler: z.string(),
        started_at: TimeOut,
        finished_at: TimeOut,
        duration_ms: z.number().int(),
        counters: z.record(z.string(), z.number()),
        error: z.string().nullable(),
      })
      .meta({ id: 'ReconcilerPass' }),
  ),
});

export const Health = z.strictObject({ status: z.literal('ok'), uptime_seconds: z.number() });

export const Ready = z.strictObject({
  status: z.literal('ready'),
  checks: z.strictObject({ database: z.literal('ok'), broker: z.literal('ok') }),
});
