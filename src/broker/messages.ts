/** Broker job ids and messages. */
import type { TaskMessage } from './types.js';
import type { OutboxRow, UnitRow } from '../store/rows.js';

/** Outbox kinds publish under (outbox id, claim token): a retried publish within one claim is de-duplicated. */
export function outboxMessage(row: OutboxRow): TaskMessage {
  return {
    name: row.kind,
    payload: { orgId: row.org_id, runId: row.sync_run_id, ...(row.trace_context ? { trace: row.trace_context } : {}) },
    jobId: `${row.kind}.${row.id}.${String(row.claim_token)}`,
  };
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const OUTBOX_JOB_ID = new RegExp(`^(?:dispatch_sync_run|finalize_sync_run|post_sync)\\.(${UUID})\\.`);

/** The outbox row a message was published for (read back from its job id), or null for unit messages. */
export function outboxIdOf(msg: TaskMessage): string | null {
  return OUTBOX_JOB_ID.exec(msg.jobId)?.[1] ?? null;
}

/** One run_sync_unit per dispatch of a unit (the dispatch time tells re-publishes apart). */
export function unitMessage(unit: UnitRow, trace?: Record<string, string> | null): TaskMessage {
  const at = (unit.dispatched_at ?? unit.updated_at).getTime();
  return {
    name: 'run_sync_unit',
    payload: { orgId: unit.org_id, runId: unit.sync_run_id, unitId: unit.id, ...(trace ? { trace } : {}) },
    jobId: `run_sync_unit.${unit.id}.${at}`,
  };
}
