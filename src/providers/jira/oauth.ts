/**
 * A Jira Cloud integration signed in with OAuth 2.0 (3LO): access tokens from Atlassian's token
 * endpoint (`grant_type=refresh_token`), the site's cloud id from `accessible-resources`, and every
 * API call under the gateway's `/ex/jira/{cloudId}` (developer.atlassian.com/cloud/jira/platform/
 * oauth-2-3lo-apps).
 *
 * Atlassian rotates refresh tokens: each refresh hands back a new one and disables the one used
 * (developer.atlassian.com/cloud/oauth/getting-started/refresh-tokens; using it again answers 403
 * `invalid_grant`). So a refresh runs under the credential's row lock (`UnitCredential.change`) and
 * the new refresh token, with the access token and its expiry, is stored (encrypted, in the stored
 * credential only) in the transaction that read the old one: one refresh of a credential at a time
 * across every process; a process that waited for another's finds its access token current and
 * uses it instead of refreshing again. Within a process the access token is shared by the units
 * (kit/tokenCache.ts), renewed a quarter of its life (at most 5 minutes) before it expires and
 * once more when an answer refuses it with 401.
 *
 * What no design closes: when the token endpoint has rotated the token but its answer is lost (the
 * connection dropped after Atlassian answered, or this process died before its commit), the new
 * refresh token exists nowhere and the integration needs a new grant; the next refresh fails with
 * category `auth` naming the integration.
 */
import { createHash } from 'node:crypto';
import { NonRetryableError } from '../../errors.js';
import type { UnitCredential } from '../../sdk/types.js';
import { refusedWith401 } from '../kit/errors.js';
import { renewAt, TokenCache, type HeldToken, type RenewableToken } from '../kit/tokenCache.js';
import type { JiraConfig } from './config.js';
import { oauthSecrets, parseOAuthCredential, type OAuthCredential } from './oauthConfig.js';

/** What the token endpoint answered a refresh with. */
export interface IssuedTokens {
  accessToken: string;
  /** Absent when the endpoint kept the refresh token (it does not rotate it). */
  refreshToken: string | null;
  expiresInSeconds: number;
}

/** One site a grant reaches (`accessible-resources`). */
export interface AccessibleResource {
  id: string;
  url: string;
}

/** The two calls a session makes, each through the unit's call loop (oauthEndpoints.ts). */
export interface OAuthCalls {
  refresh(c: OAuthCredential): Promise<IssuedTokens>;
  resources(accessToken: string): Promise<AccessibleResource[]>;
}

/** A unit's view of its integration's OAuth sign-in. */
export interface OAuthSession extends RenewableToken {
  /** The gateway's origin: where every API call goes. */
  readonly home: string;
  /** The site's API base, `${gateway}/ex/jira/${cloudId}` (the cloud id found once per process). */
  apiBase(): Promise<string>;
}

const ACCESS_TOKENS = new TokenCache();
const CLOUD_IDS = new Map<string, Promise<string>>();

/** Forgets this process's access tokens and cloud ids (tests; a process never needs to). */
export function forgetOAuthSessions(): void {
  ACCESS_TOKENS.clear();
  CLOUD_IDS.clear();
}

export interface OAuthSessionArgs {
  integrationId: string;
  config: JiraConfig;
  credential: UnitCredential;
  /** Named in every error (e.g. `jira integration "acme"`). */
  subject: string;
  now: () => number;
  calls: OAuthCalls;
  /** The client's redaction list: every token this session learns is added to it. */
  secrets: string[];
}

/** The OAuth session of one unit (see the module comment). */
export function oauthSession(a: OAuthSessionArgs): OAuthSession {
  const { change } = a.credential;
  if (!change) throw new NonRetryableError(`${a.subject}: an OAuth credential needs a store to rotate in`, 'auth');
  const key = createHash('sha256')
    .update(`${a.integrationId}\n${a.credential.id}\n${a.config.oauthTokenUrl}\n${a.config.apiGatewayUrl}`)
    .digest('hex');
  const learn = (c: OAuthCredential): void => void a.secrets.push(...oauthSecrets(c));
  const renew = (refused: string | null): Promise<HeldToken> =>
    change<HeldToken>(async (stored) => {
      const c = parseOAuthCredential(stored);
      learn(c);
      const t = a.now();
      if (c.accessToken && c.accessToken !== refused && t < c.renewAt!) {
        return { value: { token: c.accessToken, expiresAt: c.expiresAt!, renewAt: c.renewAt! } };
      }
      const issued = await a.calls.refresh(c);
      const expiresAt = t + issued.expiresInSeconds * 1000;
      const next: OAuthCredential = {
        ...c,
        refreshToken: issued.refreshToken ?? c.refreshToken,
        accessToken: issued.accessToken,
        expiresAt,
        renewAt: renewAt(t, expiresAt),
      };
      learn(next);
      return { secret: JSON.stringify(next), value: { token: next.accessToken!, expiresAt, renewAt: next.renewAt! } };
    });
  const tokens = ACCESS_TOKENS.token(key, renew, a.now);
  const gateway = a.config.apiGatewayUrl;
  return {
    home: new URL(gateway).origin,
    current: () => tokens.current(),
    refused: (token) => tokens.refused(token),
    apiBase: async () => `${gateway}/ex/jira/${await cloudId(key, a, tokens)}`,
  };
}

/** The cloud id of the configured site, asked once per process (a failed ask is asked again). */
function cloudId(key: string, a: OAuthSessionArgs, tokens: RenewableToken): Promise<string> {
  let pending = CLOUD_IDS.get(key);
  if (!pending) {
    pending = findCloudId(a, tokens);
    CLOUD_IDS.set(key, pending);
    pending.catch(() => CLOUD_IDS.delete(key));
  }
  return pending;
}

async function findCloudId(a: OAuthSessionArgs, tokens: RenewableToken): Promise<string> {
  const token = await tokens.current();
  let sites: AccessibleResource[];
  try {
    sites = await a.calls.resources(token);
  } catch (err) {
    if (!refusedWith401(err)) throw err;
    tokens.refused(token);
    sites = await a.calls.resources(await tokens.current());
  }
  const site = new URL(a.config.siteUrl).origin;
  const found = sites.find((s) => originOf(s.url) === site);
  if (found) return found.id;
  throw new NonRetryableError(
    `${a.subject}: the OAuth grant does not reach ${site} (it reaches ${sites.length} site(s)); ` +
      'check config.siteUrl, or grant the app access to that site',
    'auth',
  );
}

function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}
