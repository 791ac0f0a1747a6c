/**
 * How a GitHub integration signs in (config `auth`): with a token, the credential as it is; as a
 * GitHub App installation (`auth: app`), the credential is the App's private key and each request
 * carries the installation's current token (appAuth.ts), traded through the unit's own call loop
 * (on the integration's origin, with its retries and redaction) but spending none of the
 * installation's budget: the exchange is signed by the App, whose limit is its own.
 */
import { NonRetryableError, ValidationError } from '../../errors.js';
import type { UnitContext, UnitCredential } from '../../sdk/types.js';
import type { ClientOptions } from '../kit/call.js';
import { credentialForms } from '../kit/redact.js';
import { checkAppPrivateKey, installationTokens, type InstallationTokens, type IssuedToken } from './appAuth.js';
import { createGithubClient, type GithubClientAuth, type GithubOctokit } from './client.js';
import type { GithubConfig } from './config.js';

/** Throws `ValidationError` naming `credential` unless it suits `config.auth` (never quoting it). */
export function checkGithubCredential(credential: string, config: GithubConfig): void {
  if (config.auth === 'app') return checkAppPrivateKey(credential);
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(credential)) {
    throw new ValidationError('credential', 'is a private key: for a GitHub App set config.auth to "app"');
  }
}

/**
 * Whose limit a unit spends: the App installation's (one budget whatever key signs; ids are per
 * GitHub host, so the host is part of it), else the credential's. A unit always knows the
 * installation's id by now (found from the owner when not configured: installation.ts); without it
 * the holder is the App's on the owner's account, which is one installation too: an App is
 * installed at most once on an account.
 */
export function budgetHolderOf(config: GithubConfig, credential: UnitCredential): string {
  if (config.auth !== 'app') return credential.id;
  const host = new URL(config.baseUrl).host;
  if (config.installationId === null) {
    return `app-${String(config.appId)}-owner-${(config.owner ?? '').toLowerCase()}@${host}`;
  }
  return `app-${String(config.appId)}-installation-${String(config.installationId)}@${host}`;
}

/** How the unit's client signs its requests. */
export function clientAuth(
  ctx: UnitContext,
  config: GithubConfig,
  credential: UnitCredential,
  call: ClientOptions,
): GithubClientAuth {
  if (config.auth !== 'app') return { token: credential.reveal() };
  if (config.installationId === null) {
    throw new NonRetryableError(`${call.subject}: the App installation is not known (config.installationId)`, 'auth');
  }
  const app = { call, baseUrl: config.baseUrl, appId: config.appId!, privateKey: credential.reveal() };
  const now = () => ctx.clock.now().getTime();
  return { installation: appInstallationTokens({ ...app, orgId: ctx.unit.orgId }, config.installationId, now) };
}

/** A GitHub App calling through a unit's loop (or a discovery's): the App, its key, the call's options. */
export interface AppCall {
  call: ClientOptions;
  baseUrl: string;
  appId: number;
  /** The App's private key (PEM): the integration's credential. */
  privateKey: string;
  /** The integration's org: requests of one org and App share the throttling plugin's concurrency. */
  orgId: string;
}

/** A client signed with a JWT of the App: its requests spend the App's own limit, no installation's budget. */
export function appClient(a: AppCall, jwt: string): GithubOctokit {
  return createGithubClient({
    ...a.call,
    secrets: [...(a.call.secrets ?? []), ...credentialForms(a.privateKey)],
    baseUrl: a.baseUrl,
    auth: { token: jwt },
    throttleKey: `${a.orgId}/app-${a.appId}`,
    budget: null,
  });
}

/** The process's tokens of installation `installationId`, traded through `a`'s loop; `now` is its clock. */
export function appInstallationTokens(a: AppCall, installationId: number, now: () => number): InstallationTokens {
  const identity = { baseUrl: a.baseUrl, appId: a.appId, installationId, privateKey: a.privateKey };
  const exchange = async (jwt: string): Promise<IssuedToken> => {
    const { data } = await appClient(a, jwt).request('POST /app/installations/{installation_id}/access_tokens', {
      installation_id: installationId,
    });
    return issued(a.call.subject, data);
  };
  return installationTokens(identity, exchange, now);
}

/** The token and expiry of an exchange's answer; one without them is the provider's error. */
function issued(subject: string, data: unknown): IssuedToken {
  const d = (data ?? {}) as { token?: unknown; expires_at?: unknown };
  const expiresAt = typeof d.expires_at === 'string' ? Date.parse(d.expires_at) : NaN;
  if (typeof d.token !== 'string' || d.token === '' || !Number.isFinite(expiresAt)) {
    throw new NonRetryableError(
      `${subject}: POST /app/installations/{installation_id}/access_tokens: the answer has no token and expires_at`,
      'provider_error',
    );
  }
  return { token: d.token, expiresAt };
}
