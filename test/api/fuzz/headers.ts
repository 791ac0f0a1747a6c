/** Headers: bearer tokens right and wrong, content types, Idempotency-Key and odd ones. */
import fc from 'fast-check';
import type { FuzzRequest } from './requests.js';
import type { FuzzTokens } from './server.js';
import type { FuzzState } from './state.js';

export type Auth = (s: FuzzState) => { header?: string; org: FuzzRequest['org'] };
export const as =
  (name: keyof FuzzTokens, org: FuzzRequest['org']): Auth =>
  (s) => ({ header: `Bearer ${s.tokens[name]}`, org });

/** The bearer token, as sent: the right ones, the wrong ones, broken headers. */
export function authOf(): fc.Arbitrary<Auth> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant(as('admin', 'own')) },
    { weight: 2, arbitrary: fc.constant(as('trigger', 'own')) },
    { weight: 2, arbitrary: fc.constant(as('read', 'own')) },
    { weight: 2, arbitrary: fc.constant(as('foreign', 'foreign')) },
    { weight: 1, arbitrary: fc.constant(as('revoked', null)) },
    { weight: 1, arbitrary: fc.constant<Auth>(() => ({ org: null })) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Auth>(
        (s) => ({ header: `bearer   ${s.tokens.admin}  `, org: 'own' }),
        (s) => ({ header: `Bearer ${s.tokens.admin}x`, org: null }),
        (s) => ({ header: `Bearer ${s.tokens.admin} extra`, org: null }),
        (s) => ({ header: s.tokens.admin, org: null }),
        () => ({ header: 'Bearer', org: null }),
        () => ({ header: 'Bearer ', org: null }),
        () => ({ header: 'Basic dXNlcjpwYXNz', org: null }),
        () => ({ header: `Bearer sr_${'A'.repeat(43)}`, org: null }),
        () => ({ header: `Bearer ${'x'.repeat(5000)}`, org: null }),
        (s) => ({ header: `Bearer ${s.tokens.metrics}`, org: null }),
      ),
    },
  );
}

const printable = (max: number) => fc.stringMatching(new RegExp(`^[\\x20-\\x7e]{0,${max}}$`));

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json;charset=UTF-8',
  'application/json; charset=latin1',
  'application/json; charset=utf-16le',
  'text/plain',
  'text/plain; charset=utf-8',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/vnd.api+json',
  'application/merge-patch+json',
  'application/octet-stream',
  '',
  '*/*',
  ';;;',
  'application/json, text/plain',
  'application/json; boundary="',
];

/** Headers besides authorization: content type, Idempotency-Key and odd ones. */
export const extraHeaders = fc.record(
  {
    'content-type': fc.oneof(
      { weight: 12, arbitrary: fc.constant('application/json') },
      { weight: 4, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
      { weight: 1, arbitrary: printable(60) },
    ),
    'idempotency-key': fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('k1', 'k2', 'k3', 'k4') },
      { weight: 1, arbitrary: fc.constantFrom('', ' ', 'has space', 'x'.repeat(256), 'x'.repeat(255)) },
      { weight: 1, arbitrary: printable(40) },
    ),
    'x-request-id': fc.oneof(fc.constantFrom('req-1', 'x'.repeat(65), 'a b', ''), printable(100)),
    traceparent: fc.oneof(
      fc.constant('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'),
      fc.constantFrom('00-00000000000000000000000000000000-0000000000000000-00', 'ff-x-y-z', ''),
      printable(80),
    ),
    tracestate: printable(80),
    accept: fc.constantFrom('application/json', '*/*', 'text/html', 'application/xml', ''),
    'accept-version': fc.constantFrom('1.0.0', '*', 'x'),
    'accept-encoding': fc.constantFrom('gzip', 'br', 'identity;q=0', '*'),
    'content-encoding': fc.constantFrom('gzip', 'deflate', 'identity', 'x'),
    'x-forwarded-for': fc.constantFrom('1.2.3.4', 'unknown', '::1, 10.0.0.1', ''),
    'x-junk': printable(200),
  },
  { requiredKeys: [] },
);
