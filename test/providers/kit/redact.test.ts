/**
 * What a provider's answer may show (redact.ts): every form of the credential — as is, base64 (also
 * inside a Basic value), base64url, hex, URL-encoded, after its scheme, the token of `email:token` —
 * and every token-shaped string read `[redacted]`, whatever surrounds them; a summary is bounded and
 * holds no control character.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  authorizationForms,
  credentialForms,
  errorSummary,
  redact,
  redactedBody,
  redactError,
  REDACTED,
  SUMMARY_MAX,
} from '../../../src/providers/kit/redact.js';
import { findLeaks, secretForms } from '../../helpers/leakScan.js';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const b64url = (s: string) => Buffer.from(s, 'utf8').toString('base64url');

/** A token as providers issue them: letters, digits, `_` and `-`. */
const tokenArb = fc.stringMatching(/^[A-Za-z0-9_-]{8,48}$/);
/** Anything around it: any text, control characters and all. */
const textArb = fc.string({ maxLength: 80, unit: 'binary' });
const emailArb = fc.emailAddress();

describe('credentialForms and authorizationForms', () => {
  it('hold the credential, its encodings, and the token of email:token with its own', () => {
    const forms = credentialForms('me@acme.io:s3cr3t-token-value');
    for (const f of ['me@acme.io:s3cr3t-token-value', 's3cr3t-token-value', b64('me@acme.io:s3cr3t-token-value')]) {
      expect(forms).toContain(f);
    }
    expect(forms).toContain(b64('s3cr3t-token-value'));
    expect(forms).toContain(encodeURIComponent('me@acme.io:s3cr3t-token-value'));
    expect(forms).not.toContain('me@acme.io');
  });

  it('read a Basic header back to email:token, and a Bearer one to its token', () => {
    const basic = authorizationForms(`Basic ${b64('me@acme.io:s3cr3t-token-value')}`);
    expect(basic).toContain('s3cr3t-token-value');
    expect(basic).toContain(b64('me@acme.io:s3cr3t-token-value'));
    expect(authorizationForms('Bearer abcdef123456')).toContain('abcdef123456');
  });
});

describe('redact', () => {
  it('removes a token and every form a leak scan looks for, whatever surrounds it', () => {
    fc.assert(
      fc.property(tokenArb, fc.array(fc.tuple(textArb, fc.nat()), { maxLength: 6 }), textArb, (token, parts, tail) => {
        const forms = Object.values(secretForms(token));
        const text = parts.map(([t, i]) => `${t}${forms[i % forms.length]!}`).join('') + tail;
        const out = redact(text, credentialForms(token));
        expect(findLeaks(token, { out })).toEqual([]);
      }),
    );
  });

  it('removes email:token, its token and the Basic value, from the Authorization header alone', () => {
    fc.assert(
      fc.property(emailArb, tokenArb, textArb, textArb, (email, token, before, after) => {
        const pair = `${email}:${token}`;
        const header = `Basic ${b64(pair)}`;
        const text = `${before}${header}${after} ${token} ${b64(token)} ${pair} ${b64(pair)}${before}`;
        const out = redact(text, authorizationForms(header));
        expect(findLeaks(token, { out })).toEqual([]);
        expect(findLeaks(pair, { out })).toEqual([]);
        expect(out).not.toContain(b64(pair));
      }),
    );
  });

  it('removes token-shaped strings that are no integration’s own', () => {
    const foreign = [
      `ghp_${'a1B2'.repeat(9)}`,
      `gho_${'Zz09'.repeat(9)}`,
      `ghs_${'x7'.repeat(18)}`,
      `ghu_${'Q5'.repeat(18)}`,
      `github_pat_11AAAAAAA0${'b'.repeat(60)}`,
      `lin_api_${'k9'.repeat(20)}`,
      `lin_oauth_${'p3'.repeat(20)}`,
      `ATATT3xFfGF0${'T1'.repeat(40)}=12AB34CD`,
    ];
    for (const f of foreign) expect(redact(`before ${f} after`, [])).toBe(`before ${REDACTED} after`);
    // A JWT alone (an App's), and a private key in PEM, whole or cut short.
    const jwt = `${b64url('{"alg":"RS256","typ":"JWT"}')}.${b64url('{"iss":"123","iat":1}')}.c2lnbmF0dXJl_x-1`;
    expect(redact(`signed ${jwt}, refused`, [])).toBe(`signed ${REDACTED}, refused`);
    const pem = `-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA${'q'.repeat(40)}\n-----END RSA PRIVATE KEY-----`;
    expect(redact(`key ${pem} here`, [])).toBe(`key ${REDACTED} here`);
    expect(redact(`cut ${pem.slice(0, 60)}`, [])).toBe(`cut ${REDACTED}`);
    expect(redact('Authorization: Bearer eyJhbGciOi.J9x2.sig_123', [])).toBe(`Authorization: Bearer ${REDACTED}`);
    expect(redact('header token 0123456789abcdef0123', [])).toBe(`header token ${REDACTED}`);
    expect(redact('{"access_token":"abc123def456ghi789"}', [])).toBe(`{"access_token":"${REDACTED}"}`);
    expect(redact(`Basic ${b64('someone@else.io:their-secret')} sent`, [])).toBe(`Basic ${REDACTED} sent`);
  });

  it('leaves ordinary words alone', () => {
    const words = 'Basic authentication failed: the token has expired; Bearer token required. Validation Failed';
    expect(redact(words, credentialForms('s3cr3t-token-value'))).toBe(words);
  });
});

