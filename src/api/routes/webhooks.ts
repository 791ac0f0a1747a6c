/**
 * POST /webhooks/{github,linear,jira}/:id: a provider's delivery, authenticated by its signature
 * alone (no API token). The routes live in a scope of their own whose only body parser keeps the raw
 * bytes (at most WEBHOOK_BODY_LIMIT): the HMAC is checked on exactly what the provider signed, before
 * anything is parsed. An unknown integration, one of another provider and one without a secret
 * answer the same 401 as a wrong signature, after the same HMAC work, and write nothing. A signed
 * delivery dated too far from now (Linear's webhookTimestamp) is refused, 401 `stale_delivery`, and
 * nothing is written.
 *
 * POST /integrations/:id/webhook-secret: generates the secret (or stores the provider's) and
 * answers it once (no-store).
 */
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EngineContext } from '../../context.js';
import { describeError } from '../../errors.js';
import { StaleDelivery, UnreadableDelivery, type WebhookDelivery } from '../../planning/webhookPayload.js';
import { webhookReaderOf, WEBHOOK_PROVIDERS, type WebhookReader } from '../../planning/webhookReaders.js';
import { receiveDeliveryInTx, recordRejectedDelivery } from '../../planning/webhooks.js';
import {
  createWebhookSecret,
  loadAcceptedWebhookSecrets,
  verifyWebhookSignature,
} from '../../secrets/webhookSecrets.js';
import { getIntegration, type IntegrationRow } from '../../store/integrations.js';
import { principalOf } from '../auth.js';
import { endpoints } from '../contracts/endpoints.js';
import { WEBHOOK_BODY_LIMIT } from '../contracts/webhooks.js';
import { ApiError } from '../errors.js';
import { keptSigners } from '../webhookSigners.js';
import { mount } from '../mount.js';
import type { RouteDeps } from './deps.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The signers kept by this process (../webhookSigners.ts). */
const SIGNERS = keptSigners;
const EMPTY = Buffer.alloc(0);

/** The one answer to every delivery that does not prove it was signed with the integration's secret. */
function invalidSignature(): ApiError {
  return new ApiError(401, 'invalid_signature', 'the delivery is not signed with a webhook secret of this integration');
}

