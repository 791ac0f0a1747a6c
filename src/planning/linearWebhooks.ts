/**
 * Linear webhook deliveries (linear.app/developers/webhooks): headers `Linear-Delivery` (a uuid per
 * delivery), `Linear-Event` (the entity type) and `Linear-Signature` (hex HMAC-SHA256 of the raw
 * body, no prefix); the body `{action: create|update|remove, type, data, webhookTimestamp, …}`.
 * `webhookTimestamp` (ms, when Linear sent it) further than WEBHOOK_MAX_AGE_MS from the receiver's
 * clock is refused as a replay, as Linear advises.
 *
 * An `Issue` names its team (`data.team.key`, else `data.teamId`); a `Comment` its issue
 * (`data.issueId`), whose source is the one the store read it from. `Issue` + `remove` deletes the
 * issue (its id is the work item's external id); an archive is an `update` and deletes nothing.
 */
import {
  bounded,
  datasetsIn,
  header,
  jsonObject,
  MAX_FIELD,
  record,
  StaleDelivery,
  UnreadableDelivery,
  type DeliveryHeaders,
  type SourceHint,
  type WebhookDelivery,
  type WebhookReader,
} from './webhookPayload.js';

export const LINEAR_WEBHOOK_PROVIDER = 'linear';

/** A delivery signed further than this from now (either way) is refused. */
export const WEBHOOK_MAX_AGE_MS = 60_000;

/** The datasets each entity type makes stale (its family); other types arm nothing. */
const EVENT_DATASETS: Readonly<Record<string, readonly string[]>> = {
  Issue: ['work-items', 'work-item-labels', 'work-item-history'],
  Comment: ['work-items', 'work-item-comments'],
};

function sourceOf(type: string, data: Record<string, unknown> | null): { key: string | null; hint: SourceHint | null } {
  if (type === 'Issue') {
    const key = bounded(record(data?.team)?.key, MAX_FIELD.source);
    const teamId = bounded(data?.teamId, MAX_FIELD.item);
    return { key, hint: key === null && teamId !== null ? { kind: 'team-id', id: teamId } : null };
  }
  if (type === 'Comment') {
    const issueId = bounded(data?.issueId ?? record(data?.issue)?.id, MAX_FIELD.item);
    return { key: null, hint: issueId === null ? null : { kind: 'work-item', id: issueId } };
  }
  return { key: null, hint: null };
}

/**
 * Reads a delivery whose signature was checked, at `now`. Throws UnreadableDelivery naming what is
 * missing, StaleDelivery when its webhookTimestamp is too far from `now`.
 */
export function readLinearDelivery(headers: DeliveryHeaders, body: Buffer, now: Date): WebhookDelivery {
  const deliveryId = header(headers, 'linear-delivery', MAX_FIELD.deliveryId);
  const headerEvent = header(headers, 'linear-event', MAX_FIELD.event);
  const partial = { deliveryId, event: headerEvent };
  if (deliveryId === null) {
    throw new UnreadableDelivery('Linear-Delivery', 'the Linear-Delivery header is missing', partial);
  }
  const payload = jsonObject(body, partial);
  const sentAt = payload.webhookTimestamp;
  if (typeof sentAt !== 'number' || !Number.isFinite(sentAt)) {
    throw new UnreadableDelivery('webhookTimestamp', 'the body has no numeric webhookTimestamp', partial);
  }
  const ageMs = now.getTime() - sentAt;
  if (Math.abs(ageMs) > WEBHOOK_MAX_AGE_MS) throw new StaleDelivery(ageMs);
  const event = bounded(payload.type, MAX_FIELD.event) ?? headerEvent;
  if (event === null) throw new UnreadableDelivery('type', 'the body has no entity type', partial);
  const action = bounded(payload.action, MAX_FIELD.action);
  const data = record(payload.data);
  const id = bounded(data?.id, MAX_FIELD.item);
  const { key, hint } = sourceOf(event, data);
  const summary: Record<string, unknown> = {};
  if (id !== null) summary.id = id;
  const identifier = bounded(data?.identifier, MAX_FIELD.item);
  if (identifier !== null) summary.identifier = identifier;
  return {
    deliveryId,
    event,
    action,
    source: key,
    sourceHint: hint,
    datasets: datasetsIn(EVENT_DATASETS, event),
    deletesWorkItem: event === 'Issue' && action === 'remove' ? id : null,
    namesWorkItem: null,
    summary,
  };
}

export const linearWebhookReader: WebhookReader = {
  provider: LINEAR_WEBHOOK_PROVIDER,
  signature: { header: 'linear-signature', prefix: '' },
  read: readLinearDelivery,
};
