/** Contracts of the webhook endpoints: a provider's signed deliveries, and the secret they are signed with. */
import { z } from 'zod';
import { PROVIDED_WEBHOOK_SECRET_RE, PROVIDED_WEBHOOK_SECRET_RULE } from '../../secrets/webhookSecrets.js';
import { IdParams, NoQuery, TimeOut } from './common.js';
import { AUTH_ERRORS, endpoint, V1 } from './endpoint.js';

const Id = z.string().meta({ format: 'uuid' });

/** Largest delivery body read, in bytes (GitHub caps its payloads at 25 MB; issue events are small). */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/** A provider's delivery: its payload, read only after its signature matched. */
const deliveryBody = (id: string, description: string) => z.record(z.string(), z.unknown()).meta({ id, description });

export const GithubDeliveryBody = deliveryBody(
  'GithubWebhookDelivery',
  "GitHub's event payload (its shape depends on X-GitHub-Event)",
);
export const LinearDeliveryBody = deliveryBody(
  'LinearWebhookDelivery',
  "Linear's payload: {action, type, data, webhookTimestamp, …}",
);
export const JiraDeliveryBody = deliveryBody(
  'JiraWebhookDelivery',
  "Jira's payload: {webhookEvent, timestamp, issue, …}",
);

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
    secret: z
      .string()
      .regex(PROVIDED_WEBHOOK_SECRET_RE, PROVIDED_WEBHOOK_SECRET_RULE)
      .optional()
      .meta({
        description:
          "store this secret instead of generating one: the signing secret the provider made (Linear's " +
          'webhook page shows one it generated); it is echoed once, like a generated one',
      }),
  })
  .optional();

export const WebhookSecret = z
  .strictObject({
    integration_id: Id,
    secret: z
      .string()
      .meta({ description: "shown once: enter it as the webhook's secret at the provider (GitHub, Jira, Linear)" }),
    version: z.number().int(),
    previous_expires_at: TimeOut.nullable().meta({
      description: 'until when the replaced secret is still accepted (after a rotation)',
    }),
  })
  .meta({ id: 'WebhookSecret' });

/** What every receiving endpoint says; `description` adds the provider's own rules. */
const SHARED =
  'The body is read raw (application/json, at most 1 MiB: 413 beyond) and the signature is checked before ' +
  'anything is parsed. A missing or wrong signature is a 401 `invalid_signature`, and so is an integration ' +
  'that does not exist, is not of this provider or has no webhook secret: the same answer, nothing written. ' +
  'A valid delivery is recorded and arms, in the same transaction, an incremental run of the source it ' +
  "names and the event's dataset family. Deliveries within SYNC_WEBHOOK_DEBOUNCE_SECONDS share one run; " +
  'one that comes while the integration has a live run is remembered and arms a run once that run ends. ';

function receiveEndpoint<Id extends string, B extends z.ZodType>(e: {
  operationId: Id;
  provider: string;
  name: string;
  body: B;
  description: string;
}) {
  return endpoint({
    operationId: e.operationId,
    method: 'POST',
    path: `${V1}/webhooks/${e.provider}/:id`,
    summary: `Receive a ${e.name} webhook delivery for the integration (${e.name}'s signature, no API token)`,
    description: SHARED + e.description,
    tags: ['webhooks'],
    scope: 'public',
    params: IdParams,
    query: NoQuery,
    body: e.body,
    success: { status: 202, description: 'recorded (and armed) in one transaction', schema: WebhookAccepted },
    errors: [400, 401, 413, 415],
  });
}

export const webhookEndpoints = {
  receiveGithubWebhook: receiveEndpoint({
    operationId: 'receiveGithubWebhook',
    provider: 'github',
    name: 'GitHub',
    body: GithubDeliveryBody,
    description:
      "X-Hub-Signature-256 (sha256=<hex>, HMAC-SHA256 of the body under the integration's webhook secret) is " +
      'checked first. A signed delivery without X-GitHub-Event or X-GitHub-Delivery is a 400 and recorded ' +
      'rejected. A valid one arms a run of the repository it names (repository.full_name): issues and ' +
      'issue_comment read the work-items family, pull_request and pull_request_review the pull-requests ' +
      'family; other events arm nothing. A redelivered X-GitHub-Delivery arms nothing. `issues` with action ' +
      '`deleted` also marks the issue deleted.',
  }),
  receiveLinearWebhook: receiveEndpoint({
    operationId: 'receiveLinearWebhook',
    provider: 'linear',
    name: 'Linear',
    body: LinearDeliveryBody,
    description:
      "Linear-Signature (<hex>, HMAC-SHA256 of the body) is checked first; then the body's webhookTimestamp: " +
      "more than 60 s from the server's clock is a 401 `stale_delivery` and nothing is written. A signed " +
      'delivery without Linear-Delivery or webhookTimestamp is a 400 and recorded rejected. `Issue` and ' +
      '`Comment` deliveries arm a run of the team (data.team.key, or the team of data.teamId, or the team of ' +
      "the comment's issue, as stored); other types arm nothing. `Issue` with action `remove` also marks the " +
      'issue deleted (an archive is an update).',
  }),
  receiveJiraWebhook: receiveEndpoint({
    operationId: 'receiveJiraWebhook',
    provider: 'jira',
    name: 'Jira',
    body: JiraDeliveryBody,
    description:
      'X-Hub-Signature (sha256=<hex>, HMAC-SHA256 of the body; an admin webhook registered with a secret) is ' +
      'checked first. The delivery id is X-Atlassian-Webhook-Identifier (without it: the event, issue id, ' +
      'comment id and timestamp). A signed delivery without webhookEvent is a 400 and recorded rejected. ' +
      "jira:issue_* and comment_* deliveries arm a run of the issue's project (issue.fields.project.key); " +
      'other events arm nothing. jira:issue_deleted also marks the issue deleted.',
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
      'Given `secret`, stores that one instead (a secret the provider generated). GitHub, Linear and Jira ' +
      'integrations take one (422 `webhooks_unsupported`). Not idempotent: a repeated request ' +
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
