/**
 * The GitHub provider's failures against the GitHub emulator on 127.0.0.1 (a refused token,
 * injected 403, 404 and 5xx answers, no server, an abort, no credential), and the checks of its
 * config and sources.
 */
import { describe, expect, it } from 'vitest';
import { classifyError, LeaseLostError, NonRetryableError } from '../../../src/errors.js';
import {
  createGithubProvider,
  runGithubUnit,
  type GithubProviderOptions,
} from '../../../src/providers/github/index.js';
import { validateIntegration } from '../../../src/planning/integrations.js';
import { defaultRegistry } from '../../../src/providers/registry.js';
import { failureOf } from '../../helpers/failures.js';
import { ISSUES_ONLY, useGithubSuite } from './support.js';

const FAST: GithubProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 } };

const fx = useGithubSuite({ seed: 3, scale: ISSUES_ONLY });

describe('GitHub provider: failures', () => {
  it('a refused credential fails auth, naming the integration and never the token', async () => {
    await fx.start();
    const err = await failureOf(
      runGithubUnit(fx.unit({ datasetKey: 'repositories', token: 'ghp_WRONGtoken999' }), FAST),
    );
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(classifyError(err)).toBe('auth');
    expect(err.message).toContain('github integration "acme-github"');
    expect(err.message).not.toContain('ghp_WRONGtoken999');
    expect(JSON.stringify(err)).not.toContain('ghp_WRONGtoken999');
    expect(fx.emu.log.map((l) => l.status)).toEqual([401]); // not retried
  });

  it('a 403 without rate-limit signals is auth too; a missing repository is not_found', async () => {
    await fx.start({ faults: [{ kind: 'forbidden', count: 1 }] });
    expect(classifyError(await failureOf(runGithubUnit(fx.unit({ datasetKey: 'repositories' }), FAST)))).toBe('auth');
    expect(fx.emu.log[0]).toMatchObject({ status: 403, fault: 'forbidden' });
    expect(fx.emu.log[0]!.rate.remaining).toBeGreaterThan(0);
    const gone = `${fx.emu.data.org.login}/gone`;
    const missing = await failureOf(runGithubUnit(fx.unit({ datasetKey: 'repositories', sourceKey: gone }), FAST));
    expect(classifyError(missing)).toBe('not_found');
    expect(missing.message).toContain(`/repos/${gone}`);
  });

  it('5xx responses are retried in place, then fail provider_error', async () => {
    await fx.start({ faults: [{ kind: 'server-error', count: 2, status: 502 }] });
    await runGithubUnit(fx.unit({ datasetKey: 'repositories' }), FAST);
    expect(fx.emu.log.map((l) => l.status)).toEqual([502, 502, 200]);

    const mark = fx.emu.log.length;
    fx.emu.setFaults([{ kind: 'server-error', count: 10, status: 503 }]);
    const err = await failureOf(runGithubUnit(fx.unit({ datasetKey: 'repositories' }), FAST));
    expect(classifyError(err)).toBe('provider_error');
    expect(fx.emu.log.slice(mark).map((l) => l.status)).toEqual([503, 503, 503, 503]);
  });

  it('a network failure is retried in place, then fails provider_error', async () => {
    await fx.start();
    await fx.emu.close(); // the unit reads the closed emulator's address
    const err = await failureOf(runGithubUnit(fx.unit({ datasetKey: 'repositories' }), FAST));
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(classifyError(err)).toBe('provider_error');
  });

  it('an abort (lease lost) during the in-place retries ends the unit at once', async () => {
    await fx.start({ faults: [{ kind: 'server-error', count: 10, status: 500 }] });
    const abort = new AbortController();
    const reason = new LeaseLostError('u-abort');
    setTimeout(() => abort.abort(reason), 50);
    const started = Date.now();
    const err = await failureOf(
      runGithubUnit(fx.unit({ datasetKey: 'repositories', signal: abort.signal }), {
        retry: { attempts: 10, baseDelayMs: 10_000, maxDelayMs: 10_000 },
      }),
    );
    expect(err).toBe(reason);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('without a credential the unit fails auth before calling', async () => {
    await fx.start();
    const c = fx.unit({ datasetKey: 'repositories' });
    const err = await failureOf(runGithubUnit({ ...c, credential: null }, FAST));
    expect(classifyError(err)).toBe('auth');
    expect(fx.emu.log).toHaveLength(0);
  });
});

describe('GitHub provider: config and sources', () => {
  const provider = createGithubProvider();

  it.each([
    [{ baseUrl: 'ftp://example.com' }, 'config.baseUrl'],
    [{ baseUrl: 'not a url' }, 'config.baseUrl'],
    [{ baseUrl: 'https://user:pw@example.com' }, 'config.baseUrl'],
    [{ baseUrl: 42 }, 'config.baseUrl'],
    [{ budgetShare: 0 }, 'config.budgetShare'],
    [{ budgetShare: 1.5 }, 'config.budgetShare'],
    [{ budgetShare: '0.5' }, 'config.budgetShare'],
    [{ token: 'x' }, 'config.token'],
  ])('refuses %j naming %s', (config, field) => {
    expect(() => provider.validateConfig!(config)).toThrow(expect.objectContaining({ field }) as Error);
  });

  it('accepts github.com, a GitHub Enterprise Server API root and a share', () => {
    expect(() => provider.validateConfig!({})).not.toThrow();
    expect(() =>
      provider.validateConfig!({ baseUrl: 'https://ghe.example.com/api/v3', budgetShare: 0.25 }),
    ).not.toThrow();
  });

  it.each(['acme', 'acme/app/x', '/app', 'acme/', '-acme/app', 'acme/..', 'ac me/app'])(
    'refuses the source %j',
    (source) => {
      expect(() => provider.validateSource!(source, 'sources.0')).toThrow(
        expect.objectContaining({ field: 'sources.0' }) as Error,
      );
    },
  );

  it('creating a GitHub integration checks its sources and config, naming the field', () => {
    const registry = defaultRegistry(fx.db);
    const base = { orgId: 'o', provider: 'github', name: 'n', datasets: ['work-items'], config: {} };
    expect(() => validateIntegration(registry, { ...base, sources: ['acme/app', 'acme/api'] })).not.toThrow();
    expect(() => validateIntegration(registry, { ...base, sources: ['acme/app', 'nope'] })).toThrow(
      expect.objectContaining({ field: 'sources.1' }) as Error,
    );
    expect(() => validateIntegration(registry, { ...base, sources: ['acme/app'], config: { budgetShare: 2 } })).toThrow(
      expect.objectContaining({ field: 'config.budgetShare' }) as Error,
    );
  });

  it('declares the cross-provider dataset keys', () => {
    expect(provider.datasets.map((d) => d.key)).toEqual([
      'repositories',
      'members',
      'work-items',
      'work-item-comments',
      'work-item-history',
      'work-item-labels',
      'pull-requests',
      'pull-request-reviews',
      'commits',
    ]);
  });
});
