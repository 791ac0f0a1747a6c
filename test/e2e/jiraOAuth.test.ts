/**
 * Jira Cloud signed in with OAuth 2.0 (3LO), end to end: the API server, a worker and the reconciler
 * on real PostgreSQL and Redis, the Jira emulator's token endpoint (rotating refresh tokens, access
 * tokens living one second), accessible-resources and API gateway. A backfill through several access
 * tokens completes with no failed unit and leaves the stored credential holding the one refresh
 * token the emulator accepts; a revoked grant and a site the grant does not reach fail the units
 * `auth`, naming the integration; a credential that is no OAuth credential is refused at create; and
 * no client secret, refresh or access token is anywhere.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jiraOAuthIntegration, startJiraEmulator, type JiraEmulator } from '../../src/emulators/jira/index.js';
import { createJiraProvider } from '../../src/providers/jira/index.js';
import { forgetOAuthSessions } from '../../src/providers/jira/oauth.js';
import { parseOAuthCredential } from '../../src/providers/jira/oauthConfig.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { revealCredential } from '../../src/secrets/credentials.js';
import { getCredential } from '../../src/store/credentials.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { incrementalRun, openApiStack, runEnded, type ApiStack } from '../helpers/apiStack.js';
import { dumpDatabase, dumpRedis, findLeaks, processCommandLine } from '../helpers/leakScan.js';
import { REDIS_URL } from '../helpers/pg.js';

const ORG = 'org-jira-oauth-e2e';
const DAY = 86_400_000;
const DATASETS = ['projects', 'members', 'work-items', 'work-item-comments', 'work-item-history'];
const SCALE = { projects: 2, issues: 160, users: 6, maxComments: 2, longLists: 2, sprints: 2, days: 35 };
/** Each API request answered this much later: the backfill outlives several one-second access tokens. */
const SLOW_MS = 250;

