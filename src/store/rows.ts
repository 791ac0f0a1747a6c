/** Row shapes as the database returns them (snake_case, as operators see them). */
import type { UnitCheckpoint } from '../domain/checkpoint.js';
import type { OutboxKind, OutboxStatus, RunStatus, SyncMode, Tier, UnitStatus } from '../domain/statuses.js';

/** Status sets as SQL lists, rendered from the domain's (see ./sql.ts), for queries outside src/store. */
export {
  RUN_TERMINAL as RUN_TERMINAL_SQL,
  UNIT_OPEN as UNIT_OPEN_SQL,
  UNIT_TERMINAL as UNIT_TERMINAL_SQL,
} from './sql.js';

export interface OutboxRow {
  id: string;
  org_id: string;
  sync_run_id: string;
  kind: OutboxKind;
  status: OutboxStatus;
  available_at: Date;
  attempts: number;
  last_error: string | null;
  dispatched_at: Date | null;
  claim_token: string | null;
  claim_expires_at: Date | null;
  trace_context: Record<string, string> | null;
}

export interface RunRow {
  id: string;
  org_id: string;
  integration_id: string;
  triggered_by: string;
  mode: SyncMode;
  status: RunStatus;
  total_units: number;
  /**
   * Its planned units, kept exact by planning, dispatch, denial and cancellation; null when not
   * counted (a run planned before the count existed).
   */
  planned_units: number | null;
  completed_units: number;
  failed_units: number;
  started_at: Date | null;
  completed_at: Date | null;
  result: Record<string, unknown>;
  error: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface UnitRow {
  id: string;
  org_id: string;
  sync_run_id: string;
  integration_id: string;
  source_id: string | null;
  provider: string;
  dataset_key: string;
  /** Datasets this unit fetches besides `dataset_key` (a family read together); usually empty. */
  carried_datasets: string[];
  tier: Tier;
  cost_class: string;
  mode: SyncMode;
  since_at: Date | null;
  before_at: Date | null;
  status: UnitStatus;
  attempts: number;
  available_at: Date | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  last_heartbeat_at: Date | null;
  started_at: Date | null;
  rate_limit_deferrals: number;
  rate_limit_first_seen_at: Date | null;
  expired_lease_retry_count: number;
  last_retry_reason: string | null;
  retry_exhausted_at: Date | null;
  touched_surfaces: string[];
  duration_ms: number | null;
  error: string | null;
  result: Record<string, unknown> | null;
  /**
   * Where the unit's last rate-limit deferral said it stopped (see UnitContext.checkpoint); null
   * when it handed none, on a first attempt, and once the unit ended.
   */
  resume_checkpoint: UnitCheckpoint | null;
  dispatched_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * What a dispatch needs of each unit it claims (to publish its message, or to mark it unpublished):
 * a slice of 5,000 full rows cost its worker ~50 MB of row objects at once.
 */
export type DispatchedUnit = Pick<
  UnitRow,
  'id' | 'org_id' | 'sync_run_id' | 'status' | 'tier' | 'dispatched_at' | 'updated_at'
>;

export interface JobRunRow {
  id: string;
  org_id: string;
  job_id: string | null;
  integration_id: string;
  status: string;
  triggered_by: string;
  started_at: Date | null;
  completed_at: Date | null;
  duration_ms: number | null;
  result: Record<string, unknown>;
  error: string | null;
  created_at: Date;
}

export interface Bucket {
  org_id: string;
  provider: string;
  cost_class: string;
}

export function bucketKey(b: Bucket): string {
  return JSON.stringify([b.org_id, b.provider, b.cost_class]);
}
