/**
 * What a unit's end wakes — the one rule, written once as SQL, used by every path that ends a unit
 * or frees capacity: success and failure (inside the terminal CAS statement, finishUnits),
 * rate-limit deferral and soft-timeout retry, lease expiry in the reconciler, and cancellation
 * (armEndWakes, below).
 *
 * - **finalize** the unit's run when no other unit of it is open (the unit itself ended; a unit
 *   that went back to `retrying` is itself open) and the run is live. A unit that saw others open
 *   re-checks after its commit (of two "last" units racing, the later one arms it).
 * - **dispatch** the `limit` oldest live runs with a planned unit in the unit's concurrency bucket
 *   (the slot it freed goes to the run waiting longest), and, when the unit is of the reference
 *   tier, its own run if it has planned units (work items waiting for the reference tier).
 *
 * Wake-ups of one (run, kind) merge: the earliest time, a trace over none.
 */
import type { DbSchema } from '../db/schema.js';
import type { Tx } from '../db/types.js';
import { OUTBOX_TRANSITIONS } from '../domain/statuses.js';
import { armConflictSql, type Wake } from './outbox.js';
import { DISPATCH, OUTBOX_PENDING, RUN_OPEN, RUN_TERMINAL, sqlLit, UNIT_IN_FLIGHT, UNIT_OPEN } from './sql.js';

const ARM_TO = sqlLit(OUTBOX_TRANSITIONS.arm.to);

/**
 * The probes' status tests, written as the predicates of the indexes made for them (migration
 * 0023): only those indexes can prove them, and no index on `status` can use them as an index
 * condition. Written plainly, the (run, status) index serves them too and looks at least as cheap
 * whatever the statistics (none, stale or fresh: none counts the entries moved units leave behind),
 * and a probe through it reads every unit that has passed through the status.
 */
const IS_PLANNED = `COLLATE "C" = ${DISPATCH.planned}`;
const IS_IN_FLIGHT = `COLLATE "C" IN ${UNIT_IN_FLIGHT}`;
/** The tier whose end may let its run's work items go. */
const REFERENCE = `'reference'`;

/**
 * Runs woken per freed slot: the run of the oldest planned unit in the bucket (its dispatch
 * claims up to the free capacity from its own units). More would only queue dispatch tasks on the
 * bucket's lock to find the slot taken; slots still free after that are the materializer's.
 */
export const MAX_RUNS_WOKEN = 1;

/**
 * Whether a run has a planned unit in the bucket (SQL texts of the run's id, provider and cost
 * class), read from the run's newest planned unit backwards: dispatch takes the oldest first, so
 * the newest is the last to go, where a forward probe walked the index entries every unit
 * dispatched so far left behind (migration 0013). The key is bounded by row comparisons (not
 * equalities) and the rows ordered by the whole key, so the primary key cannot return them in order
 * (with statistics from when the run was all planned it looked cheap, and read every newer unit),
 * and the planner expects several rows in the range: reading the range whole and sorting it costs
 * more than reading its top, also with no statistics (with equalities it expects one row and the
 * two tie).
 */
function hasPlannedInBucketSql(s: DbSchema, run: string, provider: string, costClass: string): string {
  const key = `(p.sync_run_id, p.provider, p.cost_class)`;
  const bucket = `(${run}, ${provider}, ${costClass})`;
  return `((SELECT p.id FROM ${s.sync_run_units} p
             WHERE p.status ${IS_PLANNED} AND ${key} >= ${bucket} AND ${key} <= ${bucket}
             ORDER BY p.sync_run_id DESC, p.provider DESC, p.cost_class DESC, p.id DESC LIMIT 1) IS NOT NULL)`;
}

/**
 * Whether run `run` (SQL text of its id) has a planned unit: its count (sync_runs.planned_units),
 * or, for a run not counted, its newest planned unit in the index.
 */
function hasPlannedSql(s: DbSchema, run: string): string {
  return `COALESCE((SELECT pr.planned_units > 0 FROM ${s.sync_runs} pr WHERE pr.id = ${run}),
                   (SELECT pp.id FROM ${s.sync_run_units} pp WHERE pp.sync_run_id = ${run} AND pp.status ${IS_PLANNED}
                     ORDER BY pp.provider DESC, pp.cost_class DESC, pp.id DESC LIMIT 1) IS NOT NULL)`;
}

/**
 * Whether run `run` has a dispatching, running or retrying unit that `others` (SQL text of a
 * predicate on `o.id`) accepts; newest first, for the same reason as hasPlannedSql.
 */
function hasInFlightSql(s: DbSchema, run: string, others: string): string {
  return `((SELECT o.id FROM ${s.sync_run_units} o
             WHERE o.sync_run_id = ${run} AND o.status ${IS_IN_FLIGHT} AND ${others}
             ORDER BY o.id DESC LIMIT 1) IS NOT NULL)`;
}