describe('Jira OAuth 2.0 end to end (API, worker, reconciler, emulator)', () => {
  let stack: ApiStack;
  let emu: JiraEmulator;

  beforeAll(async () => {
    forgetOAuthSessions();
    emu = await startJiraEmulator({ scale: SCALE, seed: 41, searchLagMs: 0, oauth: { accessTokenTtlSeconds: 1 } });
    stack = await openApiStack({
      orgId: ORG,
      tag: 'jira-oauth-e2e',
      poolSize: 8,
      concurrency: 4,
      registry: (db) => new ProviderRegistry().register(createJiraProvider({}), normalizedSink(db)),
    });
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
    await emu?.close();
    forgetOAuthSessions();
  });

  const send = (method: string, path: string, body?: unknown) => stack.send(method, path, body);

  function oauthIntegration(name: string, config: Record<string, string>, credential: string) {
    const sources = emu.data.projects.map((p) => p.key);
    return send('POST', '/api/v1/integrations', {
      provider: 'jira',
      name,
      sources,
      datasets: DATASETS,
      config,
      credential,
    });
  }

  async function created(name: string, config = jiraOAuthIntegration(emu).config): Promise<string> {
    const res = await oauthIntegration(name, config, jiraOAuthIntegration(emu).credential);
    expect(res.status, res.text).toBe(201);
    return (res.json as { id: string }).id;
  }

  async function backfill(id: string): Promise<string> {
    const since = new Date(Math.floor((Date.now() - (SCALE.days + 1) * DAY) / DAY) * DAY);
    const res = await send('POST', `/api/v1/integrations/${id}/backfill`, {
      since: since.toISOString(),
      before: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(res.status, res.text).toBe(202);
    return (res.json as { sync_run_id: string }).sync_run_id;
  }

  async function units(runId: string) {
    const { rows } = await stack.t.db.query<{ status: string; error: string | null; result: unknown }>(
      `SELECT status, error, result FROM ${stack.t.db.schema.sync_run_units} WHERE sync_run_id = $1`,
      [runId],
    );
    return rows;
  }

  async function storedCredential(id: string) {
    const row = await getCredential(stack.t.db, id);
    return parseOAuthCredential(revealCredential(stack.engine.ctx.secrets, row!));
  }

  let id = '';

  it('a backfill through several access tokens: every unit succeeds, the rotated refresh token is stored', async () => {
    id = await created('oauth-short-tokens');
    emu.setFaults([{ kind: 'slow', path: '/rest/', probability: 1, delayMs: SLOW_MS }]);
    const runId = await backfill(id);
    expect(await runEnded(stack, runId, 90_000)).toBe('success');
    emu.setFaults([]);
    expect((await units(runId)).every((u) => u.status === 'success')).toBe(true);
    const grant = emu.oauth!;
    expect(grant.stats.refreshes, JSON.stringify(grant.stats)).toBeGreaterThanOrEqual(3);
    expect(grant.stats.invalidGrants).toBe(0);
    expect((await storedCredential(id)).refreshToken).toBe(grant.currentRefreshToken());
    const { rows } = await stack.t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${stack.t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [id],
    );
    expect(rows[0]!.n).toBe(emu.data.projects.reduce((n, p) => n + p.issues.length, 0));
    // Every API request went through the gateway with an access token.
    const api = emu.requestLog.filter((e) => e.path.includes('/rest/'));
    expect(api.length).toBeGreaterThan(0);
    expect(api.every((e) => e.path.startsWith(`/ex/jira/${grant.cloudId}/rest/`))).toBe(true);
  }, 120_000);

  it('a revoked grant fails the units `auth`, naming the integration, showing no token', async () => {
    expect(id).not.toBe('');
    emu.oauth!.revoke();
    const runId = await incrementalRun(stack, id);
    expect(await runEnded(stack, runId, 60_000)).toBe('failed');
    const rows = await units(runId);
    expect(rows.length).toBeGreaterThan(0);
    for (const unit of rows) {
      expect(unit.result).toMatchObject({ error_category: 'auth' });
      expect(unit.error).toContain('"oauth-short-tokens"');
    }
    expect(emu.oauth!.stats.invalidGrants).toBeGreaterThan(0);
  }, 90_000);

  it('a site the grant does not reach fails the units `auth`, naming the site', async () => {
    const other = await startJiraEmulator({ scale: { ...SCALE, issues: 10 }, seed: 42, searchLagMs: 0 });
    try {
      const fresh = await startJiraEmulator({ scale: SCALE, seed: 41, oauth: {} });
      try {
        const { config, credential } = jiraOAuthIntegration(fresh);
        const res = await oauthIntegration('oauth-wrong-site', { ...config, siteUrl: other.url }, credential);
        expect(res.status, res.text).toBe(201);
        const runId = await incrementalRun(stack, (res.json as { id: string }).id);
        expect(await runEnded(stack, runId, 60_000)).toBe('failed');
        for (const unit of await units(runId)) {
          expect(unit.result).toMatchObject({ error_category: 'auth' });
          expect(unit.error).toContain('"oauth-wrong-site"');
          expect(unit.error).toContain(other.url);
        }
      } finally {
        await fresh.close();
      }
    } finally {
      await other.close();
    }
  }, 90_000);

  it('a credential that is no OAuth credential is refused at create, naming the field, quoting nothing', async () => {
    const { config, credential } = jiraOAuthIntegration(emu);
    const cases: [string, string][] = [
      [emu.token, 'credential'],
      [JSON.stringify({ ...JSON.parse(credential), refreshToken: '' }), 'credential.refreshToken'],
      [JSON.stringify({ ...JSON.parse(credential), extra: 'x' }), 'credential.extra'],
    ];
    for (const [bad, field] of cases) {
      const res = await oauthIntegration('oauth-bad', config, bad);
      expect(res.status, res.text).toBe(400);
      expect(res.text).toContain(field);
      expect(res.text).not.toContain(emu.oauth!.clientSecret);
    }
    const res = await oauthIntegration('token-with-json', { siteUrl: emu.url }, credential);
    expect(res.status, res.text).toBe(400);
    expect(res.text).toContain('config.auth');
    const remote = await oauthIntegration(
      'oauth-remote-token-url',
      { ...config, oauthTokenUrl: 'https://auth.example.com/oauth/token' },
      credential,
    );
    expect(remote.status, remote.text).toBe(400);
    expect(remote.text).toContain('config.oauthTokenUrl');
  });

  it('no client secret, refresh or access token in logs, answers, /metrics, Redis, rows, command line', async () => {
    await send('GET', '/api/v1/integrations');
    const metrics = await stack.responses.call(`${stack.server.url}/metrics`);
    expect(metrics.status).toBe(200);
    const sources: Record<string, string> = {
      logs: stack.log.text(),
      ...stack.responses.sources(),
      ...(await dumpRedis(REDIS_URL, `${stack.prefix}*`)),
      ...(await dumpDatabase(stack.t.db)),
      ...processCommandLine(),
    };
    const secrets = emu.oauth!.issued;
    expect(secrets.length).toBeGreaterThanOrEqual(8);
    for (const secret of secrets) expect(findLeaks(secret, sources), secret.slice(0, 6)).toEqual([]);
  }, 60_000);
});
