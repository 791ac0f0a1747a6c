/**
 * The GitHub emulator's App: JWTs signed here with node:crypto (accepted, and refused for each
 * documented reason), the installation token exchange, installation tokens on the normal
 * endpoints, their expiry by the emulator's clock, /installation/repositories, the revoke controls
 * and the per-installation rate limit.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/errors.js';
import { JWT_MESSAGES, startGithubEmulator, type GithubEmulator } from '../../../src/emulators/github/index.js';
import { clockedEmulators, get, parseLink, type Got, type Json } from './helpers.js';

const START = Date.UTC(2026, 5, 1, 12, 0, 0, 250);
const NOW_S = Math.floor(START / 1000);
const SCALE = { repos: 5, issues: 20, pulls: 5, directCommits: 5, members: 3, days: 10 };
const ORG = 'emulated-org';

const emulator = clockedEmulators(START, { seed: 7, scale: SCALE, app: {} });

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** An RS256 JWT over `claims`, signed with `pem` (the header may be replaced). */
function jwt(pem: string, claims: Record<string, unknown>, header: Record<string, unknown> = { alg: 'RS256' }): string {
  const input = `${b64({ typ: 'JWT', ...header })}.${b64(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), pem).toString('base64url')}`;
}

/** GitHub's documented example: iat 60 s back, exp 10 minutes ahead, iss the App id. */
function appJwt(e: GithubEmulator, nowS = NOW_S, extra: Record<string, unknown> = {}): string {
  return jwt(e.appPrivateKeyPem!, { iat: nowS - 60, exp: nowS + 600, iss: e.appId, ...extra });
}

async function call(e: GithubEmulator, method: string, path: string, credential: string | null): Promise<Got> {
  const headers: Record<string, string> = credential ? { authorization: `Bearer ${credential}` } : {};
  const res = await fetch(`${e.url}${path}`, { method, headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null, text };
}

async function exchange(e: GithubEmulator, nowS = NOW_S): Promise<Json> {
  const res = await call(e, 'POST', `/app/installations/${e.installationId!}/access_tokens`, appJwt(e, nowS));
  expect(res.status).toBe(201);
  return res.body;
}

describe('GitHub emulator: App JWT', () => {
  it('accepts an RS256 JWT signed with the App key on the App endpoints; one installation on the org', async () => {
    const { e } = await emulator({ app: { appId: 4242, installationId: 777 } });
    expect(e.appPrivateKeyPem).toMatch(/^-----BEGIN RSA PRIVATE KEY-----\n/);
    const token = appJwt(e);
    const app = await call(e, 'GET', '/app', token);
    expect(app.status).toBe(200);
    expect(app.body).toMatchObject({ id: 4242, slug: 'emulated-app', owner: { login: ORG } });
    expect(app.headers.get('x-ratelimit-limit')).toBe('5000');

    const list = await call(e, 'GET', '/app/installations', token);
    expect(list.status).toBe(200);
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).toMatchObject({
      id: 777,
      app_id: 4242,
      account: { login: ORG, type: 'Organization' },
      repository_selection: 'all',
      target_type: 'Organization',
      access_tokens_url: `${e.url}/app/installations/777/access_tokens`,
    });
    expect((await call(e, 'GET', '/app/installations/777', token)).body.id).toBe(777);
    expect((await call(e, 'GET', '/app/installations/778', token)).status).toBe(404);
    expect((await call(e, 'GET', `/orgs/${ORG}/installation`, token)).body.id).toBe(777);
    expect((await call(e, 'GET', '/orgs/other-org/installation', token)).status).toBe(404);
    const repo = e.data.repos[1]!.name;
    expect((await call(e, 'GET', `/repos/${ORG}/${repo}/installation`, token)).body.id).toBe(777);
    expect((await call(e, 'GET', `/repos/${ORG}/no-such-repo/installation`, token)).status).toBe(404);
    expect((await call(e, 'GET', `/repos/other-org/${repo}/installation`, token)).status).toBe(404);

    // iss as a numeric string and as the client ID are accepted too.
    expect((await call(e, 'GET', '/app', appJwt(e, NOW_S, { iss: '4242' }))).status).toBe(200);
    expect((await call(e, 'GET', '/app', appJwt(e, NOW_S, { iss: e.appClientId }))).status).toBe(200);
    expect(e.appStats()).toMatchObject({ jwtsAccepted: 11, jwtsRefused: 0 });
    expect(e.log.at(-1)?.tokenId).toBe('app:4242');
  });

  it('refuses a bad signature, a wrong iss, exp too far, an expired JWT, iat ahead and alg none with 401', async () => {
    const { e } = await emulator();
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs1',
      format: 'pem',
    }) as string;
    const claims = { iat: NOW_S - 60, exp: NOW_S + 600, iss: e.appId };
    const unsigned = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
    const cases: [string, string][] = [
      [jwt(other, claims), JWT_MESSAGES.undecodable],
      [jwt(e.appPrivateKeyPem!, { ...claims, iss: e.appId! + 1 }), JWT_MESSAGES.unknownApp],
      [jwt(e.appPrivateKeyPem!, { ...claims, iss: 'not-a-number' }), JWT_MESSAGES.issuer],
      [jwt(e.appPrivateKeyPem!, { ...claims, exp: NOW_S + 601 }), JWT_MESSAGES.tooLong],
      [jwt(e.appPrivateKeyPem!, { ...claims, iat: NOW_S - 700, exp: NOW_S - 1 }), JWT_MESSAGES.expiry],
      [jwt(e.appPrivateKeyPem!, { ...claims, exp: String(NOW_S + 60) }), JWT_MESSAGES.expiry],
      [jwt(e.appPrivateKeyPem!, { ...claims, iat: NOW_S + 61 }), JWT_MESSAGES.issuedAt],
      [jwt(e.appPrivateKeyPem!, claims, { alg: 'HS256' }), JWT_MESSAGES.undecodable],
      [unsigned, JWT_MESSAGES.undecodable],
      ['not.a-jwt', JWT_MESSAGES.undecodable],
      [e.token, JWT_MESSAGES.undecodable],
    ];
    for (const [credential, message] of cases) {
      const res = await call(e, 'GET', '/app', credential);
      expect({ status: res.status, message: res.body?.message }).toEqual({ status: 401, message });
    }
    expect((await call(e, 'GET', '/app', null)).body.message).toBe('Requires authentication');
    // The bounds themselves: iat 60 s ahead and exp exactly 600 s ahead are still accepted.
    const edge = jwt(e.appPrivateKeyPem!, { iat: NOW_S + 60, exp: NOW_S + 600, iss: e.appId });
    expect((await call(e, 'GET', '/app', edge)).status).toBe(200);
    expect(e.appStats()).toMatchObject({ jwtsAccepted: 1, jwtsRefused: cases.length });
  });

  it('refuses a JWT on the normal endpoints, which take tokens only', async () => {
    const { e } = await emulator();
    const token = appJwt(e);
    for (const path of [`/orgs/${ORG}/repos`, `/repos/${ORG}/${e.data.repos[0]!.name}/issues`, '/user']) {
      const res = await call(e, 'GET', path, token);
      expect({ path, status: res.status, message: res.body.message }).toEqual({
        path,
        status: 401,
        message: JWT_MESSAGES.undecodable,
      });
    }
    expect(e.appStats().jwtsRefused).toBe(3);
    expect((await get(e, `/orgs/${ORG}/repos`)).status).toBe(200);
  });

  it('judges exp by the emulator clock: a JWT valid now is refused once the clock passes exp', async () => {
    const { e, clock } = await emulator();
    const token = appJwt(e);
    expect((await call(e, 'GET', '/app', token)).status).toBe(200);
    clock.advance(600_000);
    const late = await call(e, 'GET', '/app', token);
    expect([late.status, late.body.message]).toEqual([401, JWT_MESSAGES.expiry]);
  });
});

