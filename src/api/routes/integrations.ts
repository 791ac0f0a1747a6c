/** POST/GET /integrations, GET/DELETE /integrations/:id. */
import type { FastifyInstance } from 'fastify';
import { NotFoundError } from '../../errors.js';
import {
  createIntegrationInTx,
  deleteIntegrationInTx,
  validateIntegration,
  type NewIntegration,
} from '../../planning/integrations.js';
import { getIntegrationView, listIntegrationViews } from '../../store/admin.js';
import { principalOf } from '../auth.js';
import { endpoints } from '../contracts/endpoints.js';
import { ApiError } from '../errors.js';
import { answerIdempotently } from '../idempotency.js';
import { mount } from '../mount.js';
import { presentIntegration } from '../present.js';
import { credentialRoutes } from './credentials.js';
import type { RouteDeps } from './deps.js';

export function integrationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { ctx } = deps;
  mount(app, endpoints.createIntegration, async ({ body, request, reply }) => {
    const { orgId } = principalOf(request);
    const input: NewIntegration = {
      orgId,
      provider: body.provider,
      name: body.name,
      sources: body.sources,
      datasets: body.datasets,
      config: body.config,
      credential: body.credential,
    };
    validateIntegration(ctx.registry, input, { allowFaultInjection: ctx.settings.allowFaultInjection });
    const op = {
      orgId,
      operation: 'createIntegration',
      target: null,
      status: endpoints.createIntegration.success.status,
      // The fingerprint holds the credential's keyed fingerprint, never the credential.
      body:
        body.credential === undefined
          ? undefined
          : { ...(request.body as object), credential: ctx.secrets.fingerprint(body.credential) },
    };
    return answerIdempotently(ctx, request, reply, op, async (tx) => {
      const created = await createIntegrationInTx(tx, ctx, input);
      const view = await getIntegrationView(tx, orgId, created.id);
      if (!view) throw new ApiError(500, 'internal_error', 'the integration vanished after it was created');
      return presentIntegration(view);
    });
  });

  mount(app, endpoints.listIntegrations, async ({ request }) => {
    const rows = await listIntegrationViews(ctx.db, principalOf(request).orgId);
    return { items: rows.map(presentIntegration) };
  });

  mount(app, endpoints.getIntegration, async ({ params, request }) => {
    const view = await getIntegrationView(ctx.db, principalOf(request).orgId, params.id);
    if (!view) throw new ApiError(404, 'not_found', 'integration not found', { entity: 'integration', id: params.id });
    return presentIntegration(view);
  });

  mount(app, endpoints.deleteIntegration, async ({ params, query, request, reply }) => {
    const { orgId } = principalOf(request);
    const purgeData = query.purge_data === 'true';
    const op = {
      orgId,
      operation: purgeData ? 'deleteIntegration+purge' : 'deleteIntegration',
      target: params.id,
      status: endpoints.deleteIntegration.success.status,
    };
    return answerIdempotently(ctx, request, reply, op, async (tx) => {
      const view = await getIntegrationView(tx, orgId, params.id);
      if (!view) throw new NotFoundError('integration', params.id);
      const done = await deleteIntegrationInTx(tx, params.id, { orgId, purgeData });
      return {
        integration: presentIntegration(view),
        runs_deleted: done.runsDeleted,
        schedules_deleted: done.schedulesDeleted,
        purged_rows: done.purged,
      };
    });
  });

  credentialRoutes(app, deps);
}
