/**
 * A GitHub worker process SIGKILLed mid-pagination: the emulator holds the second page of issues
 * (a slow-response fault) after the first page's rows are written, the worker is killed by pid,
 * the reconciler (with a policy that retries GitHub backfills, whose surfaces are retry-safe)
 * retries the unit on another worker, and every issue is stored exactly once.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMqBroker } from '../../src/broker/bullmq.js';
import { loadSettings } from '../../src/config.js';
import { linearBackfillEligibility, type RetryEligibility } from '../../src/domain/retryPolicy.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { waitFor } from '../helpers/engine.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { deleteRedisKeys } from '../helpers/redis.js';
import { RoleGroup, within } from './roles.js';

const ORG = 'org-gh-kill';
const SECRET_KEY = randomBytes(32).toString('base64');
const SETTINGS_ENV = {
  SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: 'true',
  SYNC_UNIT_RUNNING_LEASE_SECONDS: '2',
  SYNC_RECONCILE_INTERVAL_SECONDS: '1',
  SYNC_UNIT_EXPIRED_LEASE_RETRY_BACKOFF_SECONDS: '0.5',
  SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '1',
  SYNC_UNIT_DISPATCH_STALE_SECONDS: '3',
  SYNCRELAY_SECRET_KEY: SECRET_KEY,
};

/** Linear's default rule, and GitHub backfills whose declared surfaces are all retry-safe. */
const githubBackfillsToo: RetryEligibility = (f) =>
  linearBackfillEligibility(f) ||
  (f.provider === 'github' &&
    f.mode === 'backfill' &&
    f.declaredSurfaces.every((s) => f.retrySafeSurfaces.includes(s)));

describe('multi-process: a GitHub worker is SIGKILLed mid-pagination', () => {
  let t: TestDatabase;
  let prefix: string;
  let broker: BullMqBroker;
  let engine: Engine;
  let roles: RoleGroup;
  let emu: GithubEmulator;

  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 4 });
    prefix = uniquePrefix('ghkill');
    broker = new BullMqBroker({ redisUrl: REDIS_URL, prefix });
    emu = await startGithubEmulator({
      scale: { repos: 1, issues: 260, pulls: 10, maxComments: 0, maxReviews: 0, directCommits: 1, members: 3, days: 5 },
      seed: 31,
    });
    const env = { ...SETTINGS_ENV, DATABASE_URL: t.url, REDIS_URL, SYNCRELAY_QUEUE_PREFIX: prefix };
    roles = new RoleGroup({ ...env, SYNCRELAY_LOG_LEVEL: 'warn' });
    // This process plans, triggers and reconciles; the workers are child processes.
    engine = await Engine.open({
      settings: loadSettings(env),
      db: t.db,
      broker,
      logger: silentLogger(),
      retryEligibility: githubBackfillsToo,
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

  it('retries the unit on another worker and upserts every issue once', { timeout: 90_000 }, async () => {
    try {
      await scenario();
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${roles.describe()}`, { cause: err });
    }
  });

  async function scenario(): Promise<void> {
    const repo = emu.data.repos[0]!;
    const issues = repo.items.filter((i) => !i.pull).length;
    expect(repo.items.length).toBeGreaterThan(200);
    const integration = await engine.createIntegration({
      orgId: ORG,
      provider: 'github',
      name: 'killed',
      sources: [`${emu.data.org.login}/${repo.name}`],
      datasets: ['work-items'],
      config: { baseUrl: emu.url },
      credential: emu.token,
    });
    // Every later page of issues waits a minute: the worker is killed while it waits.
    emu.setFaults([{ kind: 'slow', path: 'page=2', delayMs: 60_000 }]);
    const victim = roles.start('worker', 'worker-1');
    await within(victim.ready, 30_000, 'the first worker to be ready');

    const now = Date.now();
    const run = await engine.trigger({
      orgId: ORG,
      integrationId: integration.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: new Date(now - 6 * 86_400_000),
      before: new Date(now + 60_000),
    });
    expect(run.units).toBe(1);

    // The first page's rows are written before the second page is asked for.
    const firstPage = await waitFor(() => storedIssues(integration.id).then((n) => (n > 0 ? n : null)), 30_000, 50);
    expect(firstPage).toBeLessThan(issues);
    expect(victim.owners.size).toBe(1);
    const exit = await victim.stop('SIGKILL');
    expect(exit.signal).toBe('SIGKILL');
    expect(await storedIssues(integration.id)).toBe(firstPage);

    emu.setFaults([]);
    const survivor = roles.start('worker', 'worker-2');
    await within(survivor.ready, 30_000, 'the second worker to be ready');
    const status = await waitFor(async () => {
      const { rows } = await t.db.query<{ status: string }>(
        `SELECT status FROM ${t.db.schema.sync_runs} WHERE id = $1`,
        [run.syncRunId],
      );
      return ['planned', 'dispatching'].includes(rows[0]!.status) ? null : rows[0]!.status;
    }, 45_000);
    expect(status).toBe('success');

    const { rows: units } = await t.db.query<{ attempts: number; expired_lease_retry_count: number }>(
      `SELECT attempts, expired_lease_retry_count FROM ${t.db.schema.sync_run_units} WHERE sync_run_id = $1`,
      [run.syncRunId],
    );
    expect(units).toEqual([{ attempts: 2, expired_lease_retry_count: 1 }]);
    expect(survivor.owners.size).toBe(1);
    const { rows } = await t.db.query<{ n: number; keys: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT external_id)::int AS keys
         FROM ${t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [integration.id],
    );
    expect(rows[0]).toEqual({ n: issues, keys: issues });
  }

  async function storedIssues(integrationId: string): Promise<number> {
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [integrationId],
    );
    return rows[0]!.n;
  }
});
