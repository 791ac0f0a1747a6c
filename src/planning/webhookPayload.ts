/**
 * What every provider's webhook reader shares: the read delivery, the error of one that cannot be
 * read, and the bounded field readers. Pure: no I/O; a payload is never kept, only the bounded
 * fields a reader takes from it.
 */

/** Longest delivery id, event, action, source key and item id kept. */
export const MAX_FIELD = { deliveryId: 200, event: 100, action: 100, source: 300, item: 200 } as const;

/** How a delivery names its source when the payload does not spell the source's key. */
export type SourceHint =
  /** A Linear team's id: the source is the team whose id it is (the `teams` surface). */
  | { kind: 'team-id'; id: string }
  /** A work item's external id: the source is the one that item was read from. */
  | { kind: 'work-item'; id: string };

/** A signed delivery, read. */
export interface WebhookDelivery {
  deliveryId: string;
  /** The event as the provider names it (GitHub's X-GitHub-Event, Linear's type, Jira's webhookEvent). */
  event: string;
  action: string | null;
  /** The source's key as syncrelay stores it (`owner/repo`, a Linear team key, a Jira project key), if given. */
  source: string | null;
  /** Where to find the source when the payload does not give its key. */
  sourceHint: SourceHint | null;
  /** The datasets the event makes stale (its family); empty: the event arms nothing. */
  datasets: readonly string[];
  /** The work item the delivery deletes (its external id in the normalized store), if it deletes one. */
  deletesWorkItem: string | null;
  /**
   * The work item the run should read directly (its external id), for a provider whose listing lags
   * behind its edits (Jira's search); null when the listing will show it.
   */
  namesWorkItem: string | null;
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

/**
 * A signed delivery sent too long ago (or dated ahead of the receiver's clock): a replay is refused
 * and nothing is written.
 */
export class StaleDelivery extends Error {
  constructor(readonly ageMs: number) {
    super('the delivery was signed too long ago to be accepted');
    this.name = 'StaleDelivery';
  }
}

export type DeliveryHeaders = Record<string, string | string[] | undefined>;

export interface WebhookReader {
  provider: string;
  /** The header with the signature (lower case) and what precedes its 64 hex digits. */
  signature: { header: string; prefix: string };
  /**
   * Reads a delivery whose signature was checked, at `now`. Throws UnreadableDelivery (recorded
   * rejected, 400) or StaleDelivery (refused, nothing written).
   */
  read(headers: DeliveryHeaders, body: Buffer, now: Date): WebhookDelivery;
}

/** `value` if it is a non-empty string of at most `max` characters, else null. */
export function bounded(value: unknown, max: number): string | null {
  return typeof value === 'string' && value !== '' && value.length <= max ? value : null;
}

/** A header's (first) value, bounded. */
export function header(headers: DeliveryHeaders, name: string, max: number): string | null {
  const value = headers[name];
  return bounded(Array.isArray(value) ? value[0] : value, max);
}

/** `value` as a JSON object, or null. */
export function record(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/** A positive safe integer, or null. */
export function positiveInt(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
}

/** The body as a JSON object; throws UnreadableDelivery (field `body`) otherwise. */
export function jsonObject(body: Buffer, partial: UnreadableDelivery['partial']): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new UnreadableDelivery('body', 'the body is not valid JSON', partial);
  }
  const payload = record(parsed);
  if (!payload) throw new UnreadableDelivery('body', 'the body is not a JSON object', partial);
  return payload;
}

/** The datasets `event` maps to in `table`; none for an event not in it. */
export function datasetsIn(table: Readonly<Record<string, readonly string[]>>, event: string): readonly string[] {
  return Object.hasOwn(table, event) ? table[event]! : [];
}
