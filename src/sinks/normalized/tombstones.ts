/**
 * Tombstones in the normalized store (migration 0017): what a verify compares with a provider's
 * listing, and how it marks what the provider no longer has. Nothing is ever hard-deleted: a
 * deleted row (and its children) stays, with `deleted_at` set, until the integration's data is
 * purged; any later write of the row clears `deleted_at` again (sink.ts).
 *
 * A source is scoped by `container` (the GitHub repository `owner/repo`, the Jira project key, the
 * Linear team key): work items, pull requests and sprints carry it; a comment is in its work item's
 * source and a review in its pull request's (found by the parent's key); members belong to the
 * whole integration (no source).
 */
import { quoteIdent, type Tx } from '../../db/types.js';
import { ValidationError } from '../../errors.js';
import { isTombstoneSurface, type TombstoneSurface } from './surfaces.js';

/** Which rows of one surface a verify compares: one source of one integration. */
export interface TombstoneScope {
  orgId: string;
  integrationId: string;
  provider: string;
  surface: TombstoneSurface;
  /** The source's container (repository, project or team key); null for members (integration-wide). */
  source: string | null;
}

/** One stored object as a verify compares it. */
export interface StoredEntry {
  externalId: string;
  /** The provider's update time as stored (null when the surface has none or the row lacks it). */
  updatedAt: Date | null;
  deletedAt: Date | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** At most this many rows per page, and ids per mark. */
export const MAX_TOMBSTONE_BATCH = 10_000;

/** How each surface's rows name their source and carry the provider's update time. */
const SHAPES: Record<TombstoneSurface, { updated: string | null; parent?: { table: string; via: string } }> = {
  work_items: { updated: 'updated_at' },
  pull_requests: { updated: 'updated_at' },
  sprints: { updated: null },
  work_item_comments: { updated: 'updated_at', parent: { table: 'work_items', via: 'work_item_external_id' } },
  pull_request_reviews: {
    updated: 'submitted_at',
    parent: { table: 'pull_requests', via: 'pull_request_external_id' },
  },
  members: { updated: null },
};

/**
 * A page of what the store holds for `scope`, deleted rows included, in external id order after
 * `after` (null: from the start; every external id is non-empty), at most `limit` rows; a page
 * shorter than `limit` is the last. One SELECT; takes no locks. Returns each row's external id,
 * update time and deleted_at.
 */
export async function listStoredPage(
  tx: Tx,
  scope: TombstoneScope,
  after: string | null,
  limit: number,
): Promise<StoredEntry[]> {
  checkScope(scope);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_TOMBSTONE_BATCH) {
    throw new ValidationError('limit', `must be an integer from 1 to ${MAX_TOMBSTONE_BATCH}`);
  }
  if (after !== null && typeof after !== 'string') throw new ValidationError('after', 'must be a string or null');
  const { updated } = SHAPES[scope.surface];
  const updatedAt = updated === null ? 'NULL::timestamptz' : `r.${quoteIdent(updated)}`;
  const { rows } = await tx.query<{ external_id: string; updated_at: Date | null; deleted_at: Date | null }>(
    `SELECT r.external_id, ${updatedAt} AS updated_at, r.deleted_at
       FROM ${tx.schema.table(scope.surface)} r
      WHERE r.org_id = $1 AND r.integration_id = $2::uuid AND r.provider = $3 AND ${sourceCondition(tx, scope, '$4')}
        AND r.external_id > $5
      ORDER BY r.external_id
      LIMIT $6`,
    [scope.orgId, scope.integrationId, scope.provider, scope.source, after ?? '', limit],
  );
  return rows.map((r) => ({ externalId: r.external_id, updatedAt: r.updated_at, deletedAt: r.deleted_at }));
}

/**
 * Marks the rows of `scope` with these external ids deleted at `at`: only rows not already deleted
 * (an earlier mark keeps its time); never a hard delete. One UPDATE; locks the rows it marks until
 * the transaction ends. Returns how many it marked.
 */
export async function markDeleted(
  tx: Tx,
  scope: TombstoneScope,
  externalIds: readonly string[],
  at: Date,
): Promise<number> {
  checkScope(scope);
  checkIds(externalIds);
  if (!(at instanceof Date) || !Number.isFinite(at.getTime())) throw new ValidationError('at', 'must be a valid Date');
  if (externalIds.length === 0) return 0;
  const res = await tx.query(
    `UPDATE ${tx.schema.table(scope.surface)} r SET deleted_at = $6
      WHERE r.org_id = $1 AND r.integration_id = $2::uuid AND r.provider = $3 AND ${sourceCondition(tx, scope, '$4')}
        AND r.external_id = ANY($5::text[]) AND r.deleted_at IS NULL`,
    [scope.orgId, scope.integrationId, scope.provider, scope.source, [...externalIds], at.toISOString()],
  );
  return res.rowCount;
}

/** The condition that keeps row `r` to the scope's source (`param` binds it). */
function sourceCondition(tx: Tx, scope: TombstoneScope, param: string): string {
  const { parent } = SHAPES[scope.surface];
  if (scope.surface === 'members') return `${param}::text IS NULL`;
  if (!parent) return `r.container = ${param}::text`;
  return `EXISTS (SELECT 1 FROM ${tx.schema.table(parent.table)} p
                   WHERE p.org_id = r.org_id AND p.integration_id = r.integration_id AND p.provider = r.provider
                     AND p.external_id = r.${quoteIdent(parent.via)} AND p.container = ${param}::text)`;
}

function checkScope(scope: TombstoneScope): void {
  if (!isTombstoneSurface(scope.surface)) {
    throw new ValidationError('surface', `"${String(scope.surface)}" is not a surface a provider deletes from`);
  }
  for (const field of ['orgId', 'integrationId', 'provider'] as const) {
    if (typeof scope[field] !== 'string' || scope[field] === '') throw new ValidationError(field, 'is required');
  }
  if (!UUID.test(scope.integrationId)) throw new ValidationError('integrationId', 'must be a UUID');
  if (scope.surface === 'members') {
    if (scope.source !== null) throw new ValidationError('source', 'members belong to the integration: must be null');
  } else if (typeof scope.source !== 'string' || scope.source === '') {
    throw new ValidationError('source', `is required for ${scope.surface}`);
  }
}

function checkIds(ids: readonly string[]): void {
  if (!Array.isArray(ids)) throw new ValidationError('externalIds', 'must be an array of strings');
  if (ids.length > MAX_TOMBSTONE_BATCH) {
    throw new ValidationError('externalIds', `at most ${MAX_TOMBSTONE_BATCH} at a time, got ${ids.length}`);
  }
  ids.forEach((id, i) => {
    if (typeof id !== 'string' || id === '')
      throw new ValidationError(`externalIds[${i}]`, 'must be a non-empty string');
  });
}
