/**
 * How long each fault took to recover from, measured in the audit log: from the moment the fault
 * hit (or, for an outage, ended) until the work it took away was done again.
 *
 * - worker-kill / worker-freeze / net-partition: the units the worker held, until each is terminal
 *   (retried ones included), from the moment it hit;
 * - redis-restart / redis-flushall: the units dispatching when it hit (their messages lost), until
 *   each is claimed again or terminal, from when Redis was back;
 * - reconciler-kill: the outbox rows still claimed by the killed relay a second later, until each is
 *   published by another relay (marked dispatched or awaiting its ack), from the kill;
 * - publish-fail: every row a publish failure in the window left pending, until that row is next
 *   published, from the end of the window.
 * - pg-restart / pg-stop-long / pgbouncer-restart: the units the workers held when PostgreSQL (or
 *   the PgBouncer in front of it) went down, until each is terminal, from the moment it went down.
 * pg-terminate takes nothing one could name; it is not measured.
 */
import type { Db } from '../db/types.js';
import { auditTables } from './database.js';
import type { FaultRecord } from './injectors.js';
import type { FaultKind } from './options.js';
import { quantile } from './random.js';

export interface Recovery {
  /** Faults measured (those that took something away). */
  events: number;
  p50_ms: number | null;
  max_ms: number | null;
}

export function summarize(values: number[]): Recovery {
  return { events: values.length, p50_ms: quantile(values, 0.5), max_ms: values.length ? Math.max(...values) : null };
}

type Measure = (db: Db, r: FaultRecord) => Promise<number | null>;

const TERMINAL = "('success', 'failed', 'cancelled')";
/** An outbox event `e` showing its row published: marked dispatched, or awaiting its ack (exactly-once post_sync). */
const PUBLISHED_AGAIN =
  "(e.status = 'dispatched' OR (NOT e.claimed AND e.last_error IS NULL AND e.available_at > e.at))";

/** The latest of `at` over the things a query returns; null if one of them never recovered. */
async function latest(db: Db, sql: string, params: unknown[]): Promise<Date | null> {
  const { rows } = await db.query<{ done: Date | null; missing: number; n: number }>(sql, params);
  const row = rows[0];
  if (!row || row.n === 0 || row.missing > 0 || !row.done) return null;
  return row.done;
}

const heldUnits: Measure = async (db, r) => {
  if (r.units.length === 0) return null;
  const done = await latest(
    db,
    `SELECT max(e.at) AS done, count(*) FILTER (WHERE e.at IS NULL)::int AS missing, count(*)::int AS n
       FROM unnest($1::uuid[]) AS h(id)
       LEFT JOIN LATERAL (SELECT at FROM ${auditTables(db.schema).unitEvents} e
                           WHERE e.unit_id = h.id AND e.new_status IN ${TERMINAL}
                           ORDER BY e.id DESC LIMIT 1) e ON true`,
    [r.units.map((u) => u.unitId)],
  );
  return done && done.getTime() - r.startedAt;
};

const lostMessages: Measure = async (db, r) => {
  const events = auditTables(db.schema).unitEvents;
  const done = await latest(
    db,
    `WITH lost AS (
       SELECT DISTINCT ON (unit_id) unit_id, new_status FROM ${events}
        WHERE at <= $1 ORDER BY unit_id, id DESC)
     SELECT max(n.at) AS done, count(*) FILTER (WHERE n.at IS NULL)::int AS missing, count(*)::int AS n
       FROM lost l
       LEFT JOIN LATERAL (SELECT at FROM ${events} e WHERE e.unit_id = l.unit_id AND e.at > $1
                             AND (e.new_status = 'running' OR e.new_status IN ${TERMINAL})
                           ORDER BY e.id LIMIT 1) n ON true
      WHERE l.new_status = 'dispatching'`,
    [new Date(r.startedAt)],
  );
  return done && Math.max(0, done.getTime() - r.endedAt);
};

const claimedRows: Measure = async (db, r) => {
  const events = auditTables(db.schema).outboxEvents;
  const done = await latest(
    db,
    `WITH held AS (
       SELECT DISTINCT ON (run_id, kind) run_id, kind, claimed, at FROM ${events}
        WHERE at <= $1::timestamptz + interval '1 second' ORDER BY run_id, kind, id DESC)
     SELECT max(n.at) AS done, count(*) FILTER (WHERE n.at IS NULL)::int AS missing, count(*)::int AS n
       FROM held h
       LEFT JOIN LATERAL (SELECT at FROM ${events} e WHERE e.run_id = h.run_id AND e.kind = h.kind AND e.at > h.at
                             AND ${PUBLISHED_AGAIN}
                           ORDER BY e.id LIMIT 1) n ON true
      WHERE h.claimed AND h.at <= $1`,
    [new Date(r.startedAt)],
  );
  return done && Math.max(0, done.getTime() - r.startedAt);
};

const failedPublishes: Measure = async (db, r) => {
  const events = auditTables(db.schema).outboxEvents;
  const done = await latest(
    db,
    `WITH failed AS (
       SELECT run_id, kind, id, at FROM ${events}
        WHERE at BETWEEN $1 AND $2 AND last_error LIKE '%injected by syncrelay chaos%' AND NOT claimed)
     SELECT max(GREATEST(n.at, $2)) AS done, count(*) FILTER (WHERE n.at IS NULL)::int AS missing, count(*)::int AS n
       FROM failed f
       LEFT JOIN LATERAL (SELECT at FROM ${events} e WHERE e.run_id = f.run_id AND e.kind = f.kind AND e.id > f.id
                             AND ${PUBLISHED_AGAIN}
                           ORDER BY e.id LIMIT 1) n ON true`,
    [new Date(r.startedAt), new Date(r.endedAt)],
  );
  return done && Math.max(0, done.getTime() - r.endedAt);
};

const MEASURES: Partial<Record<FaultKind, Measure>> = {
  'worker-kill': heldUnits,
  'worker-freeze': heldUnits,
  'net-partition': heldUnits,
  'redis-restart': lostMessages,
  'redis-flushall': lostMessages,
  'reconciler-kill': claimedRows,
  'publish-fail': failedPublishes,
  'pg-restart': heldUnits,
  'pg-stop-long': heldUnits,
  'pgbouncer-restart': heldUnits,
};

/** Recovery per fault kind, and over every fault measured. */
export async function recoveryByKind(
  db: Db,
  records: FaultRecord[],
): Promise<{ all: Recovery; byKind: Partial<Record<FaultKind, Recovery>> }> {
  const byKind: Partial<Record<FaultKind, number[]>> = {};
  const all: number[] = [];
  for (const r of records) {
    const ms = await MEASURES[r.kind]?.(db, r);
    if (ms === null || ms === undefined) continue;
    (byKind[r.kind] ??= []).push(ms);
    all.push(ms);
  }
  const summaries = Object.fromEntries(Object.entries(byKind).map(([k, v]) => [k, summarize(v)]));
  return { all: summarize(all), byKind: summaries };
}
