/** Contracts of the webhook endpoints: a provider's signed deliveries, and the secret they are signed with. */
import { z } from 'zod';
import { IdParams, NoQuery, TimeOut } from './common.js';
import { AUTH_ERRORS, endpoint, V1 } from './endpoint.js';

const Id = z.string().meta({ format: 'uuid' });

/** Largest delivery body read, in bytes (GitHub caps its payloads at 25 MB; issue events are small). */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/** A GitHub delivery: its payload, read only after its signature matched. */
export const GithubDeliveryBody = z
  .record(z.string(), z.unknown())
  .meta({ id: 'GithubWebhookDelivery', description: "GitHub's event payload (its shape depends on X-GitHub-Event)" });

export const WebhookAccepted = z
  .strictObject({
    status: z.literal('accepted'),
    id: Id.meta({ description: 'the recorded delivery' }),
    duplicate: z.boolean().meta({ description: 'the delivery id was received before: nothing new was armed' }),
    outcome: z
      .enum(['armed', 'coalesced', 'pending', 'ignored'])
      .nullable()
      .meta({
        description:
          'armed: a run of the source was planned; coalesced: a run planned for it and not dispatched yet will ' +
          'read it; pending: the integration has a live run, a run is armed once it ends; ignored: the event, ' +
          'its repository or its datasets are not synced; null for a duplicate',
      }),
    sync_run_id: Id.nullable(),
  })
  .meta({ id: 'WebhookAccepted' });

export const WebhookSecretBody = z
  .strictObject({
    rotate: z.boolean().optional().meta({
      description:
        'replace an existing secret; the previous one is still accepted for SYNC_WEBHOOK_SECRET_GRACE_SECONDS',
    }),
  })
  .optional();

export const WebhookSecret = z
  .strictObject({
    integration_id: Id,
    secret: z.string().meta({ description: 'shown once: enter it as the webhook secret on GitHub' }),
    version: z.number().int(),
    previous_expires_at: TimeOut.nullable().meta({
      description: 'until when the replaced secret is still accepted (after a rotation)',
    }),
  })
  .meta({ id: 'WebhookSecret' });

export const webhookEndpoints = {
  receiveGithubWebhook: endpoint({
    operationId: 'receiveGithubWebhook',
    method: 'POST',
    path: `${V1}/webhooks/github/:id`,
    summary: "Receive a GitHub webhook delivery for the integration (GitHub's signature, no API token)",
    description:
      'The body is read raw (application/json, at most 1 MiB: 413 beyond) and X-Hub-Signature-256 ' +
      "(sha256=<hex>, HMAC-SHA256 of the body under the integration's webhook secret) is checked before " +
      'anything is parsed. A missing or wrong signature is a 401 `invalid_signature`, and so is an integration ' +
      'that does not exist, is not a GitHub one or has no webhook secret: the same answer, nothing written. ' +
      'A signed delivery without X-GitHub-Event or X-GitHub-Delivery, or whose body is not a JSON object, is ' +
      'a 400 and recorded rejected. A valid one is recorded and arms, in the same transaction, an incremental ' +
      'run of the repository it names (repository.full_name, an enabled source): issues and issue_comment ' +
      'read the work-items family, pull_request and pull_request_review the pull-requests family; other ' +
      'events arm nothing. Deliveries within SYNC_WEBHOOK_DEBOUNCE_SECONDS share one run; one that comes ' +
      'while the integration has a live run is remembered and arms a run once that run ends. A redelivered ' +
      'X-GitHub-Delivery arms nothing. `issues` with action `deleted` also marks the issue deleted.',
    tags: ['webhooks'],
    scope: 'public',
    params: IdParams,
    query: NoQuery,
    body: GithubDeliveryBody,
    success: { status: 202, description: 'recorded (and armed) in one transaction', schema: WebhookAccepted },
    errors: [400, 401, 413, 415],
  }),
  createWebhookSecret: endpoint({
    operationId: 'createWebhookSecret',
    method: 'POST',
    path: `${V1}/integrations/:id/webhook-secret`,
    summary: "Generate the integration's webhook secret (shown once)",
    description:
      'Generates 32 random bytes (hex), stores them encrypted like a credential and answers them once; no ' +
      'other answer shows them. An integration that has a secret answers 409 `webhook_secret_exists` unless ' +
      '`rotate` is true; after a rotation the previous secret is accepted for SYNC_WEBHOOK_SECRET_GRACE_SECONDS. ' +
      'Only GitHub integrations take one (422 `webhooks_unsupported`). Not idempotent: a repeated request ' +
      'makes another secret (an Idempotency-Key would keep the secret in its record).',
    tags: ['webhooks'],
    scope: 'admin',
    params: IdParams,
    query: NoQuery,
    body: WebhookSecretBody,
    success: { status: 201, description: 'the new secret', schema: WebhookSecret },
    errors: [400, ...AUTH_ERRORS, 404, 409, 413, 415, 422],
  }),
} as const;
