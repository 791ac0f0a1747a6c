/**
 * A GitHub App integration's sources found rather than listed (`config.sources: "installation"`,
 * created with `sources: "all"`): the installation's repositories, "List repositories accessible to
 * the app installation" (`GET /installation/repositories`, 100 a page, every page), read with an
 * installation token of the process (appAuth.ts) before each run is planned. The few requests are
 * the installation's but no unit's: they pass no shared budget.
 */
import { NonRetryableError, ValidationError } from '../../errors.js';
import type { SourceDiscovery, SourceDiscoveryContext } from '../../sdk/types.js';
import { outboundOf, type HttpProviderOptions } from '../kit/unitScaffold.js';
import { providerError } from '../kit/errors.js';
import { appInstallationTokens, budgetHolderOf } from './auth.js';
import { createGithubClient } from './client.js';
import { checkListedSources, INSTALLATION_SOURCES, parseGithubConfig, type GithubConfig } from './config.js';
import { callOptions, findInstallationId, subjectOfIntegration } from './installation.js';

const PER_PAGE = 100;
/** The most pages read: 10,000 repositories, far over what an integration may have. */
const MAX_PAGES = 100;

/** The GitHub provider's `Provider.sourceDiscovery`. */
export function githubSourceDiscovery(opts: HttpProviderOptions): SourceDiscovery {
  return {
    enabled: (config) => config.sources === INSTALLATION_SOURCES,
    configFor: (config, sources) => configFor(config, sources, opts),
    discover: (ctx) => installationRepositories(ctx, opts),
  };
}

/**
 * The config a GitHub integration is created with: `"all"` sets `sources: "installation"` (only
 * with `auth: "app"`, and with `owner` or `installationId`); a list is checked against the config.
 */
function configFor(
  config: Record<string, unknown>,
  sources: readonly string[] | 'all',
  opts: HttpProviderOptions,
): Record<string, unknown> {
  const c = parseGithubConfig(config, outboundOf(opts));
  if (sources !== 'all') {
    checkListedSources(c, sources);
    return config;
  }
  if (c.auth !== 'app') {
    throw new ValidationError(
      'sources',
      '"all" (a GitHub App installation\'s repositories) needs config.auth "app"; with a token, ' +
        'list the repositories (owner/repo)',
    );
  }
  const found = { ...config, sources: INSTALLATION_SOURCES };
  parseGithubConfig(found, outboundOf(opts));
  return found;
}

/** The `owner/repo` of every repository the integration's installation reaches. */
async function installationRepositories(ctx: SourceDiscoveryContext, opts: HttpProviderOptions): Promise<string[]> {
  const subject = subjectOfIntegration(ctx.integration.name);
  const config = discoveringConfig(ctx, subject, opts);
  if (ctx.credential === null) throw new NonRetryableError(`${subject}: no credential is set`, 'auth');
  const call = callOptions({ subject, clock: ctx.clock, signal: ctx.signal, logger: ctx.logger }, opts);
  const app = { call, baseUrl: config.baseUrl, appId: config.appId!, privateKey: ctx.credential.reveal() };
  const a = { ...app, orgId: ctx.integration.orgId };
  const now = () => ctx.clock.now().getTime();
  const installationId = config.installationId ?? (await findInstallationId({ ...a, owner: config.owner! }, now));
  const holder = budgetHolderOf({ ...config, installationId }, ctx.credential);
  const gh = createGithubClient({
    ...call,
    baseUrl: config.baseUrl,
    auth: { installation: appInstallationTokens(a, installationId, now) },
    throttleKey: `${a.orgId}/${holder}`,
    budget: null,
  });
  const what = { integration: subject, what: 'GET /installation/repositories' };
  const repos: string[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const { data } = await gh.request('GET /installation/repositories', { per_page: PER_PAGE, page });
    const listed = (data as { repositories?: unknown } | null)?.repositories;
    if (!Array.isArray(listed)) throw providerError(what, ': the answer has no repositories', null);
    for (const r of listed as { full_name?: unknown }[]) {
      if (typeof r?.full_name !== 'string') throw providerError(what, ': a repository has no full_name', null);
      repos.push(r.full_name);
    }
    if (listed.length < PER_PAGE) return repos;
  }
  throw new NonRetryableError(
    `${subject}: the installation lists more than ${MAX_PAGES * PER_PAGE} repositories`,
    'provider_error',
  );
}

/** The integration's config, which must still ask for its sources to be found. */
function discoveringConfig(ctx: SourceDiscoveryContext, subject: string, opts: HttpProviderOptions): GithubConfig {
  let config: GithubConfig;
  try {
    config = parseGithubConfig(ctx.integration.config, outboundOf(opts));
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    throw new NonRetryableError(`${subject}: ${err.message}`, 'provider_error', { cause: err });
  }
  if (config.auth !== 'app' || config.sources === null) {
    throw new NonRetryableError(`${subject}: its sources are listed, not found (config.sources)`, 'provider_error');
  }
  return config;
}
