/**
 * How a Jira integration signs in (config `auth`): with a token, the credential as it is (`email:
 * api_token` as basic auth, a bare token as bearer: config.ts `authorizationFor`); with OAuth 2.0
 * (3LO), the credential is the OAuth client and its refresh token (oauthConfig.ts) and the calls go
 * through Atlassian's API gateway with access tokens the session renews (oauth.ts).
 */
import { NonRetryableError, ValidationError } from '../../errors.js';
import type { UnitSetup } from '../kit/runner.js';
import { createJiraClient, type JiraClient } from './client.js';
import { authorizationFor, type JiraConfig } from './config.js';
import { oauthSession } from './oauth.js';
import { oauthCalls } from './oauthEndpoints.js';
import { oauthSecrets, parseOAuthCredential, type OAuthCredential } from './oauthConfig.js';

/** Throws `ValidationError` naming `credential` (or its field) unless it suits `config.auth`; never quotes it. */
export function checkJiraCredential(credential: string, config: JiraConfig): void {
  if (config.auth === 'oauth') {
    parseOAuthCredential(credential);
    return;
  }
  if (credential.trim().startsWith('{')) {
    throw new ValidationError('credential', 'is JSON: for an OAuth 2.0 credential set config.auth to "oauth"');
  }
}

/** The unit's Jira client, signed in as `config.auth` says. */
export function jiraClientFor(u: UnitSetup<unknown, JiraConfig>): JiraClient {
  const { ctx, config, credential, call } = u;
  const shared = u.budget();
  if (config.auth !== 'oauth') {
    const authorization = authorizationFor(credential.reveal(), call.subject);
    return createJiraClient({ ...call, siteUrl: config.siteUrl, authorization, budget: shared });
  }
  // One redaction list for the session's calls and the client's: it grows with every token learnt.
  const secrets = [...(call.secrets ?? []), ...oauthSecrets(storedOAuth(credential.reveal(), call.subject))];
  const withSecrets = { ...call, secrets };
  const oauth = oauthSession({
    integrationId: ctx.integration.id,
    config,
    credential,
    subject: call.subject,
    now: () => call.clock.now().getTime(),
    calls: oauthCalls(config, withSecrets),
    secrets,
  });
  return createJiraClient({ ...withSecrets, siteUrl: config.siteUrl, authorization: '', oauth, budget: shared });
}

/** The stored OAuth credential; one that does not read as one is the unit's `auth` failure (naming the field). */
function storedOAuth(secret: string, subject: string): OAuthCredential {
  try {
    return parseOAuthCredential(secret);
  } catch (cause) {
    const why = cause instanceof ValidationError ? cause.message : 'it does not read';
    throw new NonRetryableError(`${subject}: the stored OAuth credential is not usable (${why})`, 'auth', { cause });
  }
}
