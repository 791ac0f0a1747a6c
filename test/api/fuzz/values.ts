/**
 * Generated values the fuzz puts into paths, queries, headers and bodies: mostly near the valid,
 * with the hostile mixed in (wrong types, huge and control-character strings, odd unicode, deep
 * nesting, broken encodings).
 */
import fc from 'fast-check';

/** encodeURIComponent, except that a lone surrogate becomes the (invalid) UTF-8 of a surrogate. */
export function encode(s: string): string {
  return s
    .split(/(\p{Cs})/u)
    .map((part) => (/^\p{Cs}$/u.test(part) ? '%ED%A0%80' : encodeURIComponent(part)))
    .join('');
}

/** Text that breaks naive handling: control characters, lone surrogates, direction overrides, NUL. */
export const nastyText = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0007\u001b[31m',
  '\u007f',
  '\u0085',
  '\u2028\u2029',
  '\ud800',
  'x\udfff',
  '\ufeff',
  '\uffff',
  '\u202egnp.exe',
  '👩‍👩‍👧‍👦',
  'Ω≈ç√∫',
  '𝕳𝖊𝖑𝖑𝖔',
  "'; DROP TABLE integrations; --",
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '%s%n%x',
  '${7*7}',
  '__proto__',
  'constructor',
  '\r\nX-Injected: 1',
);

/** A string of up to `max` characters from every unit kind (binary covers control characters). */
export const anyText = (max = 40) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.string({ maxLength: max }) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: max }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: max }) },
    { weight: 2, arbitrary: nastyText },
  );

/** A long string: 100 characters to past the 64 KiB body limit. */
export const hugeText = fc
  .tuple(anyText(6), fc.integer({ min: 100, max: 70_000 }))
  .map(([s, n]) => (s === '' ? 'x' : s).repeat(Math.ceil(n / Math.max(1, s.length))).slice(0, n));

/** Any JSON value, shallow. */
export const anyJson = fc.jsonValue({ maxDepth: 3 });

/** Something of the wrong kind for almost any field. */
export const wrongValue = fc.oneof(
  { weight: 4, arbitrary: anyJson },
  { weight: 2, arbitrary: anyText() },
  { weight: 1, arbitrary: hugeText },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, 0, -1, 1e308, -0, [], {}, [[[]]], { a: { b: {} } }) },
  { weight: 1, arbitrary: fc.integer({ min: 2, max: 60 }).map((d) => nested(d)) },
);

/** `[[[...]]]` `depth` deep. */
export function nested(depth: number): unknown {
  let v: unknown = [];
  for (let i = 1; i < depth; i++) v = [v];
  return v;
}

const isoTime = fc
  .date({ min: new Date('1960-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString());

/** Times as clients send them, and as they should not. */
export const timeLike = fc.oneof(
  { weight: 4, arbitrary: isoTime },
  { weight: 1, arbitrary: isoTime.map((s) => s.replace('Z', '+14:00')) },
  { weight: 1, arbitrary: isoTime.map((s) => s.slice(0, 19)) },
  { weight: 1, arbitrary: isoTime.map((s) => s.slice(0, 10)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '2026-02-30T00:00:00Z',
      '0000-01-01T00:00:00Z',
      '9999-12-31T23:59:59.999Z',
      '+275760-09-13T00:00:00Z',
      '1969-12-31T23:59:59Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T00:00:00+25:00',
      'now',
      'NaN',
    ),
  },
  { weight: 1, arbitrary: wrongValue },
);

/** A URL path segment that is not an id: encoded junk, broken percent-encodings, traversal, huge. */
export const junkSegment = fc.oneof(
  { weight: 3, arbitrary: anyText(50).map(encode) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      '.',
      '..',
      '%00',
      '%ZZ',
      '%',
      '%E0%A4%A',
      '%C0%AF',
      '%F0%9F%98',
      '%2F',
      '%2e%2e',
      "1'%20OR%20'1'='1",
      '..%2F..%2F',
      'null',
      'undefined',
      '-1',
      '0',
      '1e3',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 90, max: 2500 }).map((n) => 'a'.repeat(n)) },
  { weight: 1, arbitrary: fc.uuid().map((u) => `${u}x`) },
);

/** Raw request bodies that are not a JSON document of the expected kind. */
export const rawBody = fc.oneof(
  { weight: 3, arbitrary: anyText(60) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      'null',
      '[]',
      '"x"',
      '0',
      '{',
      '{"mode":',
      '{"mode":"incremental",}',
      "{'mode':'incremental'}",
      '{"mode":"incremental","mode":"full_resync"}',
      '\ufeff{"mode":"incremental"}',
      '{"__proto__":{"admin":true}}',
      '{"constructor":{"prototype":{"admin":true}}}',
      '{"a":1e999999}',
      '{"a":"\\ud800"}',
      '{"a":"\\u0000"}',
      'mode=incremental',
      '<mode>incremental</mode>',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 30_000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 30_000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`) },
  { weight: 1, arbitrary: hugeText.map((s) => JSON.stringify({ mode: 'incremental', pad: s })) },
);

/**
 * A valid body, as is about half the time; otherwise one to three mutations: a field dropped, a
 * field given a near miss or anything at all, an unknown field added.
 */
export function mutated(
  valid: fc.Arbitrary<Record<string, unknown>>,
  nearMiss: Record<string, fc.Arbitrary<unknown>>,
): fc.Arbitrary<Record<string, unknown>> {
  const keys = Object.keys(nearMiss);
  type Mutation = (b: Record<string, unknown>) => Record<string, unknown>;
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    fc.constantFrom(...keys).map((k): Mutation => (b) => {
      const { [k]: _dropped, ...rest } = b;
      return rest;
    }),
    fc.constantFrom(...keys).chain((k) => nearMiss[k]!.map((v): Mutation => (b) => ({ ...b, [k]: v }))),
    fc.tuple(fc.constantFrom(...keys), wrongValue).map(([k, v]): Mutation => (b) => ({ ...b, [k]: v })),
    fc
      .tuple(fc.oneof(anyText(12), fc.constantFrom('org_id', 'id', '__proto__')), anyJson)
      .map(([k, v]): Mutation => (b) => ({ [k]: v, ...b })),
  );
  return fc.oneof(
    valid,
    fc
      .tuple(valid, fc.array(mutation, { minLength: 1, maxLength: 3 }))
      .map(([b, ms]) => ms.reduce((acc, m) => m(acc), b)),
  );
}
