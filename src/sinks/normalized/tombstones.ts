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
import type { StoredEntry } from '../../sdk/normalized.js';
import { isTombstoneSurface, type TombstoneSurface } from './surfaces.js';

export type { StoredEntry };

/** Which rows of one surface a verify compares: one source of one integration. */
export interface TombstoneScope {
  orgId: string;
  integrationId: string;
  provider: string;
  surface: TombstoneSurface;
  /** The source's container (repository, project or team key); null for members (integration-wide). */
  source: string | null;
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
  checkLimit(limit);
  if (after !== null && typeof after !== 'string') throw new ValidationError('after', 'must be a string or null');
  return selectStored(tx, scope, 'r.external_id > $5 ORDER BY r.external_id LIMIT $6', [after ?? '', limit]);
}

/**
 * The rows of `scope` among `externalIds` (deleted ones included), as a verify compares a page of
 * its listing with them. One SELECT; takes no locks. Returns each row's external id, update time
 * and deleted_at, in no particular order.
 */
export async function storedByIds(
  tx: Tx,
  scope: TombstoneScope,
  externalIds: readonly string[],
): Promise<StoredEntry[]> {
  checkScope(scope);
  checkIds(externalIds);
  if (externalIds.length === 0) return [];
  return selectStored(tx, scope, 'r.external_id = ANY($5::text[])', [[...externalIds]]);
}

/**
 * The stored entries of `scope`'s rows meeting `rest` (a condition and any ORDER BY/LIMIT, its
 * parameters from $5 on): one SELECT, no locks.
 */
async function selectStored(tx: Tx, scope: TombstoneScope, rest: string, params: unknown[]): Promise<StoredEntry[]> {
  const { updated } = SHAPES[scope.surface];
  const updatedAt = updated === null ? 'NULL::timestamptz' : `r.${quoteIdent(updated)}`;
  const { rows } = await tx.query<{ external_id: string; updated_at: Date | null; deleted_at: Date | null }>(
    `SELECT r.external_id, ${updatedAt} AS updated_at, r.deleted_at
       FROM ${tx.schema.table(scope.surface)} r
      WHERE r.org_id = $1 AND r.integration_id = $2::uuid AND r.provider = $3 AND ${sourceCondition(tx, scope, '$4')}
        AND ${rest}`,
    [scope.orgId, scope.integrationId, scope.provider, scope.source, ...params],
  );
  return rows.map((r) => ({ externalId: r.external_id, updatedAt: r.updated_at, deletedAt: r.deleted_at }));
}

/**
 * Stamps the rows of `scope` with these external ids `verified_at = at`: the provider listed them.
 * One UPDATE; locks the rows it stamps until the transaction ends. Returns how many it stamped.
 */
export async function markVerified(
  tx: Tx,
  scope: TombstoneScope,
  externalIds: readonly string[],
  at: Date,
): Promise<number> {
  checkScope(scope);
  checkIds(externalIds);
  checkTime('at', at);
  if (externalIds.length === 0) return 0;
  const res = await tx.query(
    `UPDATE ${tx.schema.table(scope.surface)} r SET verified_at = $6
      WHERE r.org_id = $1 AND r.integration_id = $2::uuid AND r.provider = $3 AND ${sourceCondition(tx, scope, '$4')}
        AND r.external_id = ANY($5::text[])`,
    [scope.orgId, scope.integrationId, scope.provider, scope.source, [...externalIds], at.toISOString()],
  );
  return res.rowCount;
}

/**
 * A page of the live rows of `scope` a verify begun at `since` has neither seen listed (`verified_at`
 * before `since`, or never) nor seen written (`last_synced_at` before `since`): once its listing is
 * complete, the objects it is to confirm gone. External id order after `after` (null: from the
 * start), at most `limit`; a shorter page is the last. One SELECT; takes no locks. Returns the ids.
 */
export async function listUnseenPage(
  tx: Tx,
  scope: TombstoneScope,
  since: Date,
  after: string | null,
  limit: number,
): Promise<string[]> {
  checkScope(scope);
  checkTime('since', since);
  checkLimit(limit);
  const { rows } = await tx.query<{ external_id: string }>(
    `SELECT r.external_id FROM ${tx.schema.table(scope.surface)} r
      WHERE r.org_id = $1 AND r.integration_id = $2::uuid AND r.provider = $3 AND ${sourceCondition(tx, scope, '$4')}
        AND r.deleted_at IS NULL AND ${UNSEEN_SINCE('$5')} AND r.external_id > $6
      ORDER BY r.external_id
      LIMIT $7`,
    [scope.orgId, scope.integrationId, scope.provider, scope.source, since.toISOString(), after ?? '', limit],
  );
  return rows.map((r) => r.external_id);
}

/** Row `r` neither listed by a verify nor written since `param`. */
const UNSEEN_SINCE = (param: string) =>
  `(r.verified_at IS NULL OR r.verified_at < ${param}::timestamptz) AND r.last_synced_at < ${param}::timestamptz`;

/**
 * Marks the rows of `scope` with these external ids deleted at `at`: only rows not already deleted
 * (an earlier mark keeps its time) and, given `unseenSince`, only those neither listed by a verify
 * nor written since then (an object written back while a verify confirmed it gone is not marked);
 * never a hard delete. One UPDATE; locks the rows it marks until the transaction ends. Returns how
 * many it marked.
 */
export async function markDeleted(
  tx: Tx,
  scope: TombstoneScope,
  externalIds: readonly string[],
  at: Date,
  unseenSince: Date | null = null,
): Promise<number> {
  checkScope(scope);
  checkIds(externalIds);
  checkTime('at', at);
  if (unseenSince !== null) checkTime('unseenSince', unseenSince);
  if (externalIds.length === 0) return 0;
  const res = await tx.query(
    `UPDATE ${tx.schema.table(scope.surface)} r SET deleted_at = $6
      WHERE r.org_id = $1 AND r.integration_id = $2::uuid AND r.provider = $3 AND ${sourceCondition(tx, scope, '$4')}
        AND r.external_id = ANY($5::text[]) AND r.deleted_at IS NULL
        AND ($7::timestamptz IS NULL OR ${UNSEEN_SINCE('$7')})`,
    [
      scope.orgId,
      scope.integrationId,
      scope.provider,
      scope.source,
      [...externalIds],
      at.toISOString(),
      unseenSince?.toISOString() ?? null,
    ],
  );
  return res.rowCount;
}

function checkTime(field: string, at: Date): void {
  if (!(at instanceof Date) || !Number.isFinite(at.getTime())) throw new ValidationError(field, 'must be a valid Date');
}

function checkLimit(limit: number): void {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_TOMBSTONE_BATCH) {
    throw new ValidationError('limit', `must be an integer from 1 to ${MAX_TOMBSTONE_BATCH}`);
  }
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
