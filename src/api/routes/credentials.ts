/**
 * PUT/DELETE /integrations/:id/credential. The credential is write-only: answers show whether one
 * is set, Idempotency-Key records keep the answer and a keyed fingerprint, never the credential.
 */
import type { FastifyInstance } from 'fastify';
import type { Tx } from '../../db/types.js';
import { storeCredential } from '../../secrets/credentials.js';
import { getIntegrationView } from '../../store/admin.js';
import { deleteCredential } from '../../store/credentials.js';
import { getIntegration, type IntegrationRow } from '../../store/integrations.js';
import { checkCredentialFor } from '../../planning/integrations.js';
import { principalOf } from '../auth.js';
import { endpoints } from '../contracts/endpoints.js';
import { ApiError } from '../errors.js';
import { answerIdempotently } from '../idempotency.js';
import { mount } from '../mount.js';
import { presentIntegration } from '../present.js';
import type { RouteDeps } from './deps.js';

function integrationNotFound(id: string): ApiError {
  return new ApiError(404, 'not_found', 'integration not found', { entity: 'integration', id });
}

/** The integration of the org, locked FOR UPDATE (a credential write waits for a concurrent one). */
async function lockIntegration(tx: Tx, orgId: string, id: string): Promise<IntegrationRow> {
  const row = await getIntegration(tx, id, { orgId, lock: true });
  if (!row) throw integrationNotFound(id);
  return row;
}

async function presented(tx: Tx, orgId: string, id: string) {
  const view = await getIntegrationView(tx, orgId, id);
  if (!view) throw integrationNotFound(id);
  return presentIntegration(view);
}

export function credentialRoutes(app: FastifyInstance, { ctx }: RouteDeps): void {
  mount(app, endpoints.putIntegrationCredential, async ({ params, body, request, reply }) => {
    const { orgId } = principalOf(request);
    const op = {
      orgId,
      operation: 'putIntegrationCredential',
      target: params.id,
      status: endpoints.putIntegrationCredential.success.status,
      body: { credential: ctx.secrets.fingerprint(body.credential) },
    };
    return answerIdempotently(ctx, request, reply, op, async (tx) => {
      const row = await lockIntegration(tx, orgId, params.id);
      checkCredentialFor(ctx.registry, row.provider, row.config, body.credential);
      const secret = { orgId, integrationId: params.id, secret: body.credential };
      await storeCredential(tx, ctx.secrets, secret, ctx.clock.now());
      return presented(tx, orgId, params.id);
    });
  });

  mount(app, endpoints.deleteIntegrationCredential, async ({ params, request, reply }) => {
    const { orgId } = principalOf(request);
    const op = {
      orgId,
      operation: 'deleteIntegrationCredential',
      target: params.id,
      status: endpoints.deleteIntegrationCredential.success.status,
    };
    return answerIdempotently(ctx, request, reply, op, async (tx) => {
      await lockIntegration(tx, orgId, params.id);
      await deleteCredential(tx, orgId, params.id);
      return presented(tx, orgId, params.id);
    });
  });
}
