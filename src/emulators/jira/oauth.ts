/**
 * The emulator's OAuth 2.0 (3LO) side, as Atlassian documents it:
 * - the token endpoint (`POST https://auth.atlassian.com/oauth/token`; here `/oauth/token`), for
 *   `grant_type=refresh_token` with `client_id`, `client_secret` and `refresh_token` (JSON, or form
 *   encoded as RFC 6749 allows): `{access_token, refresh_token, expires_in, scope, token_type}`.
 *   Refresh tokens rotate: each use issues a new one and disables the one used; using a disabled,
 *   unknown or revoked one answers 403 `{"error": "invalid_grant", "error_description": "Unknown or
 *   invalid refresh token."}` (developer.atlassian.com/cloud/oauth/getting-started/refresh-tokens);
 *   a wrong client answers 401 `access_denied`; another grant type 400 `unsupported_grant_type`;
 * - `GET /oauth/token/accessible-resources` with an access token: the sites the grant reaches,
 *   `[{id, url, name, scopes, avatarUrl}]` (developer.atlassian.com/cloud/jira/platform/oauth-2-3lo-apps);
 * - the API gateway: the site's REST and Agile APIs under `/ex/jira/{cloudId}`, reachable with an
 *   access token only there (an access token on the site's own URL is refused, as Jira Cloud does);
 *   an expired or unknown access token answers 401 `{"code": 401, "message": "Unauthorized"}`.
 * Access tokens live `accessTokenTtlSeconds` of the emulator's clock (Atlassian's: an hour).
 */
import { randomUUID } from 'node:crypto';
import type { Answer } from '../core/http.js';
import { freshToken } from '../core/index.js';

export interface JiraOAuthOptions {
  clientId?: string;
  clientSecret?: string;
  /** The grant's first refresh token. @default a fresh one */
  refreshToken?: string;
  /** How long an access token lives. @default 3600 */
  accessTokenTtlSeconds?: number;
  /** The site's cloud id. @default a fresh UUID */
  cloudId?: string;
}

export interface JiraOAuthStats {
  /** Refreshes answered with new tokens. */
  refreshes: number;
  /** Refreshes refused with `invalid_grant` (a rotated-away, unknown or revoked refresh token). */
  invalidGrants: number;
  /** API requests refused for an expired or unknown access token. */
  expiredAccess: number;
}

const TOKEN_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const SCOPES = 'read:jira-work read:jira-user offline_access';

/** The grant of the emulator's one OAuth app and user. */
export class OAuthGrant {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly cloudId: string;
  readonly ttlMs: number;
  private refreshToken: string;
  private readonly access = new Map<string, number>();
  /** Every token issued, for leak tests: none of them may appear anywhere but the encrypted credential. */
  readonly issued: string[] = [];
  readonly stats: JiraOAuthStats = { refreshes: 0, invalidGrants: 0, expiredAccess: 0 };

  constructor(o: JiraOAuthOptions) {
    this.clientId = o.clientId ?? freshToken('emu-client-', TOKEN_ALPHABET, 24);
    this.clientSecret = o.clientSecret ?? freshToken('emu-secret-', TOKEN_ALPHABET, 40);
    this.refreshToken = o.refreshToken ?? this.fresh();
    this.cloudId = o.cloudId ?? randomUUID();
    const ttl = o.accessTokenTtlSeconds ?? 3600;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 86_400) throw new RangeError('accessTokenTtlSeconds: 1–86400');
    this.ttlMs = ttl * 1000;
    this.issued.push(this.clientSecret, this.refreshToken);
  }

  /** The refresh token the grant accepts now (what a user stores; tests). */
  currentRefreshToken(): string {
    return this.refreshToken;
  }

  /** Revokes the grant (a user removing the app's access): every token of it is refused from now on. */
  revoke(): void {
    this.refreshToken = '';
    this.access.clear();
  }

  /** Whether `token` is a live access token at `now` (epoch ms); counts one refused for being stale. */
  accepts(token: string, now: number): boolean {
    const expiresAt = this.access.get(token);
    if (expiresAt !== undefined && now < expiresAt) return true;
    this.stats.expiredAccess++;
    return false;
  }

  /** `POST /oauth/token`. */
  token(raw: string, contentType: string | undefined, now: number): Answer {
    const body = formOrJson(raw, contentType);
    if (body === null) return oauthError(400, 'invalid_request', 'The request body could not be read.');
    if (body.grant_type !== 'refresh_token') {
      return oauthError(400, 'unsupported_grant_type', 'Only refresh_token is supported here.');
    }
    if (body.client_id !== this.clientId || body.client_secret !== this.clientSecret) {
      return oauthError(401, 'access_denied', 'Unauthorized');
    }
    if (this.refreshToken === '' || body.refresh_token !== this.refreshToken) {
      this.stats.invalidGrants++;
      return oauthError(403, 'invalid_grant', 'Unknown or invalid refresh token.');
    }
    this.refreshToken = this.fresh();
    const accessToken = this.fresh();
    this.access.set(accessToken, now + this.ttlMs);
    this.stats.refreshes++;
    const answer = {
      access_token: accessToken,
      refresh_token: this.refreshToken,
      expires_in: this.ttlMs / 1000,
      scope: SCOPES,
      token_type: 'Bearer',
    };
    return { status: 200, body: answer, headers: { 'cache-control': 'no-store' } };
  }

  /** `GET /oauth/token/accessible-resources` for the bearer `token`. */
  resources(token: string | null, siteUrl: string, siteName: string, now: number): Answer {
    if (token === null || !this.accepts(token, now)) return gatewayUnauthorized();
    const site = { id: this.cloudId, url: siteUrl, name: siteName, scopes: SCOPES.split(' '), avatarUrl: '' };
    return { status: 200, body: [site] };
  }

  private fresh(): string {
    const t = freshToken('', TOKEN_ALPHABET, 64);
    this.issued.push(t);
    return t;
  }
}

/** The gateway's 401 for a missing, expired or unknown access token. */
export function gatewayUnauthorized(): Answer {
  return { status: 401, body: { code: 401, message: 'Unauthorized' } };
}

function oauthError(status: number, error: string, description: string): Answer {
  return { status, body: { error, error_description: description } };
}

/** A token request's fields: JSON, or `application/x-www-form-urlencoded`; null when neither reads. */
function formOrJson(raw: string, contentType: string | undefined): Record<string, unknown> | null {
  if (/application\/x-www-form-urlencoded/i.test(contentType ?? '')) {
    return Object.fromEntries(new URLSearchParams(raw));
  }
  try {
    const v = JSON.parse(raw) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A gateway path `/ex/jira/{cloudId}/rest/…`: the cloud id and the site path below it; null for any other path. */
export function gatewayPath(pathname: string): { cloudId: string; path: string } | null {
  const m = /^\/ex\/jira\/([^/]+)(\/.*)?$/.exec(pathname);
  return m ? { cloudId: decodeURIComponent(m[1]!), path: m[2] ?? '/' } : null;
}