describe('errorSummary', () => {
  it('is bounded, holds no control character and no form of the token, for any text around it', () => {
    fc.assert(
      fc.property(tokenArb, textArb, textArb, fc.nat({ max: 3000 }), (token, before, after, pad) => {
        const text = `${before}${token}${'z'.repeat(pad)} Bearer ${token}${after} ${b64(token)}`;
        const out = errorSummary(text, credentialForms(token));
        expect(out.length).toBeLessThanOrEqual(SUMMARY_MAX);
        expect(out).not.toMatch(/[\p{Cc}\p{Cf}]/u);
        expect(findLeaks(token, { out })).toEqual([]);
      }),
    );
  });

  it('joins a token split by control, zero-width or bidirectional characters before redacting it', () => {
    const token = 'canary-secret-0123456789';
    const split = `${token.slice(0, 6)}\u200b${token.slice(6, 12)}\u0000\u202e${token.slice(12)}`;
    expect(errorSummary(`oops ${split} \u001b[31mred\u001b[0m`, credentialForms(token))).toBe(`oops ${REDACTED} red`);
  });

  it('cuts a long text with an ellipsis, never inside a redaction', () => {
    const token = 'canary-secret-0123456789';
    const long = `${'w'.repeat(SUMMARY_MAX - 5)} ${token} tail`;
    const out = errorSummary(long, credentialForms(token));
    expect(out.length).toBeLessThanOrEqual(SUMMARY_MAX);
    expect(out.endsWith('…')).toBe(true);
    expect(out).not.toMatch(/\[[a-z]*…$/);
  });
});

describe('redactedBody and redactError', () => {
  it('a body (text or JSON) is redacted, kept whole up to its bound', () => {
    const token = 'canary-secret-0123456789';
    const body = redactedBody({ message: `bad ${token}`, more: 'x'.repeat(1000) }, credentialForms(token));
    expect(body).toContain(`bad ${REDACTED}`);
    expect(body).toContain('x'.repeat(1000));
    expect(redactedBody('y'.repeat(100), [], 10)).toBe(`${'y'.repeat(10)}…`);
  });

  it('an error and each of its causes read redacted, message and stack', () => {
    const token = 'canary-secret-0123456789';
    const err = new Error(`outer ${token}`, { cause: new Error(`inner ${b64(token)}`) });
    expect(redactError(err, credentialForms(token))).toBe(err);
    expect(err.message).toBe(`outer ${REDACTED}`);
    expect(err.stack).not.toContain(token);
    expect((err.cause as Error).message).toBe(`inner ${REDACTED}`);
  });
});