describe('GitHub emulator: installation access tokens', () => {
  it('exchanges a JWT for a ghs_ token that reads org and repositories as the full-access token does', async () => {
    const { e } = await emulator();
    const body = await exchange(e);
    expect(body.token).toMatch(/^ghs_[0-9A-Za-z]{36}$/);
    expect(body).toMatchObject({
      expires_at: '2026-06-01T13:00:00Z',
      repository_selection: 'all',
      permissions: { metadata: 'read', issues: 'read', pull_requests: 'read' },
    });
    expect((await exchange(e)).token).not.toBe(body.token);
    expect(e.appStats().tokensIssued).toBe(2);
    const wrongId = await call(e, 'POST', `/app/installations/${e.installationId! + 1}/access_tokens`, appJwt(e));
    expect(wrongId.status).toBe(404);
    expect((await call(e, 'GET', `/app/installations/${e.installationId!}/access_tokens`, appJwt(e))).status).toBe(404);

    const repos = await get(e, `/orgs/${ORG}/repos?per_page=100`, body.token);
    const full = await get(e, `/orgs/${ORG}/repos?per_page=100`);
    expect(repos.status).toBe(200);
    expect(repos.body.map((r: Json) => r.id)).toEqual(full.body.map((r: Json) => r.id));
    expect(repos.body.some((r: Json) => r.private)).toBe(true);
    const privateRepo = e.data.repos.find((r) => r.private)!.name;
    const issues = await get(e, `/repos/${ORG}/${privateRepo}/issues?state=all`, body.token);
    expect(issues.status).toBe(200);
    expect(issues.text).toBe((await get(e, `/repos/${ORG}/${privateRepo}/issues?state=all`)).text);
    expect(e.log.at(-2)?.tokenId).toBe(`installation:${e.installationId!}`);
    const user = await get(e, '/user', body.token);
    expect([user.status, user.body.message]).toEqual([403, 'Resource not accessible by integration']);
  });

  it('answers 401 Bad credentials once expires_at passes on the emulator clock (tokenTtlSeconds)', async () => {
    const { e, clock } = await emulator({ app: { tokenTtlSeconds: 120 } });
    const { token, expires_at } = await exchange(e);
    expect(Date.parse(expires_at as string)).toBe(Math.floor(START / 1000) * 1000 + 120_000);
    const path = `/orgs/${ORG}/repos`;
    clock.set(Date.parse(expires_at as string) - 1);
    expect((await get(e, path, token)).status).toBe(200);
    clock.set(Date.parse(expires_at as string));
    const expired = await get(e, path, token);
    expect([expired.status, expired.body.message]).toEqual([401, 'Bad credentials']);
    expect(e.appStats().tokensRefused).toBe(1);
    // A fresh exchange works again.
    const fresh = await exchange(e, Math.floor(clock.now().getTime() / 1000));
    expect((await get(e, path, fresh.token)).status).toBe(200);
  });

  it('lists the installation repositories in pages with a Link header', async () => {
    const { e } = await emulator();
    const { token } = await exchange(e);
    const seen: number[] = [];
    let next: string | undefined = `${e.url}/installation/repositories?per_page=2`;
    let pages = 0;
    while (next) {
      const page = await get(e, next, token);
      expect(page.status).toBe(200);
      expect(page.body).toMatchObject({ total_count: 5, repository_selection: 'all' });
      expect(page.body.repositories.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.repositories.map((r: Json) => r.id as number));
      expect(page.body.repositories[0]).toHaveProperty('full_name');
      next = parseLink(page.headers.get('link')).next;
      pages++;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(e.data.repos.map((r) => r.id));
    const last = parseLink((await get(e, '/installation/repositories?per_page=2', token)).headers.get('link')).last;
    expect(last).toBe(`${e.url}/installation/repositories?per_page=2&page=3`);
    // Only an installation token lists them; one page holds all by default.
    expect((await get(e, '/installation/repositories', token)).headers.get('link')).toBeNull();
    expect((await get(e, '/installation/repositories')).status).toBe(404);
  });

  it('revokes the App key (old JWTs 401, the new key works) and the tokens issued so far', async () => {
    const { e } = await emulator();
    const oldPem = e.appPrivateKeyPem!;
    const oldJwt = appJwt(e);
    const { token } = await exchange(e);
    const newPem = e.revokeAppKey();
    expect(newPem).not.toBe(oldPem);
    expect(e.appPrivateKeyPem).toBe(newPem);
    const refused = await call(e, 'GET', '/app', oldJwt);
    expect([refused.status, refused.body.message]).toEqual([401, JWT_MESSAGES.undecodable]);
    expect((await call(e, 'GET', '/app', appJwt(e))).status).toBe(200);
    // Tokens already issued outlive the key, as on GitHub; revoking them is separate.
    expect((await get(e, `/orgs/${ORG}/repos`, token)).status).toBe(200);
    expect(e.revokeInstallationTokens()).toBe(1);
    const gone = await get(e, `/orgs/${ORG}/repos`, token);
    expect([gone.status, gone.body.message]).toEqual([401, 'Bad credentials']);
    const fresh = await exchange(e);
    expect((await get(e, `/orgs/${ORG}/repos`, fresh.token)).status).toBe(200);
  });

  it('counts an installation’s requests against its own budget, whichever of its tokens is sent', async () => {
    const { e } = await emulator({ rateLimit: '3/60s' });
    const a = (await exchange(e)).token as string;
    const b = (await exchange(e)).token as string;
    const path = `/orgs/${ORG}/repos`;
    expect((await get(e, path, a)).headers.get('x-ratelimit-remaining')).toBe('2');
    expect((await get(e, path, b)).headers.get('x-ratelimit-remaining')).toBe('1');
    expect((await get(e, path, a)).headers.get('x-ratelimit-remaining')).toBe('0');
    const limited = await get(e, path, b);
    expect(limited.status).toBe(403);
    expect(limited.body.message).toMatch(
      new RegExp(`^API rate limit exceeded for installation ID ${e.installationId!}\\.`),
    );
    // The full-access token and the App's JWT requests have budgets of their own.
    expect((await get(e, path)).headers.get('x-ratelimit-remaining')).toBe('2');
    const rate = await get(e, '/rate_limit', a);
    expect(rate.body.resources.core).toMatchObject({ limit: 3, remaining: 0, used: 3 });
  });
});

describe('GitHub emulator without an App', () => {
  it('serves no App endpoints and accepts no JWT; a bad app option is refused', async () => {
    const { e } = await emulator({ app: undefined });
    expect([e.appId, e.installationId, e.appPrivateKeyPem]).toEqual([null, null, null]);
    expect((await get(e, '/app')).status).toBe(404);
    const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs1',
      format: 'pem',
    }) as string;
    const token = jwt(pem, { iat: NOW_S - 60, exp: NOW_S + 600, iss: 1 });
    const res = await call(e, 'GET', '/app', token);
    expect([res.status, res.body.message]).toEqual([401, 'Bad credentials']);
    expect(() => e.revokeAppKey()).toThrow(/no GitHub App/);
    await expect(startGithubEmulator({ app: { appId: 0 } })).rejects.toThrow(ValidationError);
    await expect(startGithubEmulator({ app: { tokenTtlSeconds: 1.5 } })).rejects.toThrow(/app\.tokenTtlSeconds/);
  });
});
