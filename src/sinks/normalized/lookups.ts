/**
 * Lookups a webhook delivery needs when it names a Linear team or a work item by id rather than
 * the source's key: the key of a stored team, the source (`container`) of a stored work item.
 */
import type { Tx } from '../../db/types.js';

/** Whose rows a lookup reads: one integration's, of its provider. */
export interface LookupScope {
  orgId: string;
  integrationId: string;
  provider: string;
}

/**
 * The key of the team `externalId` as last synced (null when not stored or keyless). One SELECT by
 * primary key; takes no locks.
 */
export async function storedTeamKey(tx: Tx, scope: LookupScope, externalId: string): Promise<string | null> {
  const { rows } = await tx.query<{ key: string | null }>(
    `SELECT key FROM ${tx.schema.table('teams')}
      WHERE org_id = $1 AND integration_id = $2::uuid AND provider = $3 AND external_id = $4`,
    [scope.orgId, scope.integrationId, scope.provider, externalId],
  );
  return rows[0]?.key ?? null;
}

/**
 * The source (`container`) the work item `externalId` was last read from (null when not stored).
 * One SELECT by primary key; takes no locks.
 */
export async function storedWorkItemContainer(tx: Tx, scope: LookupScope, externalId: string): Promise<string | null> {
  const { rows } = await tx.query<{ container: string | null }>(
    `SELECT container FROM ${tx.schema.table('work_items')}
      WHERE org_id = $1 AND integration_id = $2::uuid AND provider = $3 AND external_id = $4`,
    [scope.orgId, scope.integrationId, scope.provider, externalId],
  );
  return rows[0]?.container ?? null;
}
