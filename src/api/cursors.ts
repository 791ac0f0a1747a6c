/** Opaque page cursors: base64url of a small tagged JSON array; anything else is a 400 on `cursor`. */
import type { TimeCursor } from '../store/admin.js';
import { invalidInput } from './errors.js';

/** A newest-first position: creation time in µs since the epoch (≤ 16 digits) and id. */
export function encodeTimeCursor(c: TimeCursor): string {
  return Buffer.from(JSON.stringify(['t', c.createdUs, c.id])).toString('base64url');
}

export function decodeTimeCursor(text: string): TimeCursor {
  const v = decodeCursor(text);
  if (v.length === 3 && v[0] === 't' && typeof v[1] === 'string' && /^[0-9]{1,16}$/.test(v[1]) && isUuid(v[2])) {
    return { createdUs: v[1], id: v[2] };
  }
  throw badCursor();
}

export function encodeIdCursor(id: string): string {
  return Buffer.from(JSON.stringify(['i', id])).toString('base64url');
}

export function decodeIdCursor(text: string): string {
  const v = decodeCursor(text);
  if (v.length === 2 && v[0] === 'i' && isUuid(v[1])) return v[1];
  throw badCursor();
}

function decodeCursor(text: string): unknown[] {
  try {
    const v: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (Array.isArray(v)) return v;
  } catch {
    // fall through: not a cursor of ours
  }
  throw badCursor();
}

function isUuid(v: unknown): v is string {
  return typeof v === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(v);
}

function badCursor() {
  return invalidInput('cursor', 'is not a cursor returned by this endpoint', 'query');
}
