/**
 * What a deferral stores of the checkpoint a unit hands it: a JSON object within 4 KiB that does
 * not hold the integration's credential; anything else is dropped with a warning naming why (its
 * size, never its content).
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { containsSecret, encodeCheckpoint, MAX_CHECKPOINT_BYTES } from '../../src/domain/checkpoint.js';
import { RateLimitError } from '../../src/errors.js';
import type { UnitCheckpoint } from '../../src/domain/checkpoint.js';
import { storableCheckpoint } from '../../src/tasks/checkpoint.js';

const SECRET = 'lin_api_THISISASECRETKEY0123456789';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
  return { lines, logger };
}

function store(checkpoint: UnitCheckpoint | null, reveal: () => string = () => SECRET) {
  const { lines, logger } = capture();
  const err = new RateLimitError(1000, 'limited', { checkpoint });
  return { json: storableCheckpoint(err, { id: 'cred-1', reveal }, logger), lines };
}

describe('encodeCheckpoint', () => {
  it('stores a JSON object up to MAX_CHECKPOINT_BYTES of UTF-8, counting bytes, not characters', () => {
    const fits = { a: 'x'.repeat(MAX_CHECKPOINT_BYTES - 8) }; // {"a":"…"} is 8 bytes around it
    expect(encodeCheckpoint(fits)).toEqual({ ok: true, json: JSON.stringify(fits) });
    expect(encodeCheckpoint({ a: 'x'.repeat(MAX_CHECKPOINT_BYTES - 7) })).toMatchObject({ reason: 'too_large' });
    const wide = { a: 'é'.repeat(MAX_CHECKPOINT_BYTES / 2) }; // 2 bytes each
    expect(encodeCheckpoint(wide)).toEqual({ ok: false, reason: 'too_large', bytes: MAX_CHECKPOINT_BYTES + 8 });
  });

  it('refuses what is not a JSON object', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const [i, v] of [null, 'text', 3, [1, 2], cyclic, { n: 1n }].entries()) {
      expect(encodeCheckpoint(v), `case ${i}`).toEqual({ ok: false, reason: 'not_an_object' });
    }
  });

  it('containsSecret sees the secret as it is and as JSON escapes it', () => {
    expect(containsSecret(JSON.stringify({ a: `x${SECRET}y` }), SECRET)).toBe(true);
    expect(containsSecret(JSON.stringify({ a: 'we"ird\\key' }), 'we"ird\\key')).toBe(true);
    expect(containsSecret(JSON.stringify({ a: 'cursor' }), SECRET)).toBe(false);
    expect(containsSecret('{}', '')).toBe(false);
  });
});

describe('storableCheckpoint', () => {
  it('a checkpoint of positions and counts is stored as JSON text', () => {
    const { json, lines } = store({ after: 'Y3Vyc29y', counts: { work_items: 50 } });
    expect(JSON.parse(json!)).toEqual({ after: 'Y3Vyc29y', counts: { work_items: 50 } });
    expect(lines).toEqual([]);
    expect(store(null).json).toBeNull();
  });

  it('one over 4 KiB is dropped, its size logged and not its content', () => {
    const { json, lines } = store({ after: 'c'.repeat(5000) });
    expect(json).toBeNull();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'unit checkpoint dropped', reason: 'too_large', bytes: 5012, limit: 4096 });
    expect(JSON.stringify(lines)).not.toContain('c'.repeat(100));
  });

  it('one holding the credential is dropped, and the warning does not name it', () => {
    const { json, lines } = store({ after: 'cursor', header: `Authorization: ${SECRET}` });
    expect(json).toBeNull();
    expect(lines[0]).toMatchObject({ msg: 'unit checkpoint dropped', reason: 'holds_credential' });
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });

  it('a credential that cannot be read does not stop the checkpoint', () => {
    const { json } = store({ after: 'cursor' }, () => {
      throw new Error('no key');
    });
    expect(json).toBe('{"after":"cursor"}');
  });
});
