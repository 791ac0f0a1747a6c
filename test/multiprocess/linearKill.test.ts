/**
 * A Linear worker process SIGKILLed mid-backfill: the emulator answers pages of issues slowly, the
 * test waits until the work-items unit (carrying comments, history and labels) has written a page,
 * then makes every later page hang and kills the worker by pid. A fresh worker and the reconciler
 * (the default policy: Linear work-item backfills are retried once after an expired lease) finish
 * the unit, and every normalized row is stored exactly once and equals the emulator's records.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMqBroker } from '../../src/broker/bullmq.js';
import { loadSettings } from '../../src/config.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { startLinearEmulator, type LinearEmulator } from '../../src/emulators/linear/index.js';
import { waitFor } from '../helpers/engine.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { deleteRedisKeys } from '../helpers/redis.js';
import { within } from './roles.js';

const ORG = 'org-ln-kill';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ENTRY = fileURLToPath(new URL('../helpers/linearRole.ts', import.meta.url));
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history', 'work-item-labels'];
const TABLES = ['work_items', 'work_item_comments', 'work_item_events'] as const;
const ISSUES_OP = 'SyncIssues';
const SETTINGS_ENV = {
  SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: 'true',
  SYNC_UNIT_RUNNING_LEASE_SECONDS: '2',
  SYNC_RECONCILE_INTERVAL_SECONDS: '1',
  SYNC_UNIT_EXPIRED_LEASE_RETRY_BACKOFF_SECONDS: '0',
  SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '1',
  SYNC_UNIT_DISPATCH_STALE_SECONDS: '3',
  SYNCRELAY_SECRET_KEY: randomBytes(32).toString('base64'),
};

/** A Linear worker child process: `ready` and the lease owners of the units it started, from stdout. */
class LinearWorker {
  readonly child: ChildProcess;
  readonly owners = new Map<string, string>();
  readonly ready: Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private stderr = '';

  constructor(
    readonly tag: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, ['--import', 'tsx', ENTRY], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.child.stderr!.setEncoding('utf8').on('data', (c: string) => (this.stderr = (this.stderr + c).slice(-8000)));
    this.ready = new Promise((resolve, reject) => {
      void this.exited.then((e) => reject(new Error(`${tag} exited (${JSON.stringify(e)}): ${this.stderr}`)));
      createInterface({ input: this.child.stdout! }).on('line', (line) => {
        const [word, a, b] = line.trim().split(/\s+/);
        if (word === 'ready') resolve();
        if (word === 'unit' && a && b) this.owners.set(b, a);
      });
    });
    this.ready.catch(() => undefined);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.alive) process.kill(this.child.pid!, signal);
    return within(this.exited, 20_000, `${this.tag} to exit after ${signal}`);
  }

  describe(): string {
    return `--- ${this.tag} (pid ${String(this.child.pid)}, ${this.alive ? 'alive' : 'exited'}):\n${this.stderr}`;
  }
}