/**
 * The runs a freed slot in bucket (org, provider, cost class — SQL texts) wakes: the `limit` oldest
 * live runs of the org with a planned unit in the bucket, as jsonb {org_id, sync_run_id}.
 */
function bucketWaitingSql(s: DbSchema, org: string, provider: string, costClass: string, limit: string): string {
  return `ARRAY(SELECT jsonb_build_object('org_id', wr.org_id, 'sync_run_id', wr.id) FROM ${s.sync_runs} wr
                 WHERE wr.org_id = ${org} AND wr.status IN ${RUN_OPEN} AND COALESCE(wr.planned_units > 0, true)
                   AND ${hasPlannedInBucketSql(s, 'wr.id', provider, costClass)}
                   AND NOT ${firstDispatchDeferredSql(s, 'wr.id')}
                 ORDER BY wr.id LIMIT ${limit})`;
}

/**
 * Whether run `run`'s first dispatch was armed for later than it was armed and has not been relayed
 * yet (a webhook run's debounce: deliveries for its source join it until then). A freed slot does
 * not wake such a run — it would start before the deliveries it waits for — it starts at its time.
 * One probe of the outbox's (run, kind) key.
 */
function firstDispatchDeferredSql(s: DbSchema, run: string): string {
  return `EXISTS (SELECT 1 FROM ${s.sync_dispatch_outbox} d
                   WHERE d.sync_run_id = ${run} AND d.kind = 'dispatch_sync_run' AND d.status = ${OUTBOX_PENDING}
                     AND d.attempts = 0 AND d.available_at > d.created_at)`;
}

/**
 * The run of an ended unit `u` as woken for its own sake: a reference-tier unit's end may let the
 * run's work items go (they wait for the reference tier). Other planned units of the run wait for
 * its own dispatch slices, or for a slot in their bucket (bucketWaitingSql).
 */
function ownWaitingSql(s: DbSchema, u: string): string {
  return `ARRAY(SELECT jsonb_build_object('org_id', ${u}.org_id, 'sync_run_id', ${u}.sync_run_id)
                 WHERE ${u}.tier = ${REFERENCE} AND ${hasPlannedSql(s, `${u}.sync_run_id`)})`;
}

/**
 * The end facts of an ended unit `u` (a row with id, org_id, sync_run_id, provider, cost_class,
 * tier and its status after the end) as two select-list columns: `others_open` and
 * `waiting_runs`. `limit` is the SQL text of the parameter holding the bucket's wake limit.
 */
export function endFactsSql(s: DbSchema, u: string, limit: string): string {
  return `(${u}.status IN ${UNIT_OPEN} OR ${hasPlannedSql(s, `${u}.sync_run_id`)}
            OR ${hasInFlightSql(s, `${u}.sync_run_id`, `o.id <> ${u}.id`)}) AS others_open,
          ARRAY(SELECT DISTINCT x FROM unnest(
            ${bucketWaitingSql(s, `${u}.org_id`, `${u}.provider`, `${u}.cost_class`, limit)}
            || ${ownWaitingSql(s, u)}) AS x) AS waiting_runs`;
}

/**
 * The `ended` CTE over the CTE `changed` (the units one statement has just ended: id, org_id,
 * sync_run_id, provider, cost_class, tier, status, lease_owner, trace), with the end facts of
 * `endFactsSql` worked out once per run and once per bucket instead of once per unit. `others_open`
 * counts the units ended by the same statement as closed (its snapshot still shows them open), so
 * the statement that ends a run's last units arms its finalize itself.
 */
export function batchEndFactsSql(s: DbSchema, limit: string): string {
  return `run_facts AS MATERIALIZED (
       SELECT r.sync_run_id,
              ${hasPlannedSql(s, 'r.sync_run_id')}
                OR ${hasInFlightSql(s, 'r.sync_run_id', 'o.id NOT IN (SELECT c.id FROM changed c)')} AS others_open
         FROM (SELECT DISTINCT sync_run_id FROM changed) r),
     bucket_facts AS MATERIALIZED (
       SELECT b.org_id, b.provider, b.cost_class,
              ${bucketWaitingSql(s, 'b.org_id', 'b.provider', 'b.cost_class', limit)} AS bucket_waiting
         FROM (SELECT DISTINCT org_id, provider, cost_class FROM changed) b),
     own_waiting AS MATERIALIZED (
       SELECT DISTINCT c.sync_run_id, ${ownWaitingSql(s, 'c')} AS own_waiting
         FROM changed c WHERE c.tier = ${REFERENCE}),
     ended AS (
       SELECT c.*, true AS run_live, rf.others_open,
              ARRAY(SELECT DISTINCT x FROM unnest(bf.bucket_waiting || COALESCE(ow.own_waiting, '{}')) AS x)
                AS waiting_runs
         FROM changed c
         JOIN run_facts rf ON rf.sync_run_id = c.sync_run_id
         JOIN bucket_facts bf ON bf.org_id = c.org_id AND bf.provider = c.provider AND bf.cost_class = c.cost_class
         LEFT JOIN own_waiting ow ON ow.sync_run_id = c.sync_run_id)`;
}

