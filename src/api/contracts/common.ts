/** Building blocks of the HTTP contracts: ids, times, text, cursors and the one error shape. */
import { z } from 'zod';
import { textProblem } from '../../planning/integrations.js';

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** A lone surrogate (not storable as UTF-8 text) or a NUL (refused by PostgreSQL text and jsonb). */
const UNSTORABLE_RE = /[\u0000]|\p{Cs}/u;
/** Earliest and latest instants a window bound may name. */
const MIN_TIME_MS = Date.UTC(1970, 0, 1);
const MAX_TIME_MS = Date.UTC(10000, 0, 1);
/** How deep a JSON value (an integration's config) may nest. */
export const MAX_JSON_DEPTH = 16;

/** A UUID in any letter case, answered in lower case. */
export const Uuid = z
  .string()
  .regex(UUID_RE, 'must be a UUID')
  .transform((s) => s.toLowerCase())
  .meta({ format: 'uuid', example: '0b6c4c5e-7e43-4d0a-9c1e-4e1f1f6f2a10' });

/** An ISO 8601 time with a zone (`Z` or `±hh:mm`) between 1970 and 9999, read as a Date. */
export const IsoTime = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 time with a zone, e.g. 2026-01-01T00:00:00Z' })
  .transform((s) => new Date(s))
  .refine((d) => d.getTime() >= MIN_TIME_MS && d.getTime() < MAX_TIME_MS, 'must be between 1970 and 9999');

/** A time as answered (always UTC, ISO 8601). */
export const TimeOut = z.iso.datetime().meta({ example: '2026-01-01T00:00:00.000Z' });

/** Whether a string can be stored in PostgreSQL text and jsonb. */
export function storable(s: string): boolean {
  return !UNSTORABLE_RE.test(s);
}

/**
 * Non-blank text of at most `max` characters (UTF-16 code units) without control characters (C0,
 * DEL, C1) or unpaired surrogates: what every name, key and expression the API stores must be.
 */
export function text(max: number) {
  return z
    .string()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .superRefine((s, ctx) => {
      const problem = textProblem(s, max);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });
}

/** Why a JSON value cannot be stored as jsonb, or null when it can. */
export function jsonProblem(value: unknown, depth = 0): string | null {
  if (depth > MAX_JSON_DEPTH) return `nests deeper than ${MAX_JSON_DEPTH} levels`;
  if (typeof value === 'string') return storable(value) ? null : 'contains a NUL character or an unpaired surrogate';
  if (Array.isArray(value)) {
    for (const v of value) {
      const p = jsonProblem(v, depth + 1);
      if (p) return p;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (!storable(k)) return 'has a key with a NUL character or an unpaired surrogate';
      const p = jsonProblem(v, depth + 1);
      if (p) return p;
    }
  }
  return null;
}

/** A JSON object storable as jsonb. */
export const JsonObject = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const problem = jsonProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** Page size of a listing: 1–100 (query text). */
export const Limit = z
  .string()
  .regex(/^[0-9]{1,3}$/, 'must be an integer from 1 to 100')
  .transform(Number)
  .refine((n) => n >= 1 && n <= 100, 'must be an integer from 1 to 100')
  .meta({ description: 'page size, 1–100 (default 50)', example: '50' });

/** An opaque page cursor as returned in `next_cursor`. */
export const CursorText = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9_-]+$/, 'is not a cursor returned by this endpoint')
  .meta({ description: 'the `next_cursor` of the previous page' });

/** The Idempotency-Key header: 1–255 visible ASCII characters. */
export const IdempotencyKey = z
  .string()
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be visible ASCII characters without spaces');

/** No query parameters at all. */
export const NoQuery = z.strictObject({});

export const IdParams = z.strictObject({ id: Uuid });

/** The one error shape every failure answers with. */
export const ErrorBody = z
  .strictObject({
    error: z.strictObject({
      code: z.string().meta({ example: 'invalid_input' }),
      message: z.string(),
      details: z.record(z.string(), z.unknown()),
    }),
  })
  .meta({ id: 'Error' });

export type ErrorBodyT = z.infer<typeof ErrorBody>;

/** A page of a listing; `next_cursor` is null on the last page. */
export function page<T extends z.ZodType>(item: T) {
  return z.strictObject({ items: z.array(item), next_cursor: z.string().nullable() });
}
