/**
 * Row checks for the normalized surfaces: each value is checked against its column's type and
 * put in the form that binds the same on node-postgres and PGlite (timestamps as ISO-8601 UTC
 * text, raw as JSON text). A bad value throws a `ValidationError` naming `<surface>.<column>`
 * before anything is written. NUL characters, which PostgreSQL text and jsonb cannot hold, are
 * dropped and unpaired UTF-16 surrogates replaced with U+FFFD (`storable`) in text values, text
 * array elements and every string and key inside `raw`. Text values and `raw` are bounded
 * (limits.ts): a cut value is recorded in `raw._truncated`, an oversized `raw` replaced by a marker.
 */
import { ValidationError } from '../../errors.js';
import { PULL_REQUEST_STATES, WORK_ITEM_EVENT_KINDS, WORK_ITEM_STATUSES } from '../../sdk/normalized.js';
import { cleanJson, wellFormed } from '../text.js';
import { boundedRaw, boundedText, DEFAULT_STORED_LIMITS, rawWithCuts, type Cuts, type StoredLimits } from './limits.js';
import { columnTypes, type ColumnType, type NormalizedSurface } from './surfaces.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INT4_MAX = 2_147_483_647;

/** Columns whose values come from a closed list (the tables' CHECK constraints). */
const ENUMS: Readonly<Record<string, readonly string[]>> = {
  'work_items.status': WORK_ITEM_STATUSES,
  'work_item_events.kind': WORK_ITEM_EVENT_KINDS,
  'pull_requests.state': PULL_REQUEST_STATES,
};

/** Columns a row must carry with a value (besides the key): NOT NULL without a default. */
const REQUIRED = ['org_id', 'integration_id', 'provider', 'external_id', 'last_synced_at'];

/**
 * A checked copy of `row` ready to bind, its text and `raw` within `limits`; throws
 * `ValidationError` naming the first bad column.
 */
export function prepareRow(
  surface: NormalizedSurface,
  row: Readonly<Record<string, unknown>>,
  limits: StoredLimits = DEFAULT_STORED_LIMITS,
): Record<string, unknown> {
  if (row === null || typeof row !== 'object' || Array.isArray(row)) {
    throw new ValidationError(surface, 'each row must be an object');
  }
  const types = columnTypes(surface);
  const out: Record<string, unknown> = {};
  const cuts: Cuts = {};
  for (const [column, value] of Object.entries(row)) {
    const type = Object.hasOwn(types, column) ? types[column] : undefined;
    if (type === undefined) throw new ValidationError(`${surface}.${column}`, 'unknown column');
    if (column === 'raw') continue; // last: it records what the other columns lost
    out[column] = prepareValue(`${surface}.${column}`, type, boundedText(column, value, limits.textMaxChars, cuts));
  }
  if (Object.hasOwn(row, 'raw') || Object.keys(cuts).length > 0) {
    const raw = prepareValue(`${surface}.raw`, 'jsonb', rawWithCuts(row.raw, cuts)) as string;
    out.raw = boundedRaw(raw, limits.rawMaxBytes, cuts);
  }
  for (const column of REQUIRED) {
    if (out[column] === undefined || out[column] === null || out[column] === '') {
      throw new ValidationError(`${surface}.${column}`, 'is required');
    }
  }
  return out;
}

function prepareValue(field: string, type: ColumnType, value: unknown): unknown {
  if (value === undefined || value === null) return nullFor(type);
  switch (type) {
    case 'text':
      return oneOf(field, expectString(field, value));
    case 'uuid':
      if (typeof value !== 'string' || !UUID.test(value)) throw new ValidationError(field, 'must be a UUID');
      return value;
    case 'text[]':
      if (!Array.isArray(value)) throw new ValidationError(field, 'must be an array of strings');
      return value.map((v, i) => expectString(`${field}[${i}]`, v));
    case 'integer':
      if (!Number.isSafeInteger(value) || Math.abs(value as number) > INT4_MAX) {
        throw new ValidationError(field, 'must be an integer within ±2147483647');
      }
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') throw new ValidationError(field, 'must be true or false');
      return value;
    case 'timestamptz':
      return timestamp(field, value);
    case 'jsonb':
      return json(field, value);
  }
}

/** An array column left null takes `{}` (the columns are NOT NULL); raw null takes `{}`. */
function nullFor(type: ColumnType): unknown {
  if (type === 'text[]') return [];
  if (type === 'jsonb') return '{}';
  return null;
}

function expectString(field: string, value: unknown): string {
  if (typeof value !== 'string') throw new ValidationError(field, 'must be a string');
  return storable(value);
}

/** `text` without NULs and with every unpaired surrogate replaced by U+FFFD. */
function storable(text: string): string {
  return wellFormed(text.includes('\0') ? text.replace(/\0/g, '') : text);
}

function oneOf(field: string, value: string): string {
  const allowed = ENUMS[field];
  if (allowed && !allowed.includes(value)) {
    throw new ValidationError(field, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value;
}

/** A Date or an ISO-8601 / RFC 3339 string with a zone, as ISO-8601 UTC text (binds as timestamptz). */
function timestamp(field: string, value: unknown): string {
  const ms =
    value instanceof Date
      ? value.getTime()
      : typeof value === 'string' && /(Z|[+-]\d{2}:?\d{2})$/i.test(value.trim())
        ? Date.parse(value)
        : NaN;
  if (!Number.isFinite(ms)) {
    throw new ValidationError(field, 'must be a valid Date or an ISO-8601 timestamp with a time zone');
  }
  return new Date(ms).toISOString();
}

function json(field: string, value: unknown): string {
  try {
    const text = cleanJson(value, storable);
    if (text === undefined) throw new Error('not JSON');
    return text;
  } catch (cause) {
    throw new ValidationError(field, 'must be JSON-serializable', { cause });
  }
}