function headerOf(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The `provider` integration a path id names, or null (malformed id, none, another provider). */
async function integrationOf(ctx: EngineContext, provider: string, id: string): Promise<IntegrationRow | null> {
  const row = await getIntegration(ctx.db, id);
  return row?.provider === provider ? row : null;
}

/** Signers as stored now (no integration: none, and no secret). */
async function readSigners(
  ctx: EngineContext,
  provider: string,
  id: string | null,
  log: FastifyBaseLogger,
): Promise<{ integration: IntegrationRow | null; secrets: string[] }> {
  const integration = id === null ? null : await integrationOf(ctx, provider, id);
  const secrets = integration ? await acceptedSecrets(ctx, integration.id, log) : [];
  return { integration, secrets };
}

/**
 * The integration whose secret signed `body`, or null: the kept signers first, then (none kept, or
 * none matched) as stored now, kept again when they have a secret.
 */
async function signedBy(
  ctx: EngineContext,
  reader: WebhookReader,
  request: FastifyRequest,
  body: Buffer,
): Promise<IntegrationRow | null> {
  const raw = (request.params as { id?: unknown } | undefined)?.id;
  const id = typeof raw === 'string' && UUID_RE.test(raw) ? raw.toLowerCase() : null;
  const signature = headerOf(request, reader.signature.header);
  const matches = (secrets: string[]) => verifyWebhookSignature(body, signature, secrets, reader.signature.prefix);
  const now = ctx.clock.now().getTime();
  const kept = id === null ? null : SIGNERS.get(id, now);
  if (kept && kept.integration.provider === reader.provider && matches(kept.secrets)) return kept.integration;
  const stored = await readSigners(ctx, reader.provider, id, request.log);
  if (!matches(stored.secrets) || !stored.integration) return null;
  SIGNERS.set(stored.integration.id, { integration: stored.integration, secrets: stored.secrets }, now);
  return stored.integration;
}

/** The integration's accepted secrets; one that cannot be decrypted is logged (never shown) and none is accepted. */
async function acceptedSecrets(ctx: EngineContext, integrationId: string, log: FastifyBaseLogger): Promise<string[]> {
  try {
    return await loadAcceptedWebhookSecrets(ctx.db, ctx.secrets, integrationId, ctx.clock.now());
  } catch (err) {
    log.warn({ integrationId, err: describeError(err) }, 'webhook secret cannot be decrypted');
    return [];
  }
}

/** The delivery read; an unreadable one is recorded rejected (400), a stale one refused (401). */
async function readDelivery(
  ctx: EngineContext,
  reader: WebhookReader,
  integration: IntegrationRow,
  request: FastifyRequest,
  body: Buffer,
): Promise<WebhookDelivery> {
  try {
    return reader.read(request.headers, body, ctx.clock.now());
  } catch (err) {
    if (err instanceof StaleDelivery) {
      throw new ApiError(401, 'stale_delivery', err.message, { field: 'webhookTimestamp' });
    }
    if (!(err instanceof UnreadableDelivery)) throw err;
    const partial = { ...err.partial, reason: err.message };
    await ctx.db.transaction((tx) => recordRejectedDelivery(tx, integration, partial, ctx.clock.now()));
    throw new ApiError(400, 'invalid_delivery', err.message, { field: err.field });
  }
}

async function receive(
  ctx: EngineContext,
  reader: WebhookReader,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<unknown> {
  const { provider } = reader;
  const body = Buffer.isBuffer(request.body) ? request.body : EMPTY;
  const integration = await signedBy(ctx, reader, request, body);
  if (!integration) throw invalidSignature();
  const delivery = await readDelivery(ctx, reader, integration, request, body);
  const target = { provider, integrationId: integration.id };
  const received = await ctx.db.transaction((tx) => receiveDeliveryInTx(tx, ctx, target, delivery));
  if (!received) throw invalidSignature();
  request.log.info(
    {
      integrationId: integration.id,
      provider,
      event: delivery.event,
      outcome: received.outcome,
      duplicate: received.duplicate,
    },
    'webhook delivery received',
  );
  reply.code(202);
  return {
    status: 'accepted',
    id: received.id,
    duplicate: received.duplicate,
    outcome: received.outcome,
    sync_run_id: received.syncRunId,
  };
}

/** Each provider's receiving endpoint. */
const RECEIVERS = [
  { endpoint: endpoints.receiveGithubWebhook, provider: 'github' },
  { endpoint: endpoints.receiveLinearWebhook, provider: 'linear' },
  { endpoint: endpoints.receiveJiraWebhook, provider: 'jira' },
] as const;

/** The receiving route, in its own scope: a raw, bounded body parser for JSON and nothing else. */
async function receiveScope(app: FastifyInstance, { ctx }: RouteDeps): Promise<void> {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_r, body, done) =>
    done(null, body),
  );
  for (const { endpoint: e, provider } of RECEIVERS) {
    const reader = webhookReaderOf(provider)!;
    app.route({
      method: e.method,
      url: e.path,
      config: { scope: e.scope },
      bodyLimit: WEBHOOK_BODY_LIMIT,
      handler: (request, reply) => receive(ctx, reader, request, reply),
    });
  }
}

export function webhookRoutes(app: FastifyInstance, deps: RouteDeps): void {
  void app.register(async (child) => receiveScope(child, deps));

  const { ctx } = deps;
  mount(app, endpoints.createWebhookSecret, async ({ params, body, request, reply }) => {
    const { orgId } = principalOf(request);
    const created = await ctx.db.transaction(async (tx) => {
      const row = await getIntegration(tx, params.id, { orgId, lock: true });
      if (!row) throw new ApiError(404, 'not_found', 'integration not found', { entity: 'integration', id: params.id });
      if (!WEBHOOK_PROVIDERS.includes(row.provider)) {
        const known = WEBHOOK_PROVIDERS.join(', ');
        throw new ApiError(422, 'webhooks_unsupported', `webhooks are received for ${known} integrations only`, {
          provider: row.provider,
        });
      }
      const opts = {
        rotate: body?.rotate ?? false,
        graceMs: ctx.settings.webhookSecretGraceMs,
        ...(body?.secret === undefined ? {} : { given: body.secret }),
      };
      return createWebhookSecret(tx, ctx.secrets, { orgId, integrationId: row.id }, opts, ctx.clock.now());
    });
    SIGNERS.forget(params.id.toLowerCase());
    if (!created) {
      throw new ApiError(
        409,
        'webhook_secret_exists',
        'the integration has a webhook secret; rotate it to get a new one',
        {
          field: 'rotate',
        },
      );
    }
    reply.header('cache-control', 'no-store');
    return {
      integration_id: params.id,
      secret: created.secret,
      version: created.version,
      previous_expires_at: created.previousExpiresAt?.toISOString() ?? null,
    };
  });
}
