/**
 * GitHub as an App installation, end to end: the API server, a worker and the reconciler on real
 * PostgreSQL and Redis, the GitHub emulator with an App whose installation tokens live one second.
 * An integration created with `auth: app` and the App's private key backfills every repository
 * through several tokens with no failed unit; a token revoked under a process is traded once and
 * the run goes on; a revoked key fails the units `auth`, naming the integration; a key that is no
 * RSA private key is refused at create; and neither the key, nor a JWT, nor a token is anywhere.
 */
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { forgetInstallationTokens } from '../../src/providers/github/appAuth.js';
import { createGithubProvider } from '../../src/providers/github/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { incrementalRun, openApiStack, runEnded, type ApiStack } from '../helpers/apiStack.js';
import { dumpDatabase, dumpRedis, findLeaks, processCommandLine } from '../helpers/leakScan.js';
import { REDIS_URL } from '../helpers/pg.js';

const ORG = 'org-gh-app-e2e';
const DAY = 86_400_000;
const DATASETS = ['work-items', 'work-item-comments', 'pull-requests', 'pull-request-reviews', 'commits'];
const SCALE = {
  repos: 2,
  issues: 200,
  pulls: 20,
  maxComments: 2,
  maxReviews: 2,
  directCommits: 10,
  members: 4,
  days: 10,
};
/** Each request answered this much later: the backfill outlives several one-second tokens. */
const SLOW_MS = 250;

