/**
 * A GitHub App's sign-in pieces: the installation tokens a process keeps (shared by its units,
 * renewed before expiry and once when refused, one trade at a time), the App JWT, the private key
 * check at create time, and the config's `auth` keys.
 */
import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/errors.js';
import {
  appJwt,
  checkAppPrivateKey,
  forgetInstallationTokens,
  installationTokens,
  type AppIdentity,
  type IssuedToken,
} from '../../../src/providers/github/appAuth.js';
import { renewAt, RENEW_BEFORE_MAX_MS } from '../../../src/providers/kit/tokenCache.js';
import { checkGithubCredential } from '../../../src/providers/github/auth.js';
import { parseGithubConfig } from '../../../src/providers/github/config.js';
import { credentialProblem } from '../../../src/secrets/credentials.js';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PKCS8 = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const PKCS1 = rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
const EC = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();

const ID: AppIdentity = { baseUrl: 'https://api.github.com', appId: 42, installationId: 7, privateKey: PKCS8 };
const MINUTE = 60_000;

/** An exchange that issues `tok-1`, `tok-2`… each living `lifeMs` from the clock's now; counts its trades. */
function exchanges(clock: { t: number }, lifeMs: number) {
  const jwts: string[] = [];
  const trade = async (jwt: string): Promise<IssuedToken> => {
    jwts.push(jwt);
    await Promise.resolve();
    return { token: `tok-${jwts.length}`, expiresAt: clock.t + lifeMs };
  };
  return { trade, jwts };
}

afterEach(() => forgetInstallationTokens());

describe('installation tokens', () => {
  it('are renewed a quarter of their life before expiry, at most 5 minutes before', () => {
    expect(renewAt(0, 60 * MINUTE)).toBe(60 * MINUTE - RENEW_BEFORE_MAX_MS);
    expect(renewAt(0, 20_000)).toBe(15_000);
  });

  it('one per identity in the process, shared by units; a new one once the old is due', async () => {
    const clock = { t: 1_000_000 };
    const x = exchanges(clock, 20_000);
    const unitA = installationTokens(ID, x.trade, () => clock.t);
    const unitB = installationTokens({ ...ID }, x.trade, () => clock.t);
    expect(await unitA.current()).toBe('tok-1');
    expect(await unitB.current()).toBe('tok-1');
    clock.t += 14_999;
    expect(await unitB.current()).toBe('tok-1');
    clock.t += 1;
    expect(await unitA.current()).toBe('tok-2');
    // Another installation (or another key) has its own.
    const other = installationTokens({ ...ID, installationId: 8 }, x.trade, () => clock.t);
    expect(await other.current()).toBe('tok-3');
    expect(x.jwts).toHaveLength(3);
  });

  it('units asking at once wait for one trade', async () => {
    const clock = { t: 0 };
    const x = exchanges(clock, 60 * MINUTE);
    const units = Array.from({ length: 8 }, () => installationTokens(ID, x.trade, () => clock.t));
    expect(new Set(await Promise.all(units.map((u) => u.current())))).toEqual(new Set(['tok-1']));
    expect(x.jwts).toHaveLength(1);
  });

  it('a token refused with 401 is traded once; refusing an older one keeps the newer', async () => {
    const clock = { t: 0 };
    const x = exchanges(clock, 60 * MINUTE);
    const unit = installationTokens(ID, x.trade, () => clock.t);
    expect(await unit.current()).toBe('tok-1');
    unit.refused('tok-1');
    expect(await unit.current()).toBe('tok-2');
    unit.refused('tok-1'); // a late answer to a request sent with the old one
    expect(await unit.current()).toBe('tok-2');
    expect(x.jwts).toHaveLength(2);
  });

  it("a unit waiting on another's trade that fails trades itself", async () => {
    let calls = 0;
    const failing = async (): Promise<IssuedToken> => {
      calls++;
      await Promise.resolve();
      throw new Error('aborted: its unit was cancelled');
    };
    const working = async (): Promise<IssuedToken> => {
      calls++;
      return { token: 'tok-mine', expiresAt: 60 * MINUTE };
    };
    const cancelled = installationTokens(ID, failing, () => 0);
    const waiting = installationTokens(ID, working, () => 0);
    const [a, b] = await Promise.allSettled([cancelled.current(), waiting.current()]);
    expect(a).toMatchObject({ status: 'rejected' });
    expect(b).toEqual({ status: 'fulfilled', value: 'tok-mine' });
    expect(calls).toBe(2);
  });

  it('a failed trade is no token: the next ask trades again', async () => {
    let fail = true;
    const trade = async (): Promise<IssuedToken> => {
      if (fail) throw new Error('refused');
      return { token: 'tok-ok', expiresAt: 60 * MINUTE };
    };
    const unit = installationTokens(ID, trade, () => 0);
    await expect(unit.current()).rejects.toThrow('refused');
    fail = false;
    expect(await unit.current()).toBe('tok-ok');
  });
});

