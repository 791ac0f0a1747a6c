/**
 * The two OAuth calls of a Jira Cloud session (oauth.ts), each through the unit's call loop (its
 * retries, outbound policy and redaction) and spending no budget of the site's:
 * - the token endpoint, `POST {"grant_type": "refresh_token", client_id, client_secret, refresh_token}`
 *   answering `{access_token, refresh_token, expires_in, scope}`; an `error` answer (Atlassian's
 *   403 `invalid_grant` "Unknown or invalid refresh token.", a 401 `invalid_client`, any 400) is the
 *   unit's `auth` failure;
 * - `GET {gateway}/oauth/token/accessible-resources` with the access token: `[{id, url, name, scopes}]`.
 */
import type { ClientOptions, Verdict, Answer } from '../kit/call.js';
import { bodyText, createCaller, sendFetch } from '../kit/call.js';
import { providerError } from '../kit/errors.js';
import { judgeJira, jiraLimitSignal } from './client.js';
import type { JiraConfig } from './config.js';
import type { AccessibleResource, IssuedTokens, OAuthCalls } from './oauth.js';
import type { OAuthCredential } from './oauthConfig.js';

/** The calls of `config`'s endpoints, made with the unit's `call` options (`secrets`: the live redaction list). */
export function oauthCalls(config: JiraConfig, call: ClientOptions): OAuthCalls {
  const token = createCaller<Response, unknown>(
    call,
    [],
    { judge: judgeToken, observations: () => [] },
    config.oauthTokenUrl,
  );
  const gateway = createCaller<Response, unknown>(
    call,
    [],
    { judge: judgeJira, observations: () => [] },
    config.apiGatewayUrl,
  );
  return {
    async refresh(c: OAuthCredential): Promise<IssuedTokens> {
      const body = {
        grant_type: 'refresh_token',
        client_id: c.clientId,
        client_secret: c.clientSecret,
        refresh_token: c.refreshToken,
      };
      const init = { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) };
      return issuedTokens(await token('POST /oauth/token', sendFetch(config.oauthTokenUrl, init)), call.subject);
    },
    async resources(accessToken: string): Promise<AccessibleResource[]> {
      const url = `${config.apiGatewayUrl}/oauth/token/accessible-resources`;
      const init = { method: 'GET', headers: { accept: 'application/json', authorization: `Bearer ${accessToken}` } };
      return resourcesOf(await gateway('GET /oauth/token/accessible-resources', sendFetch(url, init)), call.subject);
    },
  };
}

const JSON_HEADERS = { accept: 'application/json', 'content-type': 'application/json' };

/** The token endpoint's answer: its JSON, or an OAuth `error` answer read as a refused credential. */
function judgeToken(a: Answer<Response>, now: Date): Verdict<unknown> {
  const text = bodyText(a);
  let json: unknown = null;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    json = null;
  }
  if (a.raw.ok && json !== null) return { ok: true, value: json };
  const o = (json ?? {}) as { error?: unknown; error_description?: unknown };
  const error = typeof o.error === 'string' ? o.error : null;
  const described = typeof o.error_description === 'string' ? `: ${o.error_description}` : '';
  // RFC 6749 §5.2: an `error` answer (400, 401, Atlassian's 403) refuses the grant or the client.
  const refusal = error !== null && a.status >= 400 && a.status < 500 && a.status !== 429;
  return {
    ok: false,
    status: refusal ? 401 : a.status,
    limit: jiraLimitSignal(a.status, a.headers, now),
    code: error,
    says: error !== null ? `${error}${described}` : text,
    refused: (s, shown) => providerError(s, `: the token endpoint refused the request (${shown.message})`, shown),
  };
}

function issuedTokens(v: unknown, subject: string): IssuedTokens {
  const o = (v ?? {}) as { access_token?: unknown; refresh_token?: unknown; expires_in?: unknown };
  const seconds = typeof o.expires_in === 'number' && o.expires_in > 0 ? o.expires_in : null;
  if (typeof o.access_token !== 'string' || o.access_token === '' || seconds === null) {
    throw providerError(
      { integration: subject, what: 'POST /oauth/token' },
      ': the answer has no access_token and expires_in',
      null,
    );
  }
  const refreshToken = typeof o.refresh_token === 'string' && o.refresh_token !== '' ? o.refresh_token : null;
  return { accessToken: o.access_token, refreshToken, expiresInSeconds: seconds };
}

function resourcesOf(v: unknown, subject: string): AccessibleResource[] {
  if (!Array.isArray(v)) {
    const what = { integration: subject, what: 'GET /oauth/token/accessible-resources' };
    throw providerError(what, ': the answer is not a list of sites', null);
  }
  return v.flatMap((r: { id?: unknown; url?: unknown }) =>
    typeof r?.id === 'string' && typeof r.url === 'string' ? [{ id: r.id, url: r.url }] : [],
  );
}
