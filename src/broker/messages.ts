/** Broker job ids and messages. */
import type { TaskMessage } from './types.js';
import type { DispatchedUnit, OutboxRow } from '../store/rows.js';

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
export function unitMessage(unit: DispatchedUnit, trace?: Record<string, string> | null): TaskMessage {
  const at = (unit.dispatched_at ?? unit.updated_at).getTime();
  return {
    name: 'run_sync_unit',
    payload: { orgId: unit.org_id, runId: unit.sync_run_id, unitId: unit.id, ...(trace ? { trace } : {}) },
    jobId: `run_sync_unit.${unit.id}.${at}`,
  };
}

/** Messages a dispatch spreads its units over at least (while it has that many units). */
export const MIN_UNIT_MESSAGES = 4;

/**
 * The run_sync_unit messages for units of one run dispatched together: up to `perMessage` units
 * each, but spread over at least MIN_UNIT_MESSAGES messages so a small dispatch still reaches
 * several workers. A message of one unit is `unitMessage`'s; a batch's job id names its first unit,
 * that unit's dispatch time and the batch size (a retried publish of the same dispatch is the same job).
 */
export function unitMessages(
  units: readonly DispatchedUnit[],
  perMessage: number,
  trace?: Record<string, string> | null,
): TaskMessage[] {
  const size = Math.max(1, Math.min(perMessage, Math.ceil(units.length / MIN_UNIT_MESSAGES)));
  const out: TaskMessage[] = [];
  for (let i = 0; i < units.length; i += size) {
    const batch = units.slice(i, i + size);
    const first = batch[0]!;
    if (batch.length === 1) {
      out.push(unitMessage(first, trace));
      continue;
    }
    const at = (first.dispatched_at ?? first.updated_at).getTime();
    out.push({
      name: 'run_sync_unit',
      payload: {
        orgId: first.org_id,
        runId: first.sync_run_id,
        unitIds: batch.map((u) => u.id),
        ...(trace ? { trace } : {}),
      },
      jobId: `run_sync_unit.${first.id}.${at}.${batch.length}`,
    });
  }
  return out;
}