describe('the App JWT', () => {
  it('is RS256 over the App id, signed by its key, living at most 10 minutes', async () => {
    const jwt = await appJwt({ appId: 42, privateKey: PKCS1 });
    const [head, body, sig] = jwt.split('.') as [string, string, string];
    const json = (part: string) =>
      JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
    expect(json(head)).toMatchObject({ alg: 'RS256', typ: 'JWT' });
    const claims = json(body) as { iss: unknown; iat: number; exp: number };
    expect(String(claims.iss)).toBe('42');
    expect(claims.exp - claims.iat).toBeLessThanOrEqual(600);
    const signed = verify(
      'sha256',
      Buffer.from(`${head}.${body}`),
      createPublicKey(rsa.privateKey),
      Buffer.from(sig, 'base64url'),
    );
    expect(signed).toBe(true);
  });
});

describe("a GitHub App's credential", () => {
  it('is an RSA private key in PEM (PKCS#1 or PKCS#8), refused otherwise without quoting it', () => {
    expect(() => checkAppPrivateKey(PKCS1)).not.toThrow();
    expect(() => checkAppPrivateKey(PKCS8)).not.toThrow();
    for (const [bad, says] of [
      [EC, /its type is ec/],
      ['ghp_notakey0123456789', /RSA private key in PEM$/],
      [PKCS8.replace(/[A-Za-z]{10}/, '!!!!!!!!!!'), /does not parse/],
    ] as const) {
      const err = (() => {
        try {
          checkAppPrivateKey(bad);
        } catch (e) {
          return e as ValidationError;
        }
        throw new Error('accepted');
      })();
      expect(err).toBeInstanceOf(ValidationError);
      expect(err.message).toMatch(says);
      expect(err.message).not.toContain(bad.length > 80 ? bad.slice(40, 80) : bad);
    }
  });

  it('passes the generic checks with its line breaks; a token with a line break still does not', () => {
    expect(credentialProblem(PKCS1.trimEnd())).toBeNull();
    expect(credentialProblem(PKCS8.trimEnd())).toBeNull();
    expect(credentialProblem('ghp_abc\ndef')).toMatch(/control characters/);
    expect(credentialProblem(`${PKCS8.trimEnd()}\nextra`)).toMatch(/control characters/);
  });

  it('is checked against config.auth: a key with token sign-in is named as one', () => {
    const app = parseGithubConfig({ auth: 'app', appId: 42, installationId: '7' });
    expect(app).toMatchObject({ auth: 'app', appId: 42, installationId: 7 });
    expect(() => checkGithubCredential(EC, app)).toThrow(/RSA private key/);
    expect(() => checkGithubCredential(PKCS8, parseGithubConfig({}))).toThrow(/set config.auth to "app"/);
    expect(() => checkGithubCredential('ghp_abcdef0123456789', parseGithubConfig({}))).not.toThrow();
  });
});

describe('config.auth', () => {
  it('app needs appId (installationId optional: installation.test.ts), positive integers; token takes neither', () => {
    expect(parseGithubConfig({})).toMatchObject({ auth: 'token', appId: null, installationId: null });
    const cases: [Record<string, unknown>, string][] = [
      [{ auth: 'app', installationId: 7 }, 'config.appId: is required with auth "app"'],
      [{ installationId: 7 }, 'config.installationId: is only for auth "app"'],
      [{ appId: 42 }, 'config.appId: is only for auth "app"'],
      [{ auth: 'app', appId: 0, installationId: 7 }, 'config.appId: must be a positive integer'],
      [{ auth: 'app', appId: 42, installationId: '7x' }, 'config.installationId: must be a positive integer'],
      [{ auth: 'oauth' }, 'config.auth: must be one of token, app'],
    ];
    for (const [config, says] of cases) expect(() => parseGithubConfig(config)).toThrow(says);
  });
});
