/**
 * A GitHub App integration without `installationId`: the config's `owner` and `sources` keys and how
 * create checks them with the sources; the installation found from the owner against the emulator's
 * App (`/orgs/{org}/installation`, else `/users/{username}/installation`, else `/app/installations`),
 * once per process however many ask at once; no installation on the owner an `auth` failure naming
 * the integration and the owner; and the installation's repositories listed, every page.
 */
import { generateKeyPairSync } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/clock.js';
import { startGithubEmulator, type GithubEmulator } from '../../../src/emulators/github/index.js';
import { NonRetryableError, ValidationError } from '../../../src/errors.js';
import { validateIntegration } from '../../../src/planning/integrations.js';
import {
  forgetInstallationTokens,
  installationIdOf,
  INSTALLATION_ID_TTL_MS,
} from '../../../src/providers/github/appAuth.js';
import { budgetHolderOf } from '../../../src/providers/github/auth.js';
import { parseGithubConfig } from '../../../src/providers/github/config.js';
import { createGithubProvider } from '../../../src/providers/github/index.js';
import { ProviderRegistry } from '../../../src/providers/registry.js';
import type { SourceDiscoveryContext } from '../../../src/sdk/types.js';

const PEM = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs1', format: 'pem' })
  .toString();
const provider = createGithubProvider({});
const discovery = provider.sourceDiscovery!;

afterEach(() => forgetInstallationTokens());

describe('config.owner and config.sources', () => {
  it('installationId is optional with auth app; owner and sources are for auth app only', () => {
    expect(parseGithubConfig({ auth: 'app', appId: 42 })).toMatchObject({ installationId: null, owner: null });
    expect(parseGithubConfig({ auth: 'app', appId: 42, owner: 'Acme-Corp', sources: 'installation' })).toMatchObject({
      owner: 'Acme-Corp',
      sources: 'installation',
    });
    const cases: [Record<string, unknown>, string][] = [
      [{ owner: 'acme' }, 'config.owner: is only for auth "app"'],
      [{ sources: 'installation' }, 'config.sources: is only for auth "app"'],
      [{ auth: 'app', appId: 42, owner: 'not/a-login' }, 'config.owner: must be a GitHub login'],
      [{ auth: 'app', appId: 42, owner: '-acme' }, 'config.owner: must be a GitHub login'],
      [{ auth: 'app', appId: 42, owner: 'acme', sources: 'all' }, 'config.sources: must be "installation"'],
      [{ auth: 'app', appId: 42, sources: 'installation' }, 'config.owner: is required with config.sources'],
    ];
    for (const [config, says] of cases) expect(() => parseGithubConfig(config)).toThrow(says);
    expect(() =>
      parseGithubConfig({ auth: 'app', appId: 42, installationId: 7, sources: 'installation' }),
    ).not.toThrow();
  });

  it('create: the installation must be told by id, owner or the sources; "all" only for an App', () => {
    const registry = new ProviderRegistry().register(provider);
    const base = { orgId: 'org-1', provider: 'github', name: 'gh', datasets: ['work-items'] };
    const app = { auth: 'app', appId: 42 };
    const refused = (sources: readonly string[] | 'all', config: Record<string, unknown>, field: string) => {
      const err = catchValidation(() => validateIntegration(registry, { ...base, sources, config }));
      expect(err.field, err.message).toBe(field);
      return err.message;
    };
    expect(refused([], app, 'config.owner')).toContain('no sources are listed');
    expect(refused(['acme/a', 'other/b'], app, 'config.owner')).toContain('2 owners');
    expect(refused('all', app, 'config.owner')).toContain('config.sources "installation"');
    expect(refused('all', {}, 'sources')).toContain('needs config.auth "app"');
    expect(refused(['acme/a'], { ...app, owner: 'acme', sources: 'installation' }, 'sources')).toContain('"all"');
    // One owner (any case) tells it; so do owner and installationId.
    const ok = (sources: readonly string[] | 'all', config: Record<string, unknown>) =>
      validateIntegration(registry, { ...base, sources, config });
    expect(ok(['acme/a', 'ACME/b'], app).config).toEqual(app);
    expect(ok([], { ...app, owner: 'acme' }).sources).toEqual([]);
    expect(ok('all', { ...app, installationId: 7 })).toMatchObject({
      sources: [],
      config: { ...app, installationId: 7, sources: 'installation' },
    });
    // Another provider has no "all".
    const plain = { name: 'plain', datasets: provider.datasets, runUnit: async () => ({}) };
    const other = new ProviderRegistry().register(plain);
    const err = catchValidation(() => validateIntegration(other, { ...base, provider: 'plain', sources: 'all' }));
    expect(err.field).toBe('sources');
  });

  it('the budget holder is the installation, by id (found first), else by the App and owner on the host', () => {
    const credential = { id: 'cred-1', reveal: () => PEM };
    const host = 'https://ghe.example.com/api/v3';
    const byId = parseGithubConfig({ baseUrl: host, auth: 'app', appId: 42, owner: 'Acme', installationId: 7 });
    expect(budgetHolderOf(byId, credential)).toBe('app-42-installation-7@ghe.example.com');
    const byOwner = parseGithubConfig({ baseUrl: host, auth: 'app', appId: 42, owner: 'Acme' });
    expect(budgetHolderOf(byOwner, credential)).toBe('app-42-owner-acme@ghe.example.com');
  });
});

