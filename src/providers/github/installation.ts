/**
 * Which installation an App integration reads as when `config.installationId` is not given: the
 * one on `config.owner`, else on the single owner of the integration's sources. It is looked up with
 * the App's JWT as GitHub documents it: "Get an organization installation for the authenticated
 * app" (`GET /orgs/{org}/installation`), else "Get a user installation for the authenticated app"
 * (`GET /users/{username}/installation`), else "List installations for the authenticated app"
 * (`GET /app/installations`, every page) by `account.login`, case-insensitively. Each process keeps
 * the id it found (appAuth.ts `installationIdOf`); no installation on the owner is an `auth`
 * failure naming the integration and the owner.
 */
import { NonRetryableError, ValidationError } from '../../errors.js';
import type { UnitContext } from '../../sdk/types.js';
import { listSources } from '../../store/integrations.js';
import type { ClientOptions } from '../kit/call.js';
import { providerError } from '../kit/errors.js';
import { outboundOf, type HttpProviderOptions } from '../kit/unitScaffold.js';
import { appJwt, installationIdOf } from './appAuth.js';
import { appClient, type AppCall } from './auth.js';
import type { GithubOctokit } from './client.js';
import { ownerOfSources, parseGithubConfig, type GithubConfig } from './config.js';

/** Installations listed per page, and the most pages read, of `GET /app/installations`. */
const PER_PAGE = 100;
const MAX_PAGES = 100;

/** How `github integration "<name>"` is named in errors and logs. */
export const subjectOfIntegration = (name: string): string => `github integration "${name}"`;

/** The call options a request outside a unit's runner is made with (the runner's own, for a unit). */
export function callOptions(
  c: Pick<ClientOptions, 'subject' | 'clock' | 'signal' | 'logger'>,
  opts: HttpProviderOptions,
): ClientOptions {
  return {
    ...c,
    ...(opts.retry ? { retry: opts.retry } : {}),
    fetch: opts.fetch ?? outboundOf(opts).fetch,
    ...(opts.limits?.maxResponseBytes ? { maxResponseBytes: opts.limits.maxResponseBytes } : {}),
  };
}

/** The id of the App's installation on `owner`; none is an `auth` failure naming the integration and owner. */
export async function findInstallationId(a: AppCall & { owner: string }, now: () => number): Promise<number> {
  const id = await installationIdOf(a, () => lookUp(a), now);
  if (id === null) {
    throw new NonRetryableError(
      `${a.call.subject}: the GitHub App ${a.appId} has no installation on "${a.owner}" ` +
        '(install it on that account, or set config.installationId)',
      'auth',
    );
  }
  return id;
}

async function lookUp(a: AppCall & { owner: string }): Promise<number | null> {
  const gh = appClient(a, await appJwt(a));
  const what = (path: string) => ({ integration: a.call.subject, what: `GET ${path}` });
  const byOrg = await unlessNotFound(() => gh.request('GET /orgs/{org}/installation', { org: a.owner }));
  if (byOrg !== null) return idOf(byOrg.data, what('/orgs/{org}/installation'));
  const byUser = await unlessNotFound(() => gh.request('GET /users/{username}/installation', { username: a.owner }));
  if (byUser !== null) return idOf(byUser.data, what('/users/{username}/installation'));
  return listedInstallation(gh, a.owner, what('/app/installations'));
}

/** The installation of `/app/installations` whose account is `owner`, reading every page; null when none. */
async function listedInstallation(
  gh: GithubOctokit,
  owner: string,
  what: { integration: string; what: string },
): Promise<number | null> {
  for (let page = 1; page <= MAX_PAGES; page++) {
    const { data } = await gh.request('GET /app/installations', { per_page: PER_PAGE, page });
    if (!Array.isArray(data)) throw providerError(what, ': the answer is not a list', null);
    const found = (data as { account?: { login?: unknown } | null }[]).find(
      (i) => typeof i.account?.login === 'string' && i.account.login.toLowerCase() === owner.toLowerCase(),
    );
    if (found) return idOf(found, what);
    if (data.length < PER_PAGE) return null;
  }
  return null;
}

/** The answer, or null when it was a 404 (the call loop's `not_found`). */
async function unlessNotFound<T>(send: () => Promise<T>): Promise<T | null> {
  try {
    return await send();
  } catch (err) {
    if (err instanceof NonRetryableError && err.category === 'not_found') return null;
    throw err;
  }
}

function idOf(data: unknown, what: { integration: string; what: string }): number {
  const id = (data as { id?: unknown } | null)?.id;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0) {
    throw providerError(what, ': the answer has no installation id', null);
  }
  return id;
}

/**
 * The unit's context with the installation's id (and the owner it was found from) in its view of
 * the config, found first when the config names no installation; otherwise `ctx` as it is. A config
 * or a credential the runner refuses is left to the runner (its own errors).
 */
export async function withInstallation(ctx: UnitContext, opts: HttpProviderOptions): Promise<UnitContext> {
  let config: GithubConfig;
  try {
    config = parseGithubConfig(ctx.integration.config, outboundOf(opts));
  } catch (err) {
    if (err instanceof ValidationError) return ctx;
    throw err;
  }
  if (config.auth !== 'app' || config.installationId !== null || ctx.credential === null) return ctx;
  const subject = subjectOfIntegration(ctx.integration.name);
  const owner = config.owner ?? (await sourcesOwner(ctx, subject));
  const call = callOptions({ subject, clock: ctx.clock, signal: ctx.signal, logger: ctx.logger }, opts);
  const app = { call, baseUrl: config.baseUrl, appId: config.appId!, privateKey: ctx.credential.reveal() };
  const now = () => ctx.clock.now().getTime();
  const installationId = await findInstallationId({ ...app, orgId: ctx.unit.orgId, owner }, now);
  const seen = { ...ctx.integration.config, owner, installationId };
  return { ...ctx, integration: { ...ctx.integration, config: seen } };
}

/** The owner of the unit's source, or of every source of the integration for a unit without one. */
async function sourcesOwner(ctx: UnitContext, subject: string): Promise<string> {
  const keys =
    ctx.unit.sourceKey !== null
      ? [ctx.unit.sourceKey]
      : (await listSources(ctx.db, ctx.unit.integrationId)).filter((s) => s.enabled).map((s) => s.external_key);
  const owner = ownerOfSources(keys);
  if (owner === null) {
    throw new NonRetryableError(
      `${subject}: config.owner is not set and its sources do not have one owner ` +
        '(set config.owner or config.installationId)',
      'auth',
    );
  }
  return owner;
}
