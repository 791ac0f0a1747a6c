/**
 * A Jira Cloud integration's sign-in settings (config `auth`, and the OAuth endpoints an emulator
 * stands in for), and the OAuth 2.0 (3LO) credential: `{"clientId", "clientSecret", "refreshToken"}`
 * as the user stores it, plus the current access token and its expiry once syncrelay has refreshed
 * it (stored with the credential, encrypted, never anywhere else).
 *
 * Atlassian's endpoints (developer.atlassian.com/cloud/jira/platform/oauth-2-3lo-apps): the token
 * endpoint `https://auth.atlassian.com/oauth/token`, the sites a grant reaches at
 * `https://api.atlassian.com/oauth/token/accessible-resources`, and each site's REST API under
 * `https://api.atlassian.com/ex/jira/{cloudId}`. Those two URLs are settable only to a loopback
 * address: they exist for an emulator, never to send a token elsewhere.
 */
import { ValidationError } from '../../errors.js';
import { credentialForms } from '../kit/redact.js';

/** How a Jira integration signs in. */
export const JIRA_AUTHS = ['token', 'oauth'] as const;
export type JiraAuth = (typeof JIRA_AUTHS)[number];

export const ATLASSIAN_TOKEN_URL = 'https://auth.atlassian.com/oauth/token';
export const ATLASSIAN_API_GATEWAY = 'https://api.atlassian.com';

/** Reads config `auth`: `token` (@default; `email:api_token` or a bearer token) or `oauth`. */
export function jiraAuth(raw: unknown): JiraAuth {
  if (raw === undefined) return 'token';
  if (typeof raw === 'string' && (JIRA_AUTHS as readonly string[]).includes(raw)) return raw as JiraAuth;
  throw new ValidationError('config.auth', `must be one of ${JIRA_AUTHS.join(', ')}`);
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** A reader of an emulator-only endpoint setting: absent → Atlassian's `fallback`; else a loopback URL. */
export function loopbackUrl(key: string, fallback: string): (raw: unknown) => string {
  return (raw) => {
    if (raw === undefined) return fallback;
    let url: URL | null = null;
    try {
      url = typeof raw === 'string' && raw.length <= 2048 ? new URL(raw) : null;
    } catch {
      url = null;
    }
    const ok = url && /^https?:$/.test(url.protocol) && !url.username && !url.password && !url.search && !url.hash;
    if (!ok || !LOOPBACK_HOSTS.has(url!.hostname)) {
      throw new ValidationError(`config.${key}`, `is for an emulator only: an http(s) URL on a loopback address`);
    }
    return url!.toString().replace(/\/+$/, '');
  };
}

/** The OAuth credential as stored: what the user gave, and the access token syncrelay last obtained. */
export interface OAuthCredential {
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  accessToken?: string;
  /** Epoch ms: when `accessToken` expires, and when it is renewed. */
  expiresAt?: number;
  renewAt?: number;
}

const REQUIRED = ['clientId', 'clientSecret', 'refreshToken'] as const;
const KEPT = ['accessToken', 'expiresAt', 'renewAt'] as const;

/**
 * Reads an OAuth credential, throwing `ValidationError` naming `credential` or the missing or bad
 * field (never a value).
 */
export function parseOAuthCredential(secret: string): OAuthCredential {
  let parsed: unknown;
  try {
    parsed = JSON.parse(secret);
  } catch {
    throw new ValidationError(
      'credential',
      'must be JSON {"clientId", "clientSecret", "refreshToken"} with auth "oauth"',
    );
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ValidationError('credential', 'must be a JSON object with auth "oauth"');
  }
  const o = parsed as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (![...REQUIRED, ...KEPT].includes(key as never)) {
      throw new ValidationError(`credential.${key}`, `is not part of an OAuth credential (${REQUIRED.join(', ')})`);
    }
  }
  for (const key of REQUIRED) {
    const v = o[key];
    if (typeof v !== 'string' || v.trim() === '' || v.length > 2048) {
      throw new ValidationError(`credential.${key}`, 'is required: a non-empty string');
    }
  }
  const out = { clientId: o.clientId, clientSecret: o.clientSecret, refreshToken: o.refreshToken } as OAuthCredential;
  if (typeof o.accessToken === 'string' && typeof o.expiresAt === 'number' && typeof o.renewAt === 'number') {
    return { ...out, accessToken: o.accessToken, expiresAt: o.expiresAt, renewAt: o.renewAt };
  }
  return out;
}

/** Every form of each secret an OAuth credential holds (client secret, refresh and access token), for redaction. */
export function oauthSecrets(c: OAuthCredential): string[] {
  return [c.clientSecret, c.refreshToken, c.accessToken ?? ''].filter((s) => s !== '').flatMap(credentialForms);
}
