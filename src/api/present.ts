/** Rows → answers: only the documented fields, times as ISO strings (JSON does that for Dates). */
import type { IntegrationView, JobRunView, ReconcilerPassRow, UnitView } from '../store/admin.js';
import type { JobRunRow, RunRow } from '../store/rows.js';

/** Whether a credential is set and since when; never the credential. */
export function presentCredentialStatus(updatedAt: Date | null): { set: true; updated_at: Date } | { set: false } {
  return updatedAt ? { set: true, updated_at: updatedAt } : { set: false };
}

export function presentIntegration(i: IntegrationView) {
  return {
    id: i.id,
    org_id: i.org_id,
    provider: i.provider,
    name: i.name,
    config: i.config,
    enabled: i.enabled,
    sources: i.sources,
    datasets: i.datasets,
    credential: presentCredentialStatus(i.credential_updated_at),
    created_at: i.created_at,
    updated_at: i.updated_at,
  };
}

export function presentRun(r: RunRow) {
  return {
    id: r.id,
    org_id: r.org_id,
    integration_id: r.integration_id,
    triggered_by: r.triggered_by,
    mode: r.mode,
    status: r.status,
    total_units: r.total_units,
    completed_units: r.completed_units,
    failed_units: r.failed_units,
    started_at: r.started_at,
    completed_at: r.completed_at,
    result: r.result,
    error: r.error,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export function presentJobRun(j: JobRunRow) {
  return {
    id: j.id,
    org_id: j.org_id,
    job_id: j.job_id,
    integration_id: j.integration_id,
    status: j.status,
    triggered_by: j.triggered_by,
    started_at: j.started_at,
    completed_at: j.completed_at,
    duration_ms: j.duration_ms,
    result: j.result,
    error: j.error,
    created_at: j.created_at,
  };
}

export function presentJobRunItem(j: JobRunView) {
  return {
    ...presentJobRun(j),
    sync_run_id: j.sync_run_id,
    mode: j.mode,
    run_status: j.run_status,
    total_units: j.total_units,
    completed_units: j.completed_units,
    failed_units: j.failed_units,
  };
}

export function presentUnit(u: UnitView) {
  const category = u.result?.error_category;
  return {
    id: u.id,
    org_id: u.org_id,
    sync_run_id: u.sync_run_id,
    integration_id: u.integration_id,
    source_id: u.source_id,
    source_key: u.source_key,
    provider: u.provider,
    dataset_key: u.dataset_key,
    carried_datasets: u.carried_datasets,
    tier: u.tier,
    cost_class: u.cost_class,
    mode: u.mode,
    since_at: u.since_at,
    before_at: u.before_at,
    status: u.status,
    attempts: u.attempts,
    available_at: u.available_at,
    lease_owner: u.lease_owner,
    lease_expires_at: u.lease_expires_at,
    last_heartbeat_at: u.last_heartbeat_at,
    started_at: u.started_at,
    dispatched_at: u.dispatched_at,
    rate_limit_deferrals: u.rate_limit_deferrals,
    rate_limit_first_seen_at: u.rate_limit_first_seen_at,
    expired_lease_retry_count: u.expired_lease_retry_count,
    last_retry_reason: u.last_retry_reason,
    retry_exhausted_at: u.retry_exhausted_at,
    touched_surfaces: u.touched_surfaces,
    duration_ms: u.duration_ms,
    error: u.error,
    error_category: typeof category === 'string' ? category : null,
    result: u.result,
    created_at: u.created_at,
    updated_at: u.updated_at,
  };
}

export function presentPass(p: ReconcilerPassRow) {
  return {
    id: p.id,
    reconciler: p.reconciler,
    started_at: p.started_at,
    finished_at: p.finished_at,
    duration_ms: p.duration_ms,
    counters: p.counters,
    error: p.error,
  };
}
