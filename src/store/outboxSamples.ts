/**
 * outbox_depth_samples: the outbox's depth sampled by the reconciler at most once a minute (the
 * activity charts' only history of it), pruned after a retention, and read back per hour.
 */
import type { Tx } from '../db/types.js';
import { OUTBOX_PENDING } from './sql.js';

/** The org_id of a sample's every-org row, written at each sample even when nothing is pending. */
export const ALL_ORGS = '';

const MINUTE_MS = 60_000;

function table(tx: Tx): string {
  return tx.schema.table('outbox_depth_samples');
}

/** The minute `now` falls in: a sample's key (one sample a minute, whoever takes it). */
export function sampleMinute(now: Date): Date {
  return new Date(Math.floor(now.getTime() / MINUTE_MS) * MINUTE_MS);
}

/**
 * Samples the pending outbox at `now` under `now`'s minute: a row per org with pending rows, and the
 * every-org row. Nothing is read or written when that minute was sampled already (by this reconciler
 * or another; a race is settled by the key). Locks nothing it reads. Returns the rows written.
 */
export async function sampleOutboxDepth(tx: Tx, now: Date): Promise<number> {
  const t = table(tx);
  const { rowCount } = await tx.query(
    `WITH todo AS (SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM ${t} WHERE sampled_at = $1 AND org_id = $3)),
     pending AS (
       SELECT o.org_id, o.available_at FROM ${tx.schema.sync_dispatch_outbox} o, todo
        WHERE o.status = ${OUTBOX_PENDING}
     ),
     per_org AS (
       SELECT org_id, count(*)::int AS pending,
              count(*) FILTER (WHERE available_at <= $2)::int AS due,
              (extract(epoch FROM $2::timestamptz - min(available_at) FILTER (WHERE available_at <= $2)) * 1000)::bigint
                AS oldest_due_age_ms
         FROM pending GROUP BY org_id
     )
     INSERT INTO ${t} (sampled_at, org_id, pending, due, oldest_due_age_ms)
     SELECT $1, org_id, pending, due, oldest_due_age_ms FROM per_org WHERE org_id <> $3
     UNION ALL
     SELECT $1, $3, coalesce(sum(pending), 0)::int, coalesce(sum(due), 0)::int, max(oldest_due_age_ms)
       FROM per_org
     ON CONFLICT (sampled_at, org_id) DO NOTHING`,
    [sampleMinute(now), now, ALL_ORGS],
  );
  return rowCount;
}

/** Deletes up to `limit` samples older than `cutoff` (locks those rows). Returns how many. */
export async function pruneOutboxSamples(tx: Tx, cutoff: Date, limit: number): Promise<number> {
  const t = table(tx);
  const { rowCount } = await tx.query(
    `DELETE FROM ${t} WHERE (sampled_at, org_id) IN (
       SELECT sampled_at, org_id FROM ${t} WHERE sampled_at < $1 ORDER BY sampled_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [cutoff, limit],
  );
  return rowCount;
}

export interface OutboxDepthHour {
  /** Hours since the window's start. */
  bucket: number;
  /** Minutes sampled in the hour. */
  samples: number;
  /** Largest pending count of the org sampled in the hour. */
  pending_max: number;
  /** Largest due count of the org sampled in the hour. */
  due_max: number;
  /** Largest age of the org's longest-due row sampled in the hour, in ms (null when none was due). */
  oldest_due_age_ms_max: number | null;
}

/**
 * The org's samples in [since, until) summed up per hour from `since`: a sampled minute without a
 * row of the org counts as nothing pending. Hours without a sample are absent. Locks nothing.
 */
export async function outboxDepthByHour(tx: Tx, orgId: string, since: Date, until: Date): Promise<OutboxDepthHour[]> {
  const t = table(tx);
  const { rows } = await tx.query<OutboxDepthHour>(
    `SELECT floor(extract(epoch FROM a.sampled_at - $2::timestamptz) / 3600)::int AS bucket,
            count(*)::int AS samples,
            coalesce(max(o.pending), 0)::int AS pending_max,
            coalesce(max(o.due), 0)::int AS due_max,
            max(o.oldest_due_age_ms)::float8 AS oldest_due_age_ms_max
       FROM ${t} a LEFT JOIN ${t} o ON o.sampled_at = a.sampled_at AND o.org_id = $1
      WHERE a.org_id = $4 AND a.sampled_at >= $2 AND a.sampled_at < $3
      GROUP BY 1 ORDER BY 1`,
    [orgId, since, until, ALL_ORGS],
  );
  return rows;
}
