/**
 * A unit attempt's view of the work items webhook deliveries named for its source
 * (store/webhookNamedItems.ts): what was named before the attempt began, and forgetting it once
 * read. A naming that comes during the attempt is kept for the next run (its delivery armed one).
 */
import type { Db } from '../db/types.js';
import type { NamedItems } from '../sdk/types.js';
import { forgetNamedItems, listNamedItems } from '../store/webhookNamedItems.js';

/** The named items of `unit`'s source as of `begunAt`; undefined for a unit without a source. */
export function namedItemsOf(
  db: Db,
  unit: { integration_id: string; source_id: string | null },
  begunAt: Date,
): NamedItems | undefined {
  if (unit.source_id === null) return undefined;
  const scope = { integrationId: unit.integration_id, sourceId: unit.source_id };
  return {
    list: (limit) => listNamedItems(db, scope, begunAt, limit),
    forget: async (ids) => {
      if (ids.length > 0) await forgetNamedItems(db, scope, ids, begunAt);
    },
  };
}
