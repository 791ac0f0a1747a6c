/**
 * Two worker processes refreshing one Jira OAuth 2.0 credential at once: the emulator's access
 * tokens live one second and its refresh tokens rotate (a used one answers `invalid_grant`), every
 * request is answered a little late so the backfill spans many token lifetimes, and both workers
 * run units of it. The run ends with every unit a success, no refresh refused, and the stored
 * credential holding the one refresh token the emulator accepts: each rotation was stored by the
 * process that made it before any other process could refresh.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMqBroker } from '../../src/broker/bullmq.js';
import { loadSettings } from '../../src/config.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { jiraOAuthIntegration, startJiraEmulator, type JiraEmulator } from '../../src/emulators/jira/index.js';
import { parseOAuthCredential } from '../../src/providers/jira/oauthConfig.js';
import { revealCredential } from '../../src/secrets/credentials.js';
import { getCredential } from '../../src/store/credentials.js';
import { waitFor } from '../helpers/engine.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { deleteRedisKeys } from '../helpers/redis.js';
import { RoleGroup, within } from './roles.js';

const ORG = 'org-jira-oauth-mp';
const DAY = 86_400_000;
const SCALE = { projects: 3, issues: 240, users: 6, maxComments: 2, longLists: 3, sprints: 2, days: 42 };
const SETTINGS_ENV = {
  SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: 'true',
  SYNC_RECONCILE_INTERVAL_SECONDS: '1',
  SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '1',
  SYNCRELAY_SECRET_KEY: randomBytes(32).toString('base64'),
};

describe('multi-process: two workers refresh one rotating OAuth credential', () => {
  let t: TestDatabase;
  let prefix: string;
  let broker: BullMqBroker;
  let engine: Engine;
  let roles: RoleGroup;
  let emu: JiraEmulator;

  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 4 });
    prefix = uniquePrefix('jiraoauth');
    broker = new BullMqBroker({ redisUrl: REDIS_URL, prefix });
    emu = await startJiraEmulator({ scale: SCALE, seed: 43, searchLagMs: 0, oauth: { accessTokenTtlSeconds: 1 } });
    const env = { ...SETTINGS_ENV, DATABASE_URL: t.url, REDIS_URL, SYNCRELAY_QUEUE_PREFIX: prefix };
    roles = new RoleGroup({ ...env, SYNCRELAY_LOG_LEVEL: 'warn', WORKER_CONCURRENCY: '3' });
    engine = await Engine.open({
      settings: loadSettings(env),
      db: t.db,
      broker,
      logger: silentLogger(),
      migrate: false,
    });
    await engine.startReconciler({ scheduler: false });
  }, 60_000);

  afterAll(async () => {
    await roles?.killAll();
    await engine?.close();
    await broker?.close();
    await emu?.close();
    await t?.drop();
    if (prefix) await deleteRedisKeys(`${prefix}:*`);
  });

  it('ends with one valid refresh token stored and no invalid_grant', { timeout: 120_000 }, async () => {
    try {
      await scenario();
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${roles.describe()}`, { cause: err });
    }
  });

  async function scenario(): Promise<void> {
    const { config, credential } = jiraOAuthIntegration(emu);
    const integration = await engine.createIntegration({
      orgId: ORG,
      provider: 'jira',
      name: 'oauth-two-workers',
      sources: emu.data.projects.map((p) => p.key),
      datasets: ['work-items', 'work-item-comments', 'work-item-history'],
      config,
      credential,
    });
    const workers = [roles.start('worker', 'worker-1'), roles.start('worker', 'worker-2')];
    await within(Promise.all(workers.map((w) => w.ready)), 30_000, 'both workers to be ready');
    emu.setFaults([{ kind: 'slow', path: '/rest/', probability: 1, delayMs: 150 }]);

    const run = await engine.trigger({
      orgId: ORG,
      integrationId: integration.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: new Date(Math.floor((Date.now() - (SCALE.days + 1) * DAY) / DAY) * DAY),
      before: new Date(Date.now() + 60_000),
    });
    expect(run.units).toBeGreaterThanOrEqual(6);
    const status = await waitFor(async () => {
      const { rows } = await t.db.query<{ status: string }>(
        `SELECT status FROM ${t.db.schema.sync_runs} WHERE id = $1`,
        [run.syncRunId],
      );
      return ['planned', 'dispatching'].includes(rows[0]!.status) ? null : rows[0]!.status;
    }, 100_000);
    emu.setFaults([]);
    const { rows: units } = await t.db.query<{ status: string; error: string | null }>(
      `SELECT status, error FROM ${t.db.schema.sync_run_units} WHERE sync_run_id = $1`,
      [run.syncRunId],
    );
    expect(units.filter((u) => u.status !== 'success')).toEqual([]);
    expect(status).toBe('success');
    // Both processes ran units, so both refreshed the one credential over the run.
    for (const w of workers) expect(w.owners.size, w.tag).toBeGreaterThan(0);

    const grant = emu.oauth!;
    expect(grant.stats.invalidGrants).toBe(0);
    expect(grant.stats.refreshes, JSON.stringify(grant.stats)).toBeGreaterThanOrEqual(3);
    const row = await getCredential(t.db, integration.id);
    const stored = parseOAuthCredential(revealCredential(engine.ctx.secrets, row!));
    expect(stored.refreshToken).toBe(grant.currentRefreshToken());
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [integration.id],
    );
    expect(rows[0]!.n).toBe(emu.data.projects.reduce((n, p) => n + p.issues.length, 0));
  }
});
