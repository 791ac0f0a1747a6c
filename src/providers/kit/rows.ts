/**
 * What every normalized row a provider writes starts with: the unit's scope (org, integration,
 * provider, sync time), the object's id at the provider and the object as read. A provider's
 * mapping adds its own columns after `baseRow(...)`.
 */
import type { UnitContext } from '../../sdk/types.js';

export type Row = Record<string, unknown>;

/** What every row of a unit carries; a provider's scope adds what names its container or site. */
export interface RowScope {
  orgId: string;
  integrationId: string;
  provider: string;
  /** The unit's clock time. */
  syncedAt: Date;
}

/** The scope of the rows `provider` writes in the unit, timed now. */
export function rowScope(ctx: UnitContext, provider: string): RowScope {
  return {
    orgId: ctx.unit.orgId,
    integrationId: ctx.unit.integrationId,
    provider,
    syncedAt: ctx.clock.now(),
  };
}

/** The columns every row starts with: its scope, the object's id at the provider, the object as read. */
export function baseRow(s: RowScope, externalId: string, raw: unknown): Row {
  return {
    org_id: s.orgId,
    integration_id: s.integrationId,
    provider: s.provider,
    external_id: externalId,
    last_synced_at: s.syncedAt,
    raw,
  };
}

/** An ISO-8601 time as a Date; absent or empty: null. */
export function at(v: string | null | undefined): Date | null {
  return v ? new Date(v) : null;
}
