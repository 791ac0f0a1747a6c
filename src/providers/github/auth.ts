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
import { checkAppPrivateKey, installationTokens, type IssuedToken } from './appAuth.js';
import { createGithubClient, type GithubClientAuth } from './client.js';
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
 * GitHub host, so the host is part of it), else the credential's.
 */
export function budgetHolderOf(config: GithubConfig, credential: UnitCredential): string {
  if (config.auth !== 'app') return credential.id;
  return `app-${String(config.appId)}-installation-${String(config.installationId)}@${new URL(config.baseUrl).host}`;
}

/** How the unit's client signs its requests. */
export function clientAuth(
  ctx: UnitContext,
  config: GithubConfig,
  credential: UnitCredential,
  call: ClientOptions,
): GithubClientAuth {
  if (config.auth !== 'app') return { token: credential.reveal() };
  const identity = {
    baseUrl: config.baseUrl,
    appId: config.appId!,
    installationId: config.installationId!,
    privateKey: credential.reveal(),
  };
  const secrets = [...(call.secrets ?? []), ...credentialForms(identity.privateKey)];
  const exchange = async (jwt: string): Promise<IssuedToken> => {
    const app = createGithubClient({
      ...call,
      secrets,
      baseUrl: config.baseUrl,
      auth: { token: jwt },
      throttleKey: `${ctx.unit.orgId}/app-${identity.appId}`,
      budget: null,
    });
    const { data } = await app.request('POST /app/installations/{installation_id}/access_tokens', {
      installation_id: identity.installationId,
    });
    return issued(call.subject, data);
  };
  return { installation: installationTokens(identity, exchange, () => ctx.clock.now().getTime()) };
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
