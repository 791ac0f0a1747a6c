/**
 * Option parsers. Commander calls them while parsing; an `InvalidArgumentError` becomes
 * `syncrelay: option '--x <v>' argument 'y' is invalid. <reason>` before anything is opened.
 */
import { InvalidArgumentError } from 'commander';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** An integer in [min, max]. */
export function intInRange(min: number, max = Number.MAX_SAFE_INTEGER): (raw: string) => number {
  return (raw) => {
    const n = raw.trim() === '' ? Number.NaN : Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(
        `Expected an integer from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ' up'}.`,
      );
    }
    return n;
  };
}

/** A number in [min, max] (fractions allowed). */
export function numberInRange(min: number, max: number): (raw: string) => number {
  return (raw) => {
    const n = raw.trim() === '' ? Number.NaN : Number(raw);
    if (!Number.isFinite(n) || n < min || n > max)
      throw new InvalidArgumentError(`Expected a number from ${min} to ${max}.`);
    return n;
  };
}

/** A number of seconds ≥ 0 (fractions allowed). */
export function seconds(raw: string): number {
  const n = raw.trim() === '' ? Number.NaN : Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('Expected a number of seconds ≥ 0.');
  return n;
}

/** `a,b , c` → ['a', 'b', 'c']; an empty entry is refused. */
export function list(raw: string): string[] {
  const items = raw.split(',').map((s) => s.trim());
  if (items.some((s) => s === ''))
    throw new InvalidArgumentError('Expected a comma-separated list without empty entries.');
  return items;
}

/** An ISO 8601 date or time (`2026-01-01`, `2026-01-01T00:00:00Z`); dates without a zone are UTC. */
export function isoTime(raw: string): Date {
  const text = raw.trim();
  const d = ISO_TIME.test(text) ? new Date(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text) : null;
  if (!d || Number.isNaN(d.getTime()))
    throw new InvalidArgumentError('Expected an ISO 8601 time such as 2026-01-01T00:00:00Z.');
  return d;
}

/** A UUID (integration and run ids). */
export function uuid(raw: string): string {
  const text = raw.trim();
  if (!UUID.test(text)) throw new InvalidArgumentError('Expected a UUID.');
  return text.toLowerCase();
}

/** A JSON object, e.g. an integration's config. */
export function jsonObject(raw: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw new InvalidArgumentError(`Not valid JSON (${err instanceof Error ? err.message : String(err)}).`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError('Expected a JSON object such as {"itemsPerDay": 5}.');
  }
  return value as Record<string, unknown>;
}
