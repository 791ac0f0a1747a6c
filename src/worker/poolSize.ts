/**
 * The default PostgreSQL pool size of a process that runs a worker (`syncrelay worker`, `start`),
 * when SYNCRELAY_DB_POOL_SIZE does not set it.
 *
 * How a worker uses connections (src/worker/, src/tasks/): a message slot (`concurrency` of them)
 * holds a connection only for one short statement or transaction at a time — a dispatch, a
 * finalize, a post_sync, or a unit's sink write (one transaction per page). The units of one
 * run_sync_unit message (up to SYNC_UNITS_PER_MESSAGE) spend most of their time waiting on their
 * provider, and their claims and terminal ends are group-committed by the engine (one claim
 * statement in flight, one end batch at a time: tasks/unitClaims.ts, tasks/unitEnds.ts), so one
 * connection per slot covers the usual peak; units writing at the very same instant queue on the
 * pool for a moment rather than each holding a server connection. On top of that:
 * - 1 for lease heartbeats and lease checks (short statements every lease/4, all units together),
 * - 1 for the unit watch (cancelled units, fair share: one statement per tick),
 * - 2 for the reconciler pass and the scheduler, when the process also runs them (`start`).
 * The LISTEN connection is its own client, outside the pool. Never below the services' old fixed
 * 10, so small workers keep the size they had.
 */
export const WORKER_POOL_EXTRA = 4;

/**
 * `syncrelay worker`'s messages at once when `--concurrency` is not given: the end-to-end
 * benchmark's best shapes on a 2-core machine were one process at 32–64 (README "Sizing": 1 × 64
 * 3,190 units/s, 1 × 32 2,966, 1 × 16 2,931); 32 is within that spread and holds half the units.
 */
export const DEFAULT_WORKER_CONCURRENCY = 32;
export const MIN_SERVICE_POOL = 10;
export const MAX_POOL = 1000;

export function workerPoolSize(concurrency: number): number {
  return Math.min(MAX_POOL, Math.max(MIN_SERVICE_POOL, concurrency + WORKER_POOL_EXTRA));
}
