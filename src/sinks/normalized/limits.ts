/**
 * Bounds on what a normalized row stores, whichever provider wrote it:
 * - a text value (a title, a body, a description, a comment; each element of a text array) longer
 *   than `textMaxChars` characters (UTF-16 code units, as JavaScript counts them; a surrogate pair
 *   is never split) is cut to it, and the row's `raw` records which columns were cut and their
 *   original length: `raw._truncated = {"body": 2000000, "labels[3]": 70000}`. The key columns
 *   (org, integration, provider, external id) are never cut: a cut id would name another object.
 * - `raw`, as JSON text, larger than `rawMaxBytes` bytes (UTF-8) is replaced by a marker object
 *   holding its size, and what was cut: `{"_omitted": {"bytes": 2000123}, "_truncated": {…}}`.
 */
import { KEY_COLUMNS } from './surfaces.js';

/** What a normalized row may store (settings SYNC_STORED_TEXT_MAX_CHARS, SYNC_STORED_RAW_MAX_BYTES). */
export interface StoredLimits {
  /** Characters of one text value. @default 65536 */
  textMaxChars: number;
  /** Bytes of `raw`'s JSON text. @default 1 MiB */
  rawMaxBytes: number;
}

export const DEFAULT_STORED_LIMITS: Readonly<StoredLimits> = {
  textMaxChars: 65_536,
  rawMaxBytes: 1024 * 1024,
};

/** Column (`body`, `labels[3]`) → the length of the value before it was cut. */
export type Cuts = Record<string, number>;

const KEYS: ReadonlySet<string> = new Set(KEY_COLUMNS);

/** `value` of `column` within the text bound (text, or each string of an array), recording cuts in `cuts`. */
export function boundedText(column: string, value: unknown, max: number, cuts: Cuts): unknown {
  if (KEYS.has(column)) return value;
  if (typeof value === 'string') return cutText(value, max, column, cuts);
  if (!Array.isArray(value)) return value;
  return value.map((v: unknown, i) => (typeof v === 'string' ? cutText(v, max, `${column}[${i}]`, cuts) : v));
}

function cutText(text: string, max: number, name: string, cuts: Cuts): string {
  if (text.length <= max) return text;
  cuts[name] = text.length;
  const high = text.charCodeAt(max - 1);
  return text.slice(0, high >= 0xd800 && high <= 0xdbff ? max - 1 : max);
}

/** `raw` carrying the record of what was cut (`_truncated`); as it is when nothing was. */
export function rawWithCuts(raw: unknown, cuts: Cuts): unknown {
  if (Object.keys(cuts).length === 0) return raw;
  if (raw === undefined || raw === null) return { _truncated: cuts };
  if (typeof raw === 'object' && !Array.isArray(raw)) return { ...raw, _truncated: cuts };
  return { _value: raw, _truncated: cuts };
}

/** `json` (raw's JSON text) when within `maxBytes`, else the marker that stands for it. */
export function boundedRaw(json: string, maxBytes: number, cuts: Cuts): string {
  // A UTF-8 byte is at least one code unit and at most three per code unit: most texts need no count.
  if (json.length * 3 <= maxBytes) return json;
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes <= maxBytes) return json;
  const truncated = Object.keys(cuts).length > 0 ? { _truncated: cuts } : {};
  return JSON.stringify({ _omitted: { bytes, limit: maxBytes }, ...truncated });
}
