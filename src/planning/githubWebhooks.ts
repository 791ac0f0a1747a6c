/**
 * GitHub webhook deliveries read into what a trigger needs: the event's dataset family, the
 * repository it names (`repository.full_name`), the issue or pull request number, and whether it
 * deletes an issue. Pure: no I/O; the payload is never kept, only the bounded fields read here.
 */
import { itemKey } from '../providers/github/mapping.js';

/** The provider whose deliveries this module reads. */
export const GITHUB_WEBHOOK_PROVIDER = 'github';

/** Longest delivery id, event, action and repository name kept. */
const MAX = { deliveryId: 200, event: 100, action: 100, source: 300 } as const;

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
  return Object.hasOwn(EVENT_DATASETS, event) ? EVENT_DATASETS[event]! : [];
}

/** A signed delivery, read. */
export interface WebhookDelivery {
  deliveryId: string;
  event: string;
  action: string | null;
  /** The repository it names (`owner/repo`), if any. */
  source: string | null;
  /** The issue's or pull request's number, if it names one. */
  number: number | null;
  /** The delivery deletes an issue (`issues` with action `deleted`). */
  deletesIssue: boolean;
  /** What is kept of the payload: a few bounded fields. */
  summary: Record<string, unknown>;
}

/** Why a signed delivery cannot be read (the 400's message); the delivery is recorded rejected. */
export class UnreadableDelivery extends Error {
  constructor(
    readonly field: string,
    message: string,
    /** What could be read of it before. */
    readonly partial: { deliveryId: string | null; event: string | null },
  ) {
    super(message);
    this.name = 'UnreadableDelivery';
  }
}

function bounded(value: unknown, max: number): string | null {
  return typeof value === 'string' && value !== '' && value.length <= max ? value : null;
}

function header(value: string | string[] | undefined, max: number): string | null {
  return bounded(Array.isArray(value) ? value[0] : value, max);
}

function record(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/**
 * Reads a delivery whose signature was checked: the `X-GitHub-Event` and `X-GitHub-Delivery`
 * headers, then the body as a JSON object. Throws UnreadableDelivery naming what is missing.
 */
export function readGithubDelivery(
  headers: Record<string, string | string[] | undefined>,
  body: Buffer,
): WebhookDelivery {
  const event = header(headers['x-github-event'], MAX.event);
  const deliveryId = header(headers['x-github-delivery'], MAX.deliveryId);
  const partial = { deliveryId, event };
  if (event === null) throw new UnreadableDelivery('X-GitHub-Event', 'the X-GitHub-Event header is missing', partial);
  if (deliveryId === null) {
    throw new UnreadableDelivery('X-GitHub-Delivery', 'the X-GitHub-Delivery header is missing', partial);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new UnreadableDelivery('body', 'the body is not valid JSON', partial);
  }
  const payload = record(parsed);
  if (!payload) throw new UnreadableDelivery('body', 'the body is not a JSON object', partial);
  const action = bounded(payload.action, MAX.action);
  const source = bounded(record(payload.repository)?.full_name, MAX.source);
  const item = record(payload.issue) ?? record(payload.pull_request);
  const n = item?.number;
  const number = typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : null;
  const summary: Record<string, unknown> = {};
  if (number !== null) summary.number = number;
  const repoId = record(payload.repository)?.id;
  if (typeof repoId === 'number' && Number.isSafeInteger(repoId)) summary.repository_id = repoId;
  const deletesIssue = event === 'issues' && action === 'deleted' && number !== null;
  return { deliveryId, event, action, source, number, deletesIssue, summary };
}

/** The normalized store's key of issue `number` of the source `container` (as the provider writes it). */
export function issueKey(container: string, number: number): string {
  return itemKey(container, number);
}
