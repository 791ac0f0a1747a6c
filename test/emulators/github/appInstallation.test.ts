/**
 * The GitHub emulator's installation by account and its repositories: "Get a user installation for
 * the authenticated app" (`GET /users/{username}/installation`), an installation given some of the
 * organisation's repositories (the `repositories` option, and given or taken at run time), what its
 * tokens then list and see, and a name the organisation does not have refused.
 */
import { sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/errors.js';
import type { GithubEmulator } from '../../../src/emulators/github/index.js';
import { clockedEmulators, get, type Json } from './helpers.js';

const START = Date.UTC(2026, 5, 1, 12, 0, 0, 250);
const NOW_S = Math.floor(START / 1000);
const SCALE = { repos: 4, issues: 8, pulls: 2, directCommits: 2, members: 2, days: 5 };
const ORG = 'emulated-org';

const emulator = clockedEmulators(START, { seed: 9, scale: SCALE, app: {} });

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

function appJwt(e: GithubEmulator): string {
  const input = `${b64({ typ: 'JWT', alg: 'RS256' })}.${b64({ iat: NOW_S - 60, exp: NOW_S + 600, iss: e.appId })}`;
  return `${input}.${sign('sha256', Buffer.from(input), e.appPrivateKeyPem!).toString('base64url')}`;
}

async function call(e: GithubEmulator, method: string, path: string, credential: string): Promise<Json> {
  const res = await fetch(`${e.url}${path}`, { method, headers: { authorization: `Bearer ${credential}` } });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function installationToken(e: GithubEmulator): Promise<string> {
  const res = await call(e, 'POST', `/app/installations/${e.installationId!}/access_tokens`, appJwt(e));
  expect(res.status).toBe(201);
  return res.body.token as string;
}

async function listed(e: GithubEmulator, token: string): Promise<{ names: string[]; body: Json }> {
  const res = await get(e, '/installation/repositories?per_page=100', token);
  expect(res.status).toBe(200);
  return { names: res.body.repositories.map((r: Json) => r.name as string), body: res.body };
}

describe('GitHub emulator: an installation by account, and its repositories', () => {
  it('GET /users/{username}/installation: the installation on the organisation (any case); else 404', async () => {
    const { e } = await emulator({ app: { installationId: 31 } });
    const jwt = appJwt(e);
    const found = await call(e, 'GET', `/users/${ORG.toUpperCase()}/installation`, jwt);
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({ id: 31, account: { login: ORG }, repository_selection: 'all' });
    const missing = await call(e, 'GET', '/users/someone-else/installation', jwt);
    expect(missing.status).toBe(404);
    expect(missing.body.documentation_url).toContain('#get-a-user-installation-for-the-authenticated-app');
  });

  it('given some repositories: listed and seen alone; given and taken at run time', async () => {
    const { e } = await emulator();
    const names = e.data.repos.map((r) => r.name);
    const hidden = e.data.repos.find((r) => r.private)!;
    e.removeInstallationRepository(hidden.name);
    const token = await installationToken(e);
    const first = await listed(e, token);
    expect(first.names).toEqual(names.filter((n) => n !== hidden.name));
    expect(first.body).toMatchObject({ total_count: names.length - 1, repository_selection: 'selected' });
    expect(e.installationRepositories()).toEqual(first.names);
    // A private repository it was not given is not found with its token, nor is its installation.
    expect((await get(e, `/repos/${ORG}/${hidden.name}`, token)).status).toBe(404);
    expect((await get(e, `/repos/${ORG}/${hidden.name}`)).status).toBe(200);
    expect((await call(e, 'GET', `/repos/${ORG}/${hidden.name}/installation`, appJwt(e))).status).toBe(404);
    e.addInstallationRepository(hidden.name);
    expect((await listed(e, token)).names).toEqual(names);
    expect((await get(e, `/repos/${ORG}/${hidden.name}`, token)).status).toBe(200);
  });

  it('the repositories option; a name the organisation does not have is refused', async () => {
    const { e } = await emulator({ app: { repositories: ['repo-does-not-matter'] } }).catch((err: unknown) => {
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe('app.repositories');
      return { e: null };
    });
    expect(e).toBeNull();
    const { e: some } = await emulator();
    const name = some.data.repos[1]!.name;
    const { e: given } = await emulator({ app: { repositories: [name] } });
    expect((await listed(given, await installationToken(given))).names).toEqual([name]);
    expect(() => given.addInstallationRepository('nope')).toThrow(ValidationError);
  });
});
