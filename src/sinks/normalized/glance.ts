/**
 * An integration's data at a glance: the rows of each normalized surface (deleted and archived ones
 * among them) and its newest work items and pull requests. Every statement reads through
 * `org_id = $1 AND integration_id = $2` (the surfaces' key index), so one org never sees another's
 * rows; none locks anything.
 */
import type { Tx } from '../../db/types.js';
import { DELETED_AT, isTombstoneSurface, NORMALIZED_SURFACES, type NormalizedSurface } from './surfaces.js';

/** The one surface whose rows a provider archives (Linear) besides deleting them. */
const ARCHIVING: NormalizedSurface = 'work_items';

export interface SurfaceCount {
  surface: NormalizedSurface;
  rows: number;
  /** Rows marked deleted; null where the surface has no tombstones. */
  deleted: number | null;
  /** Rows marked archived; null where the surface has no archive. */
  archived: number | null;
}

/**
 * Rows per normalized surface of the org's integration, in NORMALIZED_SURFACES' order (surface
 * names are bound values). Locks nothing. Returns one row per surface.
 */
export async function countSurfaceRows(tx: Tx, orgId: string, integrationId: string): Promise<SurfaceCount[]> {
  const parts = NORMALIZED_SURFACES.map((surface, i) => {
    const deleted = isTombstoneSurface(surface)
      ? `count(*) FILTER (WHERE ${DELETED_AT} IS NOT NULL)::int`
      : 'NULL::int';
    const archived = surface === ARCHIVING ? 'count(*) FILTER (WHERE archived_at IS NOT NULL)::int' : 'NULL::int';
    return `SELECT ${i} AS ord, $${i + 3}::text AS surface, count(*)::int AS rows, ${deleted} AS deleted,
                   ${archived} AS archived
              FROM ${tx.schema.table(surface)} WHERE org_id = $1 AND integration_id = $2`;
  });
  const { rows } = await tx.query<SurfaceCount & { ord: number }>(`${parts.join('\nUNION ALL\n')} ORDER BY ord`, [
    orgId,
    integrationId,
    ...NORMALIZED_SURFACES,
  ]);
  return rows.map(({ surface, rows: n, deleted, archived }) => ({ surface, rows: n, deleted, archived }));
}

export interface NewestItem {
  external_id: string;
  number: string | null;
  title: string | null;
  /** The normalized status (work items) or state (pull requests). */
  status: string | null;
  container: string | null;
  /** The provider's page of the item, as the provider gave it. */
  url: string | null;
  updated_at: Date | null;
  deleted_at: Date | null;
  archived_at: Date | null;
}

/**
 * The org's integration's `limit` most recently updated work items (deleted and archived ones too),
 * newest first. Locks nothing. Returns at most `limit` rows.
 */
export async function newestWorkItems(
  tx: Tx,
  orgId: string,
  integrationId: string,
  limit: number,
): Promise<NewestItem[]> {
  const { rows } = await tx.query<NewestItem>(
    `SELECT external_id, number, title, status, container, url, updated_at, deleted_at, archived_at
       FROM ${tx.schema.table('work_items')}
      WHERE org_id = $1 AND integration_id = $2
      ORDER BY updated_at DESC NULLS LAST, external_id
      LIMIT $3`,
    [orgId, integrationId, limit],
  );
  return rows;
}

/**
 * The org's integration's `limit` most recently updated pull requests (deleted ones too), newest
 * first. Locks nothing. Returns at most `limit` rows.
 */
export async function newestPullRequests(
  tx: Tx,
  orgId: string,
  integrationId: string,
  limit: number,
): Promise<NewestItem[]> {
  const { rows } = await tx.query<NewestItem>(
    `SELECT external_id, number::text AS number, title, state AS status, container, url, updated_at, deleted_at,
            NULL::timestamptz AS archived_at
       FROM ${tx.schema.table('pull_requests')}
      WHERE org_id = $1 AND integration_id = $2
      ORDER BY updated_at DESC NULLS LAST, external_id
      LIMIT $3`,
    [orgId, integrationId, limit],
  );
  return rows;
}
