/** integrations, their sources and datasets. */
import type { Tx } from '../db/types.js';

export interface IntegrationRow {
  id: string;
  org_id: string;
  provider: string;
  name: string;
  config: Record<string, unknown>;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface SourceRow {
  id: string;
  org_id: string;
  integration_id: string;
  external_key: string;
  name: string;
  enabled: boolean;
}

export interface DatasetRow {
  id: string;
  org_id: string;
  integration_id: string;
  dataset_key: string;
  enabled: boolean;
}

/** Inserts an integration. Locks nothing existing. Returns it. */
export async function insertIntegration(
  tx: Tx,
  i: { orgId: string; provider: string; name: string; config: Record<string, unknown> },
  now: Date,
): Promise<IntegrationRow> {
  const { rows } = await tx.query<IntegrationRow>(
    `INSERT INTO ${tx.schema.integrations} (org_id, provider, name, config, created_at, updated_at)
     VALUES ($1, $2, $3, $4::jsonb, $5, $5) RETURNING *`,
    [i.orgId, i.provider, i.name, JSON.stringify(i.config), now],
  );
  return rows[0]!;
}

/** Inserts sources (external keys) for an integration. Returns them. */
export async function insertSources(
  tx: Tx,
  orgId: string,
  integrationId: string,
  keys: readonly string[],
): Promise<SourceRow[]> {
  const { rows } = await tx.query<SourceRow>(
    `INSERT INTO ${tx.schema.integration_sources} (org_id, integration_id, external_key, name)
     SELECT $1, $2, k, k FROM unnest($3::text[]) AS k RETURNING *`,
    [orgId, integrationId, keys],
  );
  return rows;
}

/** Inserts enabled datasets for an integration. Returns them. */
export async function insertDatasets(
  tx: Tx,
  orgId: string,
  integrationId: string,
  keys: readonly string[],
): Promise<DatasetRow[]> {
  const { rows } = await tx.query<DatasetRow>(
    `INSERT INTO ${tx.schema.integration_datasets} (org_id, integration_id, dataset_key)
     SELECT $1, $2, k FROM unnest($3::text[]) AS k RETURNING *`,
    [orgId, integrationId, keys],
  );
  return rows;
}

/**
 * One integration (optionally of one org). Locks: FOR NO KEY UPDATE when `lock` — it serialises what
 * decides about the integration (triggers, arming a webhook run, credential and secret changes)
 * without blocking the key-share lock a row referencing it takes by its foreign key: a transaction
 * that only writes such a row (a webhook delivery that joins or is remembered) never waits for the
 * holder, which may be waiting for it (a delivery id, a pending-run row: a deadlock).
 */
export async function getIntegration(
  tx: Tx,
  id: string,
  opts: { orgId?: string; lock?: boolean } = {},
): Promise<IntegrationRow | null> {
  const { rows } = await tx.query<IntegrationRow>(
    `SELECT * FROM ${tx.schema.integrations}
      WHERE id = $1 AND ($2::text IS NULL OR org_id = $2)${opts.lock ? ' FOR NO KEY UPDATE' : ''}`,
    [id, opts.orgId ?? null],
  );
  return rows[0] ?? null;
}

export async function listIntegrations(tx: Tx, orgId: string | null): Promise<IntegrationRow[]> {
  const { rows } = await tx.query<IntegrationRow>(
    `SELECT * FROM ${tx.schema.integrations} WHERE ($1::text IS NULL OR org_id = $1) ORDER BY created_at, id`,
    [orgId],
  );
  return rows;
}

export async function listSources(tx: Tx, integrationId: string): Promise<SourceRow[]> {
  const { rows } = await tx.query<SourceRow>(
    `SELECT * FROM ${tx.schema.integration_sources} WHERE integration_id = $1 ORDER BY external_key`,
    [integrationId],
  );
  return rows;
}

export async function listDatasets(tx: Tx, integrationId: string): Promise<DatasetRow[]> {
  const { rows } = await tx.query<DatasetRow>(
    `SELECT * FROM ${tx.schema.integration_datasets} WHERE integration_id = $1 ORDER BY dataset_key`,
    [integrationId],
  );
  return rows;
}

/**
 * Enables the integration's sources among `keys`, inserting those it does not have (as create does:
 * name = key). Locks: the rows it inserts or re-enables (the caller holds the integration's lock).
 * Returns the keys it inserted or re-enabled.
 */
export async function enableListedSources(
  tx: Tx,
  orgId: string,
  integrationId: string,
  keys: readonly string[],
): Promise<string[]> {
  const { rows } = await tx.query<{ external_key: string }>(
    `INSERT INTO ${tx.schema.integration_sources} AS s (org_id, integration_id, external_key, name)
     SELECT $1, $2, k, k FROM unnest($3::text[]) AS k
     ON CONFLICT (integration_id, external_key) DO UPDATE SET enabled = true WHERE NOT s.enabled
     RETURNING s.external_key`,
    [orgId, integrationId, keys],
  );
  return rows.map((r) => r.external_key).sort();
}

/**
 * Disables the integration's enabled sources not among `keys`; their rows (and what was synced
 * from them) stay. Locks: the rows it disables. Returns their keys.
 */
export async function disableUnlistedSources(
  tx: Tx,
  integrationId: string,
  keys: readonly string[],
): Promise<string[]> {
  const { rows } = await tx.query<{ external_key: string }>(
    `UPDATE ${tx.schema.integration_sources} SET enabled = false
      WHERE integration_id = $1 AND enabled AND NOT (external_key = ANY ($2::text[]))
      RETURNING external_key`,
    [integrationId, keys],
  );
  return rows.map((r) => r.external_key).sort();
}