describe('installationIdOf', () => {
  const owner = { baseUrl: 'https://api.github.com', appId: 42, owner: 'Acme' };

  it('one look-up for callers asking at once; the id kept an hour; none found is not kept', async () => {
    let t = 0;
    let lookups = 0;
    const find = async () => {
      lookups++;
      await new Promise((r) => setTimeout(r, 10));
      return lookups === 1 ? null : 9;
    };
    const ids = await Promise.all(Array.from({ length: 6 }, () => installationIdOf(owner, find, () => t)));
    expect(ids).toEqual(Array(6).fill(null));
    expect(lookups).toBe(1);
    expect(await installationIdOf({ ...owner, owner: 'ACME' }, find, () => t)).toBe(9);
    t += INSTALLATION_ID_TTL_MS - 1;
    expect(await installationIdOf(owner, find, () => t)).toBe(9);
    expect(lookups).toBe(2);
    t += 1;
    await installationIdOf(owner, find, () => t);
    expect(lookups).toBe(3);
  });

  it("a waiting caller looks up itself when another's look-up fails", async () => {
    let n = 0;
    const find = async () => {
      n++;
      await Promise.resolve();
      if (n === 1) throw new Error('aborted');
      return 5;
    };
    const [first, second] = await Promise.allSettled([
      installationIdOf(owner, find, () => 0),
      installationIdOf(owner, find, () => 0),
    ]);
    expect(first.status).toBe('rejected');
    expect(second).toEqual({ status: 'fulfilled', value: 5 });
  });
});

describe('the installation found from the owner, and its repositories (emulator)', () => {
  let e: GithubEmulator;
  const SCALE = { repos: 3, issues: 6, pulls: 0, directCommits: 1, members: 2, days: 3 };

  beforeAll(async () => {
    e = await startGithubEmulator({ seed: 41, scale: SCALE, app: { installationId: 4321 } });
  });
  afterAll(async () => e?.close());

  function ctx(config: Record<string, unknown>, name = 'gh-app'): SourceDiscoveryContext {
    return {
      integration: {
        id: '00000000-0000-4000-8000-00000000b001',
        orgId: 'org-1',
        provider: 'github',
        name,
        config: { baseUrl: e.url, auth: 'app', appId: e.appId, sources: 'installation', ...config },
      },
      credential: { id: 'cred-1', reveal: () => e.appPrivateKeyPem! },
      signal: new AbortController().signal,
      logger: pino({ level: 'silent' }),
      clock: systemClock,
    };
  }

  const all = () => e.data.repos.map((r) => `${e.data.org.login}/${r.name}`);
  const asked = (path: string) => e.log.filter((l) => l.path.split('?')[0] === path).length;

  it('found from the owner (any case) once however many ask at once; its repositories listed', async () => {
    const before = asked(`/orgs/${e.data.org.login.toUpperCase()}/installation`);
    const owner = e.data.org.login.toUpperCase();
    const lists = await Promise.all(Array.from({ length: 5 }, () => discovery.discover(ctx({ owner }))));
    for (const listed of lists) expect(listed).toEqual(all());
    expect(asked(`/orgs/${owner}/installation`) - before).toBe(1);
    expect(e.appStats().tokensIssued).toBe(1);
  });

  it('the users endpoint, then the list of installations, when the organisation endpoint has none', async () => {
    const owner = e.data.org.login;
    e.setFaults([{ kind: 'not-found', path: '/orgs/', count: 1 }]);
    expect(await discovery.discover(ctx({ owner }))).toEqual(all());
    expect(asked(`/users/${owner}/installation`)).toBe(1);
    forgetInstallationTokens();
    e.setFaults([
      { kind: 'not-found', path: '/orgs/', count: 1 },
      { kind: 'not-found', path: '/users/', count: 1 },
    ]);
    expect(await discovery.discover(ctx({ owner }))).toEqual(all());
    expect(asked('/app/installations')).toBe(1);
    e.setFaults([]);
  });

  it('no installation on the owner: auth, naming the integration and the owner, never the key', async () => {
    const err = await discovery.discover(ctx({ owner: 'someone-else' }, 'acme-app')).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(NonRetryableError);
    expect((err as NonRetryableError).category).toBe('auth');
    expect((err as Error).message).toContain('github integration "acme-app"');
    expect((err as Error).message).toContain('"someone-else"');
    expect((err as Error).message).not.toMatch(/PRIVATE KEY/);
  });

  it('every page of a selection of repositories; an installation given by id is not looked up', async () => {
    const many = await startGithubEmulator({ seed: 42, scale: { ...SCALE, repos: 120 }, app: {} });
    try {
      const names = many.data.repos.map((r) => r.name);
      many.removeInstallationRepository(names[0]!);
      const c = ctx({ installationId: many.installationId });
      c.integration.config.baseUrl = many.url;
      c.credential = { id: 'cred-2', reveal: () => many.appPrivateKeyPem! };
      const listed = await discovery.discover(c);
      expect(listed).toEqual(names.slice(1).map((n) => `${many.data.org.login}/${n}`));
      const pages = many.log.filter((l) => l.path.startsWith('/installation/repositories'));
      expect(pages.map((l) => new URL(l.path, many.url).searchParams.get('per_page'))).toEqual(['100', '100']);
      expect(many.log.some((l) => l.path.includes('/orgs/'))).toBe(false);
    } finally {
      await many.close();
    }
  });
});

function catchValidation(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('expected a ValidationError');
}