describe('GitHub App end to end (API, worker, reconciler, emulator)', () => {
  let stack: ApiStack;
  let short: GithubEmulator;
  let hourly: GithubEmulator;
  const started = Date.now();
  const keys: string[] = [];

  beforeAll(async () => {
    forgetInstallationTokens();
    short = await startGithubEmulator({ scale: SCALE, seed: 31, app: { tokenTtlSeconds: 1 } });
    hourly = await startGithubEmulator({ scale: { ...SCALE, issues: 40, pulls: 4 }, seed: 32, app: {} });
    keys.push(short.appPrivateKeyPem!, hourly.appPrivateKeyPem!);
    stack = await openApiStack({
      orgId: ORG,
      tag: 'gh-app-e2e',
      poolSize: 8,
      concurrency: 4,
      registry: (db) => new ProviderRegistry().register(createGithubProvider({}), normalizedSink(db)),
    });
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
    await short?.close();
    await hourly?.close();
    forgetInstallationTokens();
  });

  const send = (method: string, path: string, body?: unknown) => stack.send(method, path, body);

  function appIntegration(name: string, on: GithubEmulator, credential: string) {
    return send('POST', '/api/v1/integrations', {
      provider: 'github',
      name,
      sources: on.data.repos.map((r) => `${on.data.org.login}/${r.name}`),
      datasets: DATASETS,
      config: { baseUrl: on.url, auth: 'app', appId: on.appId, installationId: on.installationId },
      credential,
    });
  }

  async function created(name: string, on: GithubEmulator): Promise<string> {
    const res = await appIntegration(name, on, on.appPrivateKeyPem!);
    expect(res.status, res.text).toBe(201);
    expect(res.text).not.toContain('PRIVATE KEY');
    return (res.json as { id: string }).id;
  }

  const finished = (runId: string, timeoutMs = 90_000) => runEnded(stack, runId, timeoutMs);

  async function backfill(id: string, on: GithubEmulator): Promise<string> {
    const since = new Date(Math.floor((started - (on.scale.days + 1) * DAY) / DAY) * DAY);
    const res = await send('POST', `/api/v1/integrations/${id}/backfill`, {
      since: since.toISOString(),
      before: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(res.status, res.text).toBe(202);
    return (res.json as { sync_run_id: string }).sync_run_id;
  }

  const incremental = (id: string) => incrementalRun(stack, id);

  async function units(runId: string) {
    const { rows } = await stack.t.db.query<{ status: string; error: string | null; result: unknown }>(
      `SELECT status, error, result FROM ${stack.t.db.schema.sync_run_units} WHERE sync_run_id = $1`,
      [runId],
    );
    return rows;
  }

  it('a backfill through several installation tokens: every unit succeeds, every issue stored', async () => {
    const id = await created('app-short-tokens', short);
    short.setFaults([{ kind: 'slow', probability: 1, delayMs: SLOW_MS }]);
    const runId = await backfill(id, short);
    expect(await finished(runId)).toBe('success');
    short.setFaults([]);
    expect((await units(runId)).every((u) => u.status === 'success')).toBe(true);
    const stats = short.appStats();
    expect(stats.tokensIssued, JSON.stringify(stats)).toBeGreaterThanOrEqual(3);
    expect(stats.jwtsRefused).toBe(0);
    const { rows } = await stack.t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${stack.t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [id],
    );
    expect(rows[0]!.n).toBe(short.data.repos.flatMap((r) => r.items.filter((i) => !i.pull)).length);
    // The installation's budget, not the key's: one row, named by App and installation.
    const { rows: budgets } = await stack.t.db.query<{ credential_id: string }>(
      `SELECT credential_id FROM ${stack.t.db.schema.rate_budgets} WHERE org_id = $1 AND provider = 'github'`,
      [ORG],
    );
    const holder = `app-${String(short.appId)}-installation-${String(short.installationId)}@${new URL(short.url).host}`;
    expect(budgets.map((b) => b.credential_id)).toEqual([holder]);
  }, 120_000);

  let hourlyId = '';

  it('a token revoked under the process is traded once, and the run goes on', async () => {
    hourlyId = await created('app-hourly', hourly);
    expect(await finished(await backfill(hourlyId, hourly))).toBe('success');
    const before = hourly.appStats();
    expect(hourly.revokeInstallationTokens()).toBeGreaterThan(0);
    expect(await finished(await incremental(hourlyId))).toBe('success');
    const after = hourly.appStats();
    expect(after.tokensRefused).toBeGreaterThan(before.tokensRefused);
    expect(after.tokensIssued).toBe(before.tokensIssued + 1);
    // The same App and installation ids on another host are another installation: a budget of its own.
    const { rows } = await stack.t.db.query<{ n: number }>(
      `SELECT count(DISTINCT credential_id)::int AS n FROM ${stack.t.db.schema.rate_budgets} WHERE org_id = $1`,
      [ORG],
    );
    expect([short.appId, short.installationId]).toEqual([hourly.appId, hourly.installationId]);
    expect(rows[0]!.n).toBe(2);
  }, 120_000);

  it('a revoked App key fails the units `auth`, naming the integration, never showing a secret', async () => {
    expect(hourlyId).not.toBe('');
    keys.push(hourly.revokeAppKey());
    hourly.revokeInstallationTokens();
    const runId = await incremental(hourlyId);
    expect(await finished(runId)).toBe('failed');
    const rows = await units(runId);
    expect(rows.length).toBeGreaterThan(0);
    for (const unit of rows) {
      expect(unit.result).toMatchObject({ error_category: 'auth' });
      expect(unit.error).toContain('"app-hourly"');
      expect(unit.error).not.toMatch(/PRIVATE KEY|ghs_|eyJ/);
    }
  }, 60_000);

  it('a credential that is no RSA private key is refused at create, naming it, quoting nothing', async () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString()
      .trimEnd();
    keys.push(ec);
    for (const credential of [ec, 'ghp_aTokenWhereAKeyBelongs0123456789']) {
      const res = await appIntegration('app-bad-key', short, credential);
      expect(res.status, res.text).toBe(400);
      expect(res.text).toContain('credential');
      expect(res.text).toContain('RSA private key');
      expect(res.text).not.toContain(credential.slice(30, 60));
    }
  });

  it('no key, JWT or token anywhere: trace logs, answers, /metrics, Redis, rows, command line', async () => {
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
    const secrets = [...keys.map((k) => k.trimEnd()), ...short.appSecretsSeen(), ...hourly.appSecretsSeen()];
    expect(secrets.filter((s) => s.startsWith('ghs_')).length).toBeGreaterThanOrEqual(4);
    expect(secrets.filter((s) => s.startsWith('eyJ')).length).toBeGreaterThanOrEqual(4);
    for (const secret of secrets) expect(findLeaks(secret, sources), secret.slice(0, 8)).toEqual([]);
  }, 60_000);
});
