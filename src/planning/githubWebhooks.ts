/**
 * GitHub webhook deliveries read into what a trigger needs: the event's dataset family, the
 * repository it names (`repository.full_name`), the issue it deletes (`issues` with action
 * `deleted`). Headers: X-GitHub-Event, X-GitHub-Delivery (the same on a redelivery),
 * X-Hub-Signature-256 `sha256=<hex>` (docs.github.com, "Webhook events and payloads").
 */
import { itemKey } from '../providers/github/mapping.js';
import {
  bounded,
  datasetsIn,
  header,
  jsonObject,
  MAX_FIELD,
  positiveInt,
  record,
  UnreadableDelivery,
  type DeliveryHeaders,
  type WebhookDelivery,
  type WebhookReader,
} from './webhookPayload.js';

/** The provider whose deliveries this module reads. */
export const GITHUB_WEBHOOK_PROVIDER = 'github';

/**
 * The datasets each event makes stale (its family): issues and their comments → the work-items
 * family, pull requests and their reviews → the pull-requests family. Other events arm nothing.
 */
const EVENT_DATASETS: Readonly<Record<string, readonly string[]>> = {
  issues: ['work-items', 'work-item-labels', 'work-item-history'],
  issue_comment: ['work-items', 'work-item-comments'],
  pull_request: ['pull-requests'],
  pull_request_review: ['pull-requests', 'pull-request-reviews'],
};

/** The datasets an event maps to; empty for an event that arms nothing (ping, star, push …). */
export function datasetsOfEvent(event: string): readonly string[] {
  return datasetsIn(EVENT_DATASETS, event);
}

/**
 * Reads a delivery whose signature was checked: the `X-GitHub-Event` and `X-GitHub-Delivery`
 * headers, then the body as a JSON object. Throws UnreadableDelivery naming what is missing.
 */
export function readGithubDelivery(headers: DeliveryHeaders, body: Buffer): WebhookDelivery {
  const event = header(headers, 'x-github-event', MAX_FIELD.event);
  const deliveryId = header(headers, 'x-github-delivery', MAX_FIELD.deliveryId);
  const partial = { deliveryId, event };
  if (event === null) throw new UnreadableDelivery('X-GitHub-Event', 'the X-GitHub-Event header is missing', partial);
  if (deliveryId === null) {
    throw new UnreadableDelivery('X-GitHub-Delivery', 'the X-GitHub-Delivery header is missing', partial);
  }
  const payload = jsonObject(body, partial);
  const action = bounded(payload.action, MAX_FIELD.action);
  const repository = record(payload.repository);
  const source = bounded(repository?.full_name, MAX_FIELD.source);
  const number = positiveInt((record(payload.issue) ?? record(payload.pull_request))?.number);
  const summary: Record<string, unknown> = {};
  if (number !== null) summary.number = number;
  const repoId = positiveInt(repository?.id);
  if (repoId !== null) summary.repository_id = repoId;
  const deletes = event === 'issues' && action === 'deleted' && number !== null && source !== null;
  return {
    deliveryId,
    event,
    action,
    source,
    sourceHint: null,
    datasets: datasetsOfEvent(event),
    deletesWorkItem: deletes ? itemKey(source, number) : null,
    namesWorkItem: null,
    summary,
  };
}

export const githubWebhookReader: WebhookReader = {
  provider: GITHUB_WEBHOOK_PROVIDER,
  signature: { header: 'x-hub-signature-256', prefix: 'sha256=' },
  read: (headers, body) => readGithubDelivery(headers, body),
};
