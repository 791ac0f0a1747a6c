/**
 * Jira webhook deliveries (developer.atlassian.com/cloud/jira/platform/webhooks/, "Secure admin
 * webhooks"): an admin webhook registered with a secret carries `X-Hub-Signature: sha256=<hex>`
 * (HMAC-SHA256 of the raw body) and `X-Atlassian-Webhook-Identifier` (unique per delivery, the same
 * on every retry). The body: `{timestamp, webhookEvent, issue: {id, key, fields: {project}}, comment?,
 * changelog?, …}`. Without the identifier header (Data Center sends none) the delivery's id is made
 * of what a retry repeats unchanged: event, issue id, comment id and timestamp.
 *
 * The source is the issue's project (`issue.fields.project.key`, else the key's prefix); a
 * `jira:issue_deleted` deletes the issue (its id is the work item's external id). Every other
 * delivery names its issue for the run to read directly: Jira's search may not show the edit yet.
 */
import {
  bounded,
  datasetsIn,
  header,
  jsonObject,
  MAX_FIELD,
  record,
  UnreadableDelivery,
  type DeliveryHeaders,
  type WebhookDelivery,
  type WebhookReader,
} from './webhookPayload.js';

export const JIRA_WEBHOOK_PROVIDER = 'jira';

const FAMILY = ['work-items', 'work-item-labels', 'work-item-history'];
const COMMENTS = ['work-items', 'work-item-comments'];

/** The datasets each webhookEvent makes stale (its family); other events arm nothing. */
const EVENT_DATASETS: Readonly<Record<string, readonly string[]>> = {
  'jira:issue_created': FAMILY,
  'jira:issue_updated': FAMILY,
  'jira:issue_deleted': FAMILY,
  comment_created: COMMENTS,
  comment_updated: COMMENTS,
  comment_deleted: COMMENTS,
};

const KEY_RE = /^([A-Z][A-Z0-9_]*)-[1-9][0-9]*$/;

/** A numeric id as Jira spells it (a string, sometimes a number). */
function idOf(value: unknown): string | null {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return String(value);
  return bounded(value, MAX_FIELD.item);
}

function projectOf(issue: Record<string, unknown> | null): string | null {
  const key = bounded(record(record(issue?.fields)?.project)?.key, MAX_FIELD.source);
  if (key !== null) return key;
  const issueKey = bounded(issue?.key, MAX_FIELD.item);
  return issueKey === null ? null : (KEY_RE.exec(issueKey)?.[1] ?? null);
}

/** Reads a delivery whose signature was checked. Throws UnreadableDelivery naming what is missing. */
export function readJiraDelivery(headers: DeliveryHeaders, body: Buffer): WebhookDelivery {
  const given = header(headers, 'x-atlassian-webhook-identifier', MAX_FIELD.deliveryId);
  const payload = jsonObject(body, { deliveryId: given, event: null });
  const event = bounded(payload.webhookEvent, MAX_FIELD.event);
  if (event === null) {
    throw new UnreadableDelivery('webhookEvent', 'the body has no webhookEvent', { deliveryId: given, event });
  }
  const issue = record(payload.issue);
  const issueId = idOf(issue?.id);
  const commentId = idOf(record(payload.comment)?.id);
  const timestamp = typeof payload.timestamp === 'number' ? payload.timestamp : null;
  const deliveryId = given ?? (timestamp === null ? null : `${event}:${issueId ?? ''}:${commentId ?? ''}:${timestamp}`);
  if (deliveryId === null || deliveryId.length > MAX_FIELD.deliveryId) {
    throw new UnreadableDelivery(
      'X-Atlassian-Webhook-Identifier',
      'the X-Atlassian-Webhook-Identifier header is missing and the body has no timestamp',
      { deliveryId: null, event },
    );
  }
  const summary: Record<string, unknown> = {};
  if (issueId !== null) summary.issue_id = issueId;
  const key = bounded(issue?.key, MAX_FIELD.item);
  if (key !== null) summary.key = key;
  if (commentId !== null) summary.comment_id = commentId;
  return {
    deliveryId,
    event,
    action: bounded(payload.issue_event_type_name, MAX_FIELD.action),
    source: projectOf(issue),
    sourceHint: issueId === null ? null : { kind: 'work-item', id: issueId },
    datasets: datasetsIn(EVENT_DATASETS, event),
    deletesWorkItem: event === 'jira:issue_deleted' ? issueId : null,
    // Search lags behind edits: the run reads the issue itself too.
    namesWorkItem: event === 'jira:issue_deleted' ? null : issueId,
    summary,
  };
}

export const jiraWebhookReader: WebhookReader = {
  provider: JIRA_WEBHOOK_PROVIDER,
  signature: { header: 'x-hub-signature', prefix: 'sha256=' },
  read: (headers, body) => readJiraDelivery(headers, body),
};
