/**
 * Every endpoint of the HTTP API: method, path, scope, request schemas and answers. Routes are
 * mounted from this table and the OpenAPI document is generated from it, so the two cannot drift.
 */
import { z } from 'zod';
import { IdParams, NoQuery } from './common.js';
import { AUTH_ERRORS, endpoint, NoParams, V1 } from './endpoint.js';
import {
  BackfillBody,
  CancelBody,
  IntegrationDeleteQuery,
  CredentialBody,
  JobRunQuery,
  NewIntegrationBody,
  PassQuery,
  SyncBody,
  UnitQuery,
} from './requests.js';
import * as R from './resources.js';
import { scheduleEndpoints } from './schedules.js';
import { webhookEndpoints } from './webhooks.js';
import { webhookDeliveryEndpoints } from './webhookDeliveries.js';
import { activityEndpoints } from './activity.js';
import { rateBudgetEndpoints } from './rateBudgets.js';
import { dataGlanceEndpoints } from './dataGlance.js';
import { freshnessEndpoints } from './freshness.js';

export type { Endpoint, RouteScope } from './endpoint.js';

export const endpoints = {
  createIntegration: endpoint({
    operationId: 'createIntegration',
    method: 'POST',
    path: `${V1}/integrations`,
    summary: 'Create an integration with its sources and datasets',
    tags: ['integrations'],
    scope: 'admin',
    params: NoParams,
    query: NoQuery,
    body: NewIntegrationBody,
    idempotent: true,
    success: { status: 201, description: 'the integration', schema: R.Integration },
    errors: [400, ...AUTH_ERRORS, 413, 415, 422],
  }),
  listIntegrations: endpoint({
    operationId: 'listIntegrations',
    method: 'GET',
    path: `${V1}/integrations`,
    summary: "The org's integrations",
    tags: ['integrations'],
    scope: 'read',
    params: NoParams,
    query: NoQuery,
    success: { status: 200, description: 'the integrations, oldest first', schema: R.IntegrationList },
    errors: [400, ...AUTH_ERRORS],
  }),
  getIntegration: endpoint({
    operationId: 'getIntegration',
    method: 'GET',
    path: `${V1}/integrations/:id`,
    summary: 'One integration',
    tags: ['integrations'],
    scope: 'read',
    params: IdParams,
    query: NoQuery,
    success: { status: 200, description: 'the integration', schema: R.Integration },
    errors: [400, ...AUTH_ERRORS, 404],
  }),
  deleteIntegration: endpoint({
    operationId: 'deleteIntegration',
    method: 'DELETE',
    path: `${V1}/integrations/:id`,
    summary: 'Delete an integration (its synced data stays unless purge_data=true)',
    description:
      'Deletes the integration with its sources, datasets, runs, JobRuns, schedules and watermarks. The rows ' +
      'it synced into the normalized tables and its work-item metrics stay, unless purge_data=true deletes ' +
      'them in the same transaction. Refused (409 integration_busy) while it has unfinished runs.',
    tags: ['integrations'],
    scope: 'admin',
    params: IdParams,
    query: IntegrationDeleteQuery,
    success: { status: 200, description: 'what was deleted', schema: R.IntegrationDeletion },
    idempotent: true,
    errors: [400, ...AUTH_ERRORS, 404, 409, 422],
  }),
  putIntegrationCredential: endpoint({
    operationId: 'putIntegrationCredential',
    method: 'PUT',
    path: `${V1}/integrations/:id/credential`,
    summary: "Set or replace the integration's credential",
    description:
      'The credential is stored encrypted (AES-256-GCM under SYNCRELAY_SECRET_KEY) and never returned: the ' +
      'answer shows `credential: {"set": true, "updated_at": …}`. A server without SYNCRELAY_SECRET_KEY ' +
      '(outside the embedded mode) answers 422 `secret_key_missing`. An Idempotency-Key record keeps the answer ' +
      'and a keyed fingerprint of the request, never the credential.',
    tags: ['integrations'],
    scope: 'admin',
    params: IdParams,
    query: NoQuery,
    body: CredentialBody,
    idempotent: true,
    success: { status: 200, description: 'the integration', schema: R.Integration },
    errors: [400, ...AUTH_ERRORS, 404, 413, 415, 422],
  }),
  deleteIntegrationCredential: endpoint({
    operationId: 'deleteIntegrationCredential',
    method: 'DELETE',
    path: `${V1}/integrations/:id/credential`,
    summary: "Remove the integration's credential",
    description: 'Answers the integration with `credential: {"set": false}`, whether or not one was set.',
    tags: ['integrations'],
    scope: 'admin',
    params: IdParams,
    query: NoQuery,
    idempotent: true,
    success: { status: 200, description: 'the integration', schema: R.Integration },
    errors: [400, ...AUTH_ERRORS, 404, 422],
  }),
  triggerSync: endpoint({
    operationId: 'triggerSync',
    method: 'POST',
    path: `${V1}/integrations/:id/sync`,
    summary: 'Start an incremental, full-resync or verify run',
    description:
      'Creates the JobRun and plans the run in one transaction and answers once it commits, whether or not ' +
      'the broker is reachable (the run is dispatched through the outbox). A second run of the same mode ' +
      'while one is not finished is a 409 naming it, unless `force` is true; more live runs of the integration ' +
      'than SYNC_INTEGRATION_MAX_LIVE_RUNS is a 409 `too_many_live_runs` with or without `force`, and a run of ' +
      'more units than SYNC_RUN_MAX_UNITS is a 422 `run_too_large` (both checked after the input, before ' +
      'anything is written). A verify plans the datasets whose provider declares `verifies`; an integration ' +
      'with none enabled is a 400 on `mode` naming the provider. An integration created with `sources: "all"` ' +
      "has its sources found first (a GitHub App installation's repositories): when they cannot be, the " +
      'answer is `source_discovery_failed`, a 422 when the credential or installation is refused, else a 503.',
    tags: ['triggers'],
    scope: 'trigger',
    params: IdParams,
    query: NoQuery,
    body: SyncBody,
    idempotent: true,
    success: { status: 202, description: 'planned and committed', schema: R.Accepted },
    errors: [400, ...AUTH_ERRORS, 404, 409, 413, 415, 422, 503],
  }),
  triggerBackfill: endpoint({
    operationId: 'triggerBackfill',
    method: 'POST',
    path: `${V1}/integrations/:id/backfill`,
    summary: 'Start a backfill of [since, before)',
    description:
      "Like a sync; the window is chunked by the provider. The window may not exceed the server's maximum " +
      '(366 days unless configured otherwise).',
    tags: ['triggers'],
    scope: 'trigger',
    params: IdParams,
    query: NoQuery,
    body: BackfillBody,
    idempotent: true,
    success: { status: 202, description: 'planned and committed', schema: R.Accepted },
    errors: [400, ...AUTH_ERRORS, 404, 409, 413, 415, 422, 503],
  }),
  cancelRun: endpoint({
    operationId: 'cancelSyncRun',
    method: 'POST',
    path: `${V1}/sync-runs/:id/cancel`,
    summary: 'Cancel a run and its unfinished units',
    tags: ['sync runs'],
    scope: 'trigger',
    params: IdParams,
    query: NoQuery,
    body: CancelBody,
    idempotent: true,
    success: { status: 202, description: 'cancelled, or already terminal', schema: R.CancelAccepted },
    errors: [400, ...AUTH_ERRORS, 404, 413, 415],
  }),
  listJobRuns: endpoint({
    operationId: 'listJobRuns',
    method: 'GET',
    path: `${V1}/job-runs`,
    summary: 'JobRun history, newest first',
    tags: ['history'],
    scope: 'read',
    params: NoParams,
    query: JobRunQuery,
    success: { status: 200, description: 'one page', schema: R.JobRunPage },
    errors: [400, ...AUTH_ERRORS],
  }),
  getRun: endpoint({
    operationId: 'getSyncRun',
    method: 'GET',
    path: `${V1}/sync-runs/:id`,
    summary: 'A run with its unit counts by status and its JobRun',
    tags: ['sync runs'],
    scope: 'read',
    params: IdParams,
    query: NoQuery,
    success: { status: 200, description: 'the run', schema: R.RunDetail },
    errors: [400, ...AUTH_ERRORS, 404],
  }),
  listUnits: endpoint({
    operationId: 'listSyncRunUnits',
    method: 'GET',
    path: `${V1}/sync-runs/:id/units`,
    summary: "A run's units",
    tags: ['sync runs'],
    scope: 'read',
    params: IdParams,
    query: UnitQuery,
    success: { status: 200, description: 'one page, in id order', schema: R.UnitPage },
    errors: [400, ...AUTH_ERRORS, 404],
  }),
  outboxStats: endpoint({
    operationId: 'getOutboxStats',
    method: 'GET',
    path: `${V1}/outbox/stats`,
    summary: "Outbox health of the org's runs",
    tags: ['operations'],
    scope: 'read',
    params: NoParams,
    query: NoQuery,
    success: { status: 200, description: 'counts, claims, lateness and recent errors', schema: R.OutboxStats },
    errors: [400, ...AUTH_ERRORS],
  }),
  reconcilerPasses: endpoint({
    operationId: 'listReconcilerPasses',
    method: 'GET',
    path: `${V1}/reconciler/passes`,
    summary: 'Recent reconciler passes and their counters (system-wide: admin tokens only)',
    tags: ['operations'],
    scope: 'admin',
    params: NoParams,
    query: PassQuery,
    success: { status: 200, description: 'newest first', schema: R.ReconcilerPasses },
    errors: [400, ...AUTH_ERRORS],
  }),
  healthz: endpoint({
    operationId: 'healthz',
    method: 'GET',
    path: '/healthz',
    summary: 'The process is up',
    tags: ['operations'],
    scope: 'public',
    params: NoParams,
    query: z.object({}),
    success: { status: 200, description: 'alive', schema: R.Health },
    errors: [],
  }),
  readyz: endpoint({
    operationId: 'readyz',
    method: 'GET',
    path: '/readyz',
    summary: 'The database and the broker are reachable',
    tags: ['operations'],
    scope: 'public',
    params: NoParams,
    query: z.object({}),
    success: { status: 200, description: 'ready', schema: R.Ready },
    errors: [503],
  }),
  ...scheduleEndpoints,
  ...webhookEndpoints,
  ...webhookDeliveryEndpoints,
  ...activityEndpoints,
  ...rateBudgetEndpoints,
  ...freshnessEndpoints,
  ...dataGlanceEndpoints,
} as const;

export type EndpointName = keyof typeof endpoints;