describe('multi-process: a Linear worker is SIGKILLed mid-pagination', () => {
  let t: TestDatabase;
  let prefix: string;
  let broker: BullMqBroker;
  let engine: Engine;
  let emu: LinearEmulator;
  const workers: LinearWorker[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 4 });
    prefix = uniquePrefix('lnkill');
    broker = new BullMqBroker({ redisUrl: REDIS_URL, prefix });
    emu = await startLinearEmulator({
      scale: { teams: 2, issues: 120, users: 5, projects: 2, cycles: 2, maxComments: 3, maxLabels: 2, days: 5 },
      seed: 41,
    });
    env = { ...SETTINGS_ENV, DATABASE_URL: t.url, REDIS_URL, SYNCRELAY_QUEUE_PREFIX: prefix };
    env.SYNCRELAY_LOG_LEVEL = 'warn';
    env.LINEAR_PAGE_SIZE = '5';
    // This process plans, triggers and reconciles (default retry policy); the workers are children.
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
    await Promise.all(workers.filter((w) => w.alive).map((w) => w.kill('SIGKILL').catch(() => undefined)));
    await engine?.close();
    await broker?.close();
    await emu?.close();
    await t?.drop();
    if (prefix) await deleteRedisKeys(`${prefix}:*`);
  });

  function startWorker(tag: string): LinearWorker {
    const w = new LinearWorker(tag, env);
    workers.push(w);
    return w;
  }

  it('retries the unit once on another worker and stores every record once', { timeout: 90_000 }, async () => {
    try {
      await scenario();
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${workers.map((w) => w.describe()).join('\n')}`, { cause: err });
    }
  });

  async function scenario(): Promise<void> {
    const team = emu.data.teams[0]!;
    const now = Date.now();
    const since = new Date(now - 6 * 86_400_000);
    const before = new Date(now + 60_000);
    const issues = emu.data.issues.filter(
      (i) => i.teamId === team.id && i.updatedAt >= since.getTime() && i.updatedAt < before.getTime(),
    );
    expect(issues.length).toBeGreaterThan(30); // several pages of 5
    const integration = await engine.createIntegration({
      orgId: ORG,
      provider: 'linear',
      name: 'killed',
      sources: [team.key],
      datasets: FAMILY,
      config: { apiUrl: emu.url },
      credential: emu.token,
    });
    // Every page of issues is slow, so the test sees the first page stored while more are to come.
    emu.setFaults([{ kind: 'slow', operation: ISSUES_OP, delayMs: 300 }]);
    const victim = startWorker('worker-1');
    await within(victim.ready, 30_000, 'the first worker to be ready');

    const run = await engine.trigger({
      orgId: ORG,
      integrationId: integration.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since,
      before,
    });
    expect(run.units).toBe(1);
    const unit = await unitRow(run.syncRunId);
    expect(unit.dataset_key).toBe('work-items');
    expect([...unit.carried_datasets].sort()).toEqual(FAMILY.filter((d) => d !== 'work-items').sort());

    // A page's rows are written (observed in the database): from here on every page hangs.
    const firstPage = await waitFor(() => storedIssues(integration.id).then((n) => (n > 0 ? n : null)), 30_000, 10);
    emu.setFaults([{ kind: 'slow', operation: ISSUES_OP, delayMs: 60_000 }]);
    expect(victim.owners.size).toBe(1);
    expect(victim.owners.values().next().value).toBe(unit.id);
    const exit = await victim.kill('SIGKILL');
    expect(exit.signal).toBe('SIGKILL');
    // Killed mid-pagination: some pages stored (one more may have been answered before the hang), not all.
    const atKill = await storedIssues(integration.id);
    expect(atKill).toBeGreaterThanOrEqual(firstPage);
    expect(atKill).toBeLessThan(issues.length);
    const answered = emu.requestLog.filter((e) => e.operation?.startsWith(ISSUES_OP) && e.status === 200).length;
    expect(answered).toBeGreaterThanOrEqual(1);
    expect((await unitRow(run.syncRunId)).status).toBe('running');

    emu.setFaults([]);
    const survivor = startWorker('worker-2');
    await within(survivor.ready, 30_000, 'the second worker to be ready');
    const status = await waitFor(async () => {
      const { rows } = await t.db.query<{ status: string }>(
        `SELECT status FROM ${t.db.schema.sync_runs} WHERE id = $1`,
        [run.syncRunId],
      );
      return ['planned', 'dispatching'].includes(rows[0]!.status) ? null : rows[0]!.status;
    }, 45_000);
    expect(status).toBe('success');

    const done = await unitRow(run.syncRunId);
    expect({
      status: done.status,
      attempts: done.attempts,
      retries: done.expired_lease_retry_count,
      reason: done.last_retry_reason,
    }).toEqual({ status: 'success', attempts: 2, retries: 1, reason: 'expired_lease' });
    expect(survivor.owners.size).toBe(1);

    for (const table of TABLES) {
      const { rows } = await t.db.query<{ n: number; keys: number }>(
        `SELECT count(*)::int AS n,
                count(DISTINCT (integration_id, provider, external_id))::int AS keys
           FROM ${t.db.schema.table(table)} WHERE integration_id = $1`,
        [integration.id],
      );
      expect(rows[0]!.n, table).toBeGreaterThan(0);
      expect(rows[0]!.keys, table).toBe(rows[0]!.n);
    }
    expect(await storedKeys(integration.id, 'work_items')).toEqual(issues.map((i) => i.id).sort());
    const comments = issues.flatMap((i) => i.comments.map((c) => c.id)).sort();
    expect(await storedKeys(integration.id, 'work_item_comments')).toEqual(comments);
    const { rows: titles } = await t.db.query<{ external_id: string; title: string }>(
      `SELECT external_id, title FROM ${t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [integration.id],
    );
    const byId = new Map(issues.map((i) => [i.id, i.title]));
    for (const r of titles) expect(r.title).toBe(byId.get(r.external_id));
  }

  async function unitRow(runId: string): Promise<{
    id: string;
    status: string;
    dataset_key: string;
    carried_datasets: string[];
    attempts: number;
    expired_lease_retry_count: number;
    last_retry_reason: string | null;
  }> {
    const { rows } = await t.db.query<Awaited<ReturnType<typeof unitRow>>>(
      `SELECT id, status, dataset_key, carried_datasets, attempts, expired_lease_retry_count, last_retry_reason
         FROM ${t.db.schema.sync_run_units} WHERE sync_run_id = $1`,
      [runId],
    );
    expect(rows).toHaveLength(1);
    return rows[0]!;
  }

  async function storedIssues(integrationId: string): Promise<number> {
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [integrationId],
    );
    return rows[0]!.n;
  }

  async function storedKeys(integrationId: string, table: string): Promise<string[]> {
    const { rows } = await t.db.query<{ external_id: string }>(
      `SELECT external_id FROM ${t.db.schema.table(table)} WHERE integration_id = $1 ORDER BY external_id`,
      [integrationId],
    );
    return rows.map((r) => r.external_id).sort();
  }
});
