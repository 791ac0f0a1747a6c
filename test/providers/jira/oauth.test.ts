/**
 * The Jira client signed in with OAuth 2.0 (3LO) against the emulator's token endpoint, accessible-
 * resources and gateway, on one manual clock: the cloud id is found by the site URL, each refresh
 * rotates the stored refresh token, a token is renewed when due and once when refused with 401, a
 * refused grant or an unreached site fails `auth` without a secret, and a token endpoint that fails
 * transiently is retried.
 */
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { NonRetryableError } from '../../../src/errors.js';
import { jiraOAuthIntegration, startJiraEmulator, type JiraEmulator } from '../../../src/emulators/jira/index.js';
import type { ClientOptions } from '../../../src/providers/kit/call.js';
import { createJiraClient } from '../../../src/providers/jira/client.js';
import { parseJiraConfig } from '../../../src/providers/jira/config.js';
import { forgetOAuthSessions, oauthSession } from '../../../src/providers/jira/oauth.js';
import { parseOAuthCredential } from '../../../src/providers/jira/oauthConfig.js';
import { oauthCalls } from '../../../src/providers/jira/oauthEndpoints.js';
import type { CredentialChange, UnitCredential } from '../../../src/sdk/types.js';

const T0 = Date.UTC(2026, 11, 1, 12);
const SUBJECT = 'jira integration "oauth-unit"';

/** A credential kept in memory whose changes run one at a time, as the row lock makes them. */
function memoryCredential(secret: string): UnitCredential & { stored(): string } {
  let stored = secret;
  let chain: Promise<unknown> = Promise.resolve();
  return {
    id: 'cred-oauth.v1',
    reveal: () => secret,
    stored: () => stored,
    change<T>(fn: (current: string) => Promise<CredentialChange<T>>): Promise<T> {
      const run = chain.then(async () => {
        const { secret: next, value } = await fn(stored);
        if (next !== undefined) stored = next;
        return value;
      });
      chain = run.catch(() => undefined);
      return run;
    },
  };
}

describe('Jira OAuth 2.0 sign-in', () => {
  const clock = new ManualClock(T0);
  let emu: JiraEmulator;

  beforeAll(async () => {
    emu = await startJiraEmulator({
      scale: 'small',
      seed: 5,
      clock,
      searchLagMs: 0,
      oauth: { accessTokenTtlSeconds: 60 },
    });
  });
  afterAll(async () => emu?.close());
  afterEach(() => {
    forgetOAuthSessions();
    emu.setFaults([]);
  });

  function signedIn(configOverride: Record<string, string> = {}, credential = jiraOAuthIntegration(emu).credential) {
    const { config: raw } = jiraOAuthIntegration(emu);
    const config = parseJiraConfig({ ...raw, ...configOverride });
    const stored = memoryCredential(credential);
    const secrets: string[] = [];
    const call: ClientOptions = {
      subject: SUBJECT,
      clock,
      signal: new AbortController().signal,
      logger: pino({ level: 'silent' }),
      retry: { baseDelayMs: 1, maxDelayMs: 2 },
      fetch: globalThis.fetch,
      secrets,
    };
    const session = oauthSession({
      integrationId: 'int-oauth',
      config,
      credential: stored,
      subject: SUBJECT,
      now: () => clock.now().getTime(),
      calls: oauthCalls(config, call),
      secrets,
    });
    const jira = createJiraClient({
      ...call,
      siteUrl: config.siteUrl,
      authorization: '',
      oauth: session,
      budget: null,
    });
    return { jira, stored, session };
  }

  async function failure(p: Promise<unknown>): Promise<NonRetryableError> {
    const err = await p.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NonRetryableError);
    for (const secret of emu.oauth!.issued) expect((err as Error).message).not.toContain(secret);
    return err as NonRetryableError;
  }

  it('reads through the gateway path of the site’s cloud id and stores the rotated refresh token', async () => {
    const { jira, stored } = signedIn();
    const before = emu.oauth!.stats.refreshes;
    const me = await jira.get<{ accountId: string }>('/rest/api/3/myself');
    expect(me.accountId).toBe(emu.data.users[0]!.accountId);
    await jira.get('/rest/api/3/status');
    expect(emu.oauth!.stats.refreshes).toBe(before + 1);
    const kept = parseOAuthCredential(stored.stored());
    expect(kept.refreshToken).toBe(emu.oauth!.currentRefreshToken());
    expect(kept.expiresAt).toBe(T0 + 60_000);
    const last = emu.requestLog.at(-1)!;
    expect(last.path).toBe(`/ex/jira/${emu.oauth!.cloudId}/rest/api/3/status`);
    expect(last.auth).toBe('oauth');
  });

  it('renews a token when due, and once when an answer refuses it with 401', async () => {
    const { jira } = signedIn();
    await jira.get('/rest/api/3/myself');
    const refreshes = emu.oauth!.stats.refreshes;
    clock.advance(46_000); // past 3/4 of the 60 s life: due
    await jira.get('/rest/api/3/myself');
    expect(emu.oauth!.stats.refreshes).toBe(refreshes + 1);
    emu.setFaults([{ kind: 'unauthorized', count: 1 }]);
    await jira.get('/rest/api/3/myself');
    expect(emu.oauth!.stats.refreshes).toBe(refreshes + 2);
    emu.setFaults([{ kind: 'unauthorized', count: 2 }]);
    const err = await failure(jira.get('/rest/api/3/myself'));
    expect(err.category).toBe('auth');
  });

  it('a token kept by another process is used, not refreshed again', async () => {
    const first = signedIn();
    await first.jira.get('/rest/api/3/myself');
    const refreshes = emu.oauth!.stats.refreshes;
    forgetOAuthSessions(); // a second process: nothing in memory, the stored credential as the first left it
    const second = signedIn({}, first.stored.stored());
    await second.jira.get('/rest/api/3/myself');
    expect(emu.oauth!.stats.refreshes).toBe(refreshes);
  });

  it('a refresh token used already answers invalid_grant: `auth`, naming the integration, no secret', async () => {
    const stale = jiraOAuthIntegration(emu).credential;
    await signedIn({}, stale).jira.get('/rest/api/3/myself');
    forgetOAuthSessions();
    const invalid = emu.oauth!.stats.invalidGrants;
    const err = await failure(signedIn({}, stale).jira.get('/rest/api/3/myself'));
    expect(err.category).toBe('auth');
    expect(err.message).toContain(SUBJECT);
    expect(String((err.cause as Error).message)).toContain('invalid_grant');
    expect(emu.oauth!.stats.invalidGrants).toBe(invalid + 1);
  });

  it('a site the grant does not reach fails `auth`, naming the site', async () => {
    const err = await failure(signedIn({ siteUrl: 'http://127.0.0.1:9' }).jira.get('/rest/api/3/myself'));
    expect(err.category).toBe('auth');
    expect(err.message).toContain('http://127.0.0.1:9');
  });

  it('a token endpoint that fails transiently is retried in place', async () => {
    emu.setFaults([{ kind: 'server-error', path: '/oauth/token', count: 2 }]);
    const { jira } = signedIn();
    await jira.get('/rest/api/3/myself');
    expect(emu.requestLog.filter((e) => e.path === '/oauth/token' && e.status === 503).length).toBe(2);
  });
});
