/** Query strings: the keys each endpoint knows, with good and bad values, real and forged cursors. */
import fc from 'fast-check';
import type { z } from 'zod';
import type { Endpoint } from '../../../src/api/contracts/endpoints.js';
import { idOf, NONE, recent, type FuzzState, type StateValue } from './state.js';
import { anyText, encode, timeLike, wrongValue } from './values.js';

const asText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

/** Cursors: real ones as returned, damaged ones, forged ones. */
const cursor: fc.Arbitrary<StateValue<string>> = fc.oneof(
  { weight: 4, arbitrary: fc.nat().map((n) => (s: FuzzState) => recent(s.cursors, n)) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.nat(), fc.nat(), fc.constantFrom('cut', 'flip', 'append', 'upper'))
      .map(([n, at, how]) => (s: FuzzState) => {
        const c = recent(s.cursors, n);
        const i = at % c.length;
        if (how === 'cut') return c.slice(0, i);
        if (how === 'append') return `${c}A`;
        if (how === 'upper') return c.toUpperCase();
        return `${c.slice(0, i)}${c[i] === 'A' ? 'B' : 'A'}${c.slice(i + 1)}`;
      }),
  },
  {
    weight: 4,
    arbitrary: fc
      .oneof(
        fc.tuple(
          fc.constant('t'),
          fc.oneof(fc.stringMatching(/^[0-9]{1,20}$/), fc.constantFrom('-1', '1e5', '', ' 1'), wrongValue),
          fc.oneof(fc.uuid(), fc.constant(NONE.toUpperCase()), anyText(10), wrongValue),
        ),
        fc.tuple(fc.constant('i'), fc.oneof(fc.uuid(), anyText(10), wrongValue)),
        fc.tuple(fc.constantFrom('t', 'i', 'x'), wrongValue, wrongValue, wrongValue),
        wrongValue,
      )
      .map((v) => () => Buffer.from(JSON.stringify(v) ?? '').toString('base64url')),
  },
  { weight: 2, arbitrary: anyText(40).map((t) => () => t) },
);

/** A value for a query key, by what the key means. */
function queryValue(key: string): fc.Arbitrary<StateValue<string>> {
  const fixed = (a: fc.Arbitrary<unknown>) => a.map((v) => () => asText(v));
  switch (key) {
    case 'status':
      return fixed(
        fc.oneof(
          fc.constantFrom('pending', 'running', 'success', 'failed', 'cancelled', 'planned', 'retrying', 'dispatching'),
          fc.constantFrom('received', 'duplicate', 'rejected', 'armed'),
          fc.constantFrom('PENDING', 'done', '', 'success,failed'),
          anyText(),
        ),
      );
    case 'triggered_by':
      return fixed(fc.oneof(fc.constantFrom('manual', 'schedule', 'backfill', 'api', 'cron', 'API'), anyText()));
    case 'integration_id':
      return idOf('integrations');
    case 'created_after':
    case 'created_before':
      return fixed(timeLike);
    case 'cursor':
      return cursor;
    case 'purge_data':
      return fixed(fc.oneof(fc.constantFrom('true', 'false'), fc.constantFrom('TRUE', '1', 'yes', ''), anyText()));
    case 'hours':
    case 'days':
      return fixed(
        fc.oneof(fc.integer({ min: -5, max: 800 }).map(String), fc.constantFrom('1.5', '24h', ''), anyText()),
      );
    case 'limit':
      return fixed(
        fc.oneof(
          fc.integer({ min: -5, max: 120 }).map(String),
          fc.constantFrom('1.5', '1e2', '0x10', ' 5', '5 ', '+5', '05', '0100', '', 'ten', '9'.repeat(30)),
        ),
      );
    default:
      return fixed(fc.oneof(anyText(), fc.constantFrom('1', 'true', '')));
  }
}

/** The query string: known keys with good and bad values, unknown keys, repeats, broken encodings. */
export function queryOf(e: Endpoint): fc.Arbitrary<StateValue<string>> {
  const known = Object.keys((e.query as unknown as z.ZodObject).shape ?? {});
  const keys = fc.oneof(
    ...(known.length > 0 ? [{ weight: 6, arbitrary: fc.constantFrom(...known) }] : []),
    ...(known.includes('cursor') ? [{ weight: 3, arbitrary: fc.constant('cursor') }] : []),
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom('org_id', 'sort', 'limit[]', 'a[b]', '', '__proto__', 'constructor', 'toString'),
        anyText(10),
      ),
    },
  );
  const pair = keys.chain((k) => queryValue(k).map((v) => (s: FuzzState) => `${encode(k)}=${encode(v(s))}`));
  const pairs = fc.array(pair, { maxLength: 4 }).map((ps) => (s: FuzzState) => ps.map((p) => p(s)).join('&'));
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(() => '') },
    {
      weight: 6,
      arbitrary: pairs.map((p) => (s: FuzzState) => {
        const q = p(s);
        return q ? `?${q}` : '';
      }),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('?', '?&&', '?=', '?a=%E0%A4%A', '?%', '?limit=1&limit=2', '?a=1#frag')
        .map((q) => () => q),
    },
  );
}

/** A value of a query key the endpoint accepts. */
function validQueryValue(key: string): fc.Arbitrary<StateValue<string>> {
  const fixed = (a: fc.Arbitrary<string>) => a.map((v) => () => v);
  switch (key) {
    case 'status':
      return fixed(fc.constantFrom('pending', 'running', 'success', 'failed', 'cancelled', 'planned'));
    case 'triggered_by':
      return fixed(fc.constantFrom('manual', 'schedule', 'backfill', 'api'));
    case 'integration_id':
      return fc.nat().map((n) => (s: FuzzState) => recent(s.own.integrations, n));
    case 'created_after':
    case 'created_before':
      return fixed(
        fc
          .date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true })
          .map((d) => d.toISOString()),
      );
    case 'cursor':
      return fc.nat().map((n) => (s: FuzzState) => recent(s.cursors, n));
    case 'limit':
      return fixed(fc.integer({ min: 1, max: 100 }).map(String));
    case 'hours':
      return fixed(fc.integer({ min: 1, max: 720 }).map(String));
    case 'days':
      return fixed(fc.integer({ min: 1, max: 90 }).map(String));
    case 'provider':
      return fixed(fc.constantFrom('github', 'linear', 'jira', 'synthetic'));
    default:
      return fixed(fc.constant(''));
  }
}

/** A query string the endpoint accepts (a cursor may be another listing's, which it refuses). */
export function validQueryOf(e: Endpoint): fc.Arbitrary<StateValue<string>> {
  const known = Object.keys((e.query as unknown as z.ZodObject).shape ?? {});
  if (known.length === 0) return fc.constant(() => '');
  return fc
    .subarray(known, { maxLength: Math.min(3, known.length) })
    .chain((keys) =>
      fc
        .tuple(...keys.map((k) => validQueryValue(k).map((v) => (s: FuzzState) => `${k}=${encode(v(s))}`)))
        .map((pairs) => (s: FuzzState) => (pairs.length > 0 ? `?${pairs.map((p) => p(s)).join('&')}` : '')),
    );
}
