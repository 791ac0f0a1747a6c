/**
 * Contract of an integration's data at a glance: the rows of each normalized surface (deleted and
 * archived among them) and the newest work items and pull requests, with the provider's links.
 */
import { z } from 'zod';
import { NORMALIZED_SURFACES } from '../../sinks/normalized/surfaces.js';
import { IdParams, NoQuery, TimeOut } from './common.js';
import { AUTH_ERRORS, endpoint, V1 } from './endpoint.js';

/** Newest items listed per kind. */
export const NEWEST_ITEMS = 10;

const Count = z.number().int().min(0);

export const SurfaceCount = z
  .strictObject({
    surface: z.enum(NORMALIZED_SURFACES).meta({ description: 'the normalized table (docs/normalized-store.md)' }),
    rows: Count.meta({ description: "the integration's rows, deleted and archived ones included" }),
    deleted: Count.nullable().meta({ description: 'rows marked deleted (null: the surface has no tombstones)' }),
    archived: Count.nullable().meta({ description: 'rows marked archived (null: the surface has no archive)' }),
  })
  .meta({ id: 'SurfaceCount' });

export const NewestItem = z
  .strictObject({
    external_id: z.string(),
    number: z.string().nullable(),
    title: z.string().nullable(),
    status: z.string().nullable().meta({ description: "a work item's normalized status, a pull request's state" }),
    container: z.string().nullable().meta({ description: 'the repository, team or project it belongs to' }),
    url: z
      .string()
      .nullable()
      .meta({ description: "the item's page at the provider: an http(s) URL, else null (never shown otherwise)" }),
    updated_at: TimeOut.nullable(),
    deleted_at: TimeOut.nullable(),
    archived_at: TimeOut.nullable(),
  })
  .meta({ id: 'NewestItem' });

export const IntegrationData = z
  .strictObject({
    integration_id: z.string().meta({ format: 'uuid' }),
    name: z.string(),
    provider: z.string(),
    surfaces: z.array(SurfaceCount),
    newest_work_items: z.array(NewestItem).meta({ description: `at most ${NEWEST_ITEMS}, newest update first` }),
    newest_pull_requests: z.array(NewestItem).meta({ description: `at most ${NEWEST_ITEMS}, newest update first` }),
  })
  .meta({ id: 'IntegrationData' });

export const dataGlanceEndpoints = {
  getIntegrationData: endpoint({
    operationId: 'getIntegrationData',
    method: 'GET',
    path: `${V1}/integrations/:id/data`,
    summary: "The integration's data at a glance",
    description:
      'Rows per normalized table (how many deleted and archived), and the newest work items and pull requests ' +
      "with links to the provider's pages.",
    tags: ['integrations'],
    scope: 'read',
    params: IdParams,
    query: NoQuery,
    success: { status: 200, description: 'the counts and the newest items', schema: IntegrationData },
    errors: [400, ...AUTH_ERRORS, 404],
  }),
};