/**
 * The `wakes` and `armed` CTEs over the CTE `ended` (org_id, sync_run_id, trace, run_live and the
 * end facts) and, with `extra`, the CTE `extra` (org_id, run_id, kind, available_at, trace: the
 * caller's own wake-ups).
 * Rows are upserted in (run id, kind) order, the order every writer of outbox rows locks them in.
 * `armed` returns (kind, available_at) of every armed row; `now` is the time's parameter.
 */
export function armWakesSql(s: DbSchema, now: string, opts: { extra: boolean }): string {
  const extra = opts.extra
    ? `UNION ALL
       SELECT x.org_id, x.run_id, x.kind, x.available_at, x.trace FROM extra x`
    : '';
  return `wakes AS (
       SELECT e.org_id, e.sync_run_id AS run_id, 'finalize_sync_run' AS kind, ${now}::timestamptz AS available_at,
              e.trace
         FROM ended e WHERE NOT e.others_open AND e.run_live
       UNION ALL
       SELECT w ->> 'org_id', (w ->> 'sync_run_id')::uuid, 'dispatch_sync_run', ${now}::timestamptz, NULL::jsonb
         FROM ended e CROSS JOIN LATERAL unnest(e.waiting_runs) AS w
       ${extra}),
     armed AS (
       INSERT INTO ${s.sync_dispatch_outbox} AS o
         (org_id, sync_run_id, kind, status, available_at, trace_context, created_at, updated_at)
       SELECT DISTINCT ON (run_id, kind COLLATE "C")
              org_id, run_id, kind, ${ARM_TO}, available_at, trace, ${now}::timestamptz, ${now}::timestamptz
         FROM wakes ORDER BY run_id, kind COLLATE "C", available_at, trace IS NULL
       ${armConflictSql(now)}
       RETURNING o.kind, o.available_at)`;
}

/** The NOTIFY of armed rows due now, as a count column (`channel`: the parameter with the schema's channel). */
export function notifyArmedSql(now: string, channel: string): string {
  return `(SELECT count(CASE WHEN a.available_at <= ${now} THEN pg_notify(${channel}, a.kind) END)::int
             FROM armed a) AS armed`;
}

/** An ended unit whose wake-ups to arm, with the trace its run's finalize carries. */
export interface EndedRef {
  unitId: string;
  trace?: Record<string, string> | null;
}

/**
 * Arms what the ends of these units (already moved, earlier in the caller's transaction) wake, plus
 * the caller's own `extra` wake-ups, in ONE statement. The run is read live: a cancelled run is not
 * finalized again, a unit that went back to retrying keeps its run open.
 * Locks: the armed outbox rows, in (run id, kind) order. NOTIFYs the relay for rows due now
 * (delivered on commit). Returns, per ended unit, whether its run still had an open unit.
 */
export async function armEndWakes(
  tx: Tx,
  ended: readonly EndedRef[],
  extra: readonly Wake[],
  now: Date,
  wakeLimit = MAX_RUNS_WOKEN,
): Promise<{ id: string; others_open: boolean }[]> {
  if (ended.length === 0 && extra.length === 0) return [];
  const s = tx.schema;
  const { rows } = await tx.query<{ id: string | null; others_open: boolean | null }>(
    `WITH ended AS (
       SELECT u.id, u.org_id, u.sync_run_id, u.tier, t.trace,
              (SELECT r.status FROM ${s.sync_runs} r WHERE r.id = u.sync_run_id) NOT IN ${RUN_TERMINAL} AS run_live,
              ${endFactsSql(s, 'u', '$3')}
         FROM unnest($1::uuid[], $2::jsonb[]) AS t(id, trace)
         JOIN ${s.sync_run_units} u ON u.id = t.id),
     extra AS (
       SELECT * FROM unnest($5::text[], $6::uuid[], $7::text[], $8::timestamptz[], $9::jsonb[])
                  AS x(org_id, run_id, kind, available_at, trace)),
     ${armWakesSql(s, '$4', { extra: true })}
     SELECT e.id, e.others_open, ${notifyArmedSql('$4', '$10')}
       FROM (SELECT NULL) AS one LEFT JOIN ended e ON true`,
    [
      ended.map((e) => e.unitId),
      ended.map((e) => (e.trace ? JSON.stringify(e.trace) : null)),
      wakeLimit,
      now,
      extra.map((w) => w.orgId),
      extra.map((w) => w.runId),
      extra.map((w) => w.kind),
      extra.map((w) => w.availableAt),
      extra.map((w) => (w.trace ? JSON.stringify(w.trace) : null)),
      s.channel,
    ],
  );
  return rows.flatMap((r) => (r.id === null ? [] : [{ id: r.id, others_open: r.others_open ?? false }]));
}
