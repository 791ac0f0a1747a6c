/**
 * SPEC §11.5 with real processes: two worker processes and a reconciler process share a cloned
 * PostgreSQL database and a Redis queue prefix. A worker is SIGKILLed while it holds a unit of an
 * eligible Linear backfill AND a unit of a plain synthetic incremental run; then every run ends
 * within lease + interval + slack, the eligible unit retried once (expired_lease) to success, the
 * other failed (worker_lost), and the §12 invariants hold in the database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMqBroker } from '../../src/broker/bullmq.js';
import { loadSettings } from '../../src/config.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { waitFor } from '../helpers/engine.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { deleteRedisKeys } from '../helpers/redis.js';
import { RoleGroup, within, type RoleProcess } from './roles.js';

const ORG = 'org-mp';
const LEASE_MS = 2000;
const INTERVAL_MS = 1000;
/** Every run must be terminal this long after the kill (lease + interval + retry path + slack). */
const TERMINAL_BOUND_MS = 30_000;

const SETTINGS_ENV = {
  SYNC_UNIT_RUNNING_LEASE_SECONDS: String(LEASE_MS / 1000),
  SYNC_RECONCILE_INTERVAL_SECONDS: String(INTERVAL_MS / 1000),
  SYNC_UNIT_EXPIRED_LEASE_RETRY_BACKOFF_SECONDS: '0.5',
  SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '1',
  // A run_sync_unit job the dead worker had taken but not yet claimed leaves its unit dispatching;
  // the stale rule re-publishes it (duplicates of waiting jobs are harmless: the claim CAS wins once).
  SYNC_UNIT_DISPATCH_STALE_SECONDS: '3',
};

interface UnitRow {
  id: string;
  sync_run_id: string;
  status: string;
  attempts: number;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  expired_lease_retry_count: number;
  last_retry_reason: string | null;
  source_id: string | null;
  dataset_key: string;
  before_at: Date | null;
  result: { error_category?: string; items?: number } | null;
}

interface RunRow {
  id: string;
  status: string;
  total_units: number;
  completed_units: number;
  failed_units: number;
  result: { cancelled_units?: number };
  completed_at: Date | null;
  updated_at: Date;
}

interface Execution {
  unit_id: string;
  lease_owner: string;
  started_at: Date;
  ended_at: Date | null;
  outcome: string;
}

/** What the dead worker held when it died: unit id → its lease owner and the lease's final expiry. */
type Killed = Map<string, { owner: string; runId: string; leaseExpiresAt: Date }>;

describe('multi-process: a worker is SIGKILLed mid-unit', () => {
  let t: TestDatabase;
  let prefix: string;
  let broker: BullMqBroker;
  let engine: Engine;
  let roles: RoleGroup;

  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 4 });
    prefix = uniquePrefix('mp');
    broker = new BullMqBroker({ redisUrl: REDIS_URL, prefix });
    const env = {
      ...SETTINGS_ENV,
      DATABASE_URL: t.url,
      REDIS_URL,
      SYNCRELAY_QUEUE_PREFIX: prefix,
      SYNCRELAY_LOG_LEVEL: 'warn',
    };
    roles = new RoleGroup(env);
    // The test process only plans and triggers (outbox rows); it runs no worker and no reconciler.
    engine = await Engine.open({
      settings: loadSettings(env),
      db: t.db,
      broker,
      logger: silentLogger(),
      migrate: false,
    });
  });

  afterAll(async () => {
    await roles?.killAll();
    await engine?.close();
    await broker?.close();
    await t?.drop();
    if (prefix) await deleteRedisKeys(`${prefix}:*`);
  });

  it(
    'retries the eligible unit, fails the other worker_lost, and keeps every §12 invariant',
    { timeout: 90_000 },
    async () => {
      try {
        await scenario();
      } catch (err) {
        throw new Error(`${(err as Error).message}\n${roles.describe()}`, { cause: err });
      }
    },
  );

  async function scenario(): Promise<void> {
    const linear = await engine.createIntegration({
      orgId: ORG,
      provider: 'synthetic',
      name: 'linear-like',
      sources: ['L1', 'L2'],
      datasets: ['work-items'],
      config: { impersonate: 'linear', latencyMs: 1000, itemsPerDay: 2 },
    });
    const plain = await engine.createIntegration({
      orgId: ORG,
      provider: 'synthetic',
      name: 'plain',
      sources: ['P1', 'P2'],
      datasets: ['work-items', 'work-item-comments'],
      config: { latencyMs: 1500, itemsPerDay: 2 },
    });

    const reconciler = roles.start('reconciler', 'reconciler');
    const workers = [
      roles.start('worker', 'worker-1', { WORKER_CONCURRENCY: '3' }),
      roles.start('worker', 'worker-2', { WORKER_CONCURRENCY: '3' }),
    ];
    await within(Promise.all([reconciler.ready, ...workers.map((w) => w.ready)]), 30_000, 'the roles to be ready');

    // The plain run's 4 units take 4 of the 6 worker slots, so each worker holds at least one.
    const plainRun = await engine.trigger({
      orgId: ORG,
      integrationId: plain.id,
      mode: 'incremental',
      triggeredBy: 'manual',
    });
    expect(plainRun.units).toBe(4);
    await waitFor(() => runningCount(plainRun.syncRunId).then((n) => n === 4), 15_000);

    // 2 sources × 3 fourteen-day windows. Whichever worker runs one of these also holds a plain unit.
    const linearRun = await engine.trigger({
      orgId: ORG,
      integrationId: linear.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: new Date('2026-01-01T00:00:00Z'),
      before: new Date('2026-02-12T00:00:00Z'),
    });
    expect(linearRun.units).toBe(6);
    const runIds = [linearRun.syncRunId, plainRun.syncRunId];

    const victim = await waitFor(() => workerHoldingBoth(workers, linearRun.syncRunId, plainRun.syncRunId), 15_000, 10);
    const survivor = workers.find((w) => w !== victim)!;
    const exit = await victim.stop('SIGKILL');
    expect(exit.signal).toBe('SIGKILL');
    const killedAt = Date.now();

    // Read once the victim is dead, so the leases it held can no longer move.
    const { rows: runningAtKill } = await t.db.query<UnitRow>(
      "SELECT * FROM syncrelay.sync_run_units WHERE status = 'running'",
    );

    // Every run terminal within the bound.
    await waitFor(async () => {
      const { rows } = await t.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM syncrelay.sync_runs ' +
          "WHERE id = ANY($1::uuid[]) AND status NOT IN ('planned', 'dispatching')",
        [runIds],
      );
      return rows[0]!.n === 2;
    }, TERMINAL_BOUND_MS);
    const terminalAfterMs = Date.now() - killedAt;
    await waitFor(() => metricGenerations(runIds).then((g) => runIds.every((id) => (g.get(id) ?? 0) >= 1)), 10_000);

    const killed = heldByTheDead(runningAtKill, survivor);
    const killedRuns = new Set([...killed.values()].map((k) => k.runId));
    expect(killedRuns, 'the killed worker held a unit of each run').toEqual(new Set(runIds));

    const first = await runs(runIds);
    // Let the reconciler pass a few more times: nothing may move a terminal run again.
    await new Promise((r) => setTimeout(r, 2.5 * INTERVAL_MS));
    const second = await runs(runIds);
    expect(second).toEqual(first);

    const units = await unitsOf(runIds);
    expectOutcomes(units, killed, first, linearRun.syncRunId, plainRun.syncRunId);
    await expectRunInvariants(first, units);
    await expectExecutionInvariants(units, killed);
    await expectSinkInvariants(units, killed, [linear.id, plain.id]);
    await expectWatermarks(units, linear.id, plain.id, plainRun.syncRunId);
    const gens = await metricGenerations(runIds);
    for (const id of runIds) expect(gens.get(id), `post_sync deliveries of run ${id}`).toBe(1);
    const { rows: pending } = await t.db.query(
      'SELECT kind, sync_run_id FROM syncrelay.sync_dispatch_outbox WHERE status = $1',
      ['pending'],
    );
    expect(pending, 'no outbox row left pending').toEqual([]);

    // The survivors stop gracefully on SIGTERM.
    const stopped = await Promise.all([survivor, reconciler].map((p) => p.stop('SIGTERM')));
    expect(stopped).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
    expect(terminalAfterMs).toBeLessThan(TERMINAL_BOUND_MS);
    console.info(`multiprocess kill: ${killed.size} units killed, runs terminal ${terminalAfterMs} ms after the kill`);
  }

  async function runningCount(runId: string): Promise<number> {
    const { rows } = await t.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM syncrelay.sync_run_units WHERE sync_run_id = $1 AND status = 'running'",
      [runId],
    );
    return rows[0]!.n;
  }

  /** The worker that announced, under leases still running, a unit of each run (null if none yet). */
  async function workerHoldingBoth(workers: RoleProcess[], runA: string, runB: string): Promise<RoleProcess | null> {
    const { rows } = await t.db.query<{ sync_run_id: string; lease_owner: string }>(
      'SELECT sync_run_id, lease_owner FROM syncrelay.sync_run_units ' +
        "WHERE status = 'running' AND sync_run_id = ANY($1::uuid[])",
      [[runA, runB]],
    );
    return (
      workers.find((w) => {
        const held = new Set(rows.filter((r) => w.owners.has(r.lease_owner)).map((r) => r.sync_run_id));
        return held.has(runA) && held.has(runB);
      }) ?? null
    );
  }

  /**
   * Of the units running when the victim died, those the survivor never announced: by the time the
   * runs are terminal the survivor has announced every unit it claimed, so what is left is exactly
   * what the victim held (including a unit it claimed but died before announcing).
   */
  function heldByTheDead(runningAtKill: UnitRow[], survivor: RoleProcess): Killed {
    const killed: Killed = new Map();
    for (const u of runningAtKill) {
      if (survivor.owners.has(u.lease_owner!)) continue;
      killed.set(u.id, { owner: u.lease_owner!, runId: u.sync_run_id, leaseExpiresAt: u.lease_expires_at! });
    }
    return killed;
  }

  async function runs(ids: string[]): Promise<RunRow[]> {
    const { rows } = await t.db.query<RunRow>(
      'SELECT * FROM syncrelay.sync_runs WHERE id = ANY($1::uuid[]) ORDER BY id',
      [ids],
    );
    return rows;
  }

  async function unitsOf(runIds: string[]): Promise<UnitRow[]> {
    const { rows } = await t.db.query<UnitRow>(
      'SELECT * FROM syncrelay.sync_run_units WHERE sync_run_id = ANY($1::uuid[]) ORDER BY id',
      [runIds],
    );
    return rows;
  }

  async function metricGenerations(runIds: string[]): Promise<Map<string, number>> {
    const { rows } = await t.db.query<{ sync_run_id: string; gens: number }>(
      `SELECT sync_run_id, count(DISTINCT computed_at)::int AS gens FROM syncrelay.synthetic_metrics_daily
        WHERE sync_run_id = ANY($1::uuid[]) GROUP BY sync_run_id`,
      [runIds],
    );
    return new Map(rows.map((r) => [r.sync_run_id, r.gens]));
  }

  /** The eligible killed units retried once to success; the others failed worker_lost; nothing else moved. */
  function expectOutcomes(
    units: UnitRow[],
    killed: Killed,
    runRows: RunRow[],
    linearRunId: string,
    plainRunId: string,
  ): void {
    for (const u of units) {
      const k = killed.get(u.id);
      const where = `unit ${u.id} (${u.sync_run_id === linearRunId ? 'linear' : 'plain'}, killed: ${!!k})`;
      if (u.sync_run_id === linearRunId) {
        expect({ status: u.status, count: u.expired_lease_retry_count, attempts: u.attempts }, where).toEqual(
          k ? { status: 'success', count: 1, attempts: 2 } : { status: 'success', count: 0, attempts: 1 },
        );
        if (k) {
          expect(u.last_retry_reason, where).toBe('expired_lease');
          expect(u.lease_owner, `${where}: finished under a fresh lease`).not.toBe(k.owner);
        }
      } else if (k) {
        expect({ status: u.status, category: u.result?.error_category, owner: u.lease_owner }, where).toEqual({
          status: 'failed',
          category: 'worker_lost',
          owner: k.owner,
        });
        expect(u.expired_lease_retry_count, where).toBe(0);
      } else {
        expect({ status: u.status, attempts: u.attempts }, where).toEqual({ status: 'success', attempts: 1 });
      }
    }
    const status = new Map(runRows.map((r) => [r.id, r.status]));
    expect(status.get(linearRunId)).toBe('success');
    expect(status.get(plainRunId)).toBe('partial_failed');
  }

  /** Counts agree with the unit rows; JobRun agrees; one ledger row per run (finalized once). */
  async function expectRunInvariants(runRows: RunRow[], units: UnitRow[]): Promise<void> {
    for (const r of runRows) {
      const mine = units.filter((u) => u.sync_run_id === r.id);
      const count = (s: string) => mine.filter((u) => u.status === s).length;
      const cancelled = r.result.cancelled_units ?? 0;
      expect(r.completed_at, `run ${r.id} completed_at`).not.toBeNull();
      expect(r.total_units).toBe(r.completed_units + r.failed_units + cancelled);
      expect({ total: r.total_units, completed: r.completed_units, failed: r.failed_units, cancelled }).toEqual({
        total: mine.length,
        completed: count('success'),
        failed: count('failed'),
        cancelled: count('cancelled'),
      });
      const { rows: jobs } = await t.db.query<{ status: string }>(
        "SELECT status FROM syncrelay.job_runs WHERE result ->> 'sync_run_id' = $1",
        [r.id],
      );
      expect(
        jobs.map((j) => j.status),
        `JobRun of ${r.id}`,
      ).toEqual([r.status === 'partial_failed' ? 'failed' : r.status]);
      const { rows: ledger } = await t.db.query(
        'SELECT kind FROM syncrelay.sync_run_post_dispatches WHERE sync_run_id = $1',
        [r.id],
      );
      expect(ledger).toEqual([{ kind: 'post_sync' }]);
    }
  }

  /**
   * No two executions of a unit overlap a live lease: every attempt runs under its own owner; the
   * next attempt starts only after the previous one ended, or — for the killed attempt, which never
   * ends — after its lease (read once the holder was dead) expired. Only killed attempts never end.
   */
  async function expectExecutionInvariants(units: UnitRow[], killed: Killed): Promise<void> {
    const { rows } = await t.db.query<Execution>(
      'SELECT unit_id, lease_owner, started_at, ended_at, outcome FROM syncrelay.synthetic_executions ' +
        'WHERE unit_id = ANY($1::uuid[]) ORDER BY unit_id, started_at, id',
      [units.map((u) => u.id)],
    );
    const owners = rows.map((e) => e.lease_owner);
    expect(new Set(owners).size, 'one lease owner per execution').toBe(owners.length);
    for (const u of units) {
      const execs = rows.filter((e) => e.unit_id === u.id);
      const k = killed.get(u.id);
      for (const e of execs) {
        if (e.ended_at === null) expect(e.lease_owner, `only the killed attempt of ${u.id} never ended`).toBe(k?.owner);
      }
      for (let i = 1; i < execs.length; i++) {
        const prev = execs[i - 1]!;
        const next = execs[i]!;
        const prevLeaseEnd = prev.ended_at ?? (prev.lease_owner === k?.owner ? k.leaseExpiresAt : null);
        expect(prevLeaseEnd, `attempt ${i} of ${u.id}: previous lease end known`).not.toBeNull();
        expect(
          next.started_at.getTime(),
          `attempt ${i} of ${u.id} starts after the previous lease`,
        ).toBeGreaterThanOrEqual(prevLeaseEnd!.getTime());
      }
      if (u.status === 'success') {
        const wins = execs.filter((e) => e.outcome === 'success');
        expect(
          wins.map((e) => e.lease_owner),
          `successful execution of ${u.id}`,
        ).toContain(u.lease_owner);
        for (const e of execs) if (e.lease_owner !== u.lease_owner) expect(e.lease_owner).toBe(k?.owner);
      }
      // The killed attempt (if it got as far as starting the provider) came first.
      const byKilled = execs.filter((e) => e.lease_owner === k?.owner);
      expect(byKilled.length).toBeLessThanOrEqual(1);
      if (byKilled.length === 1) expect(execs[0]).toBe(byKilled[0]);
    }
  }

  /**
   * Every sink row was written by an attempt while its lease was live; a successful unit's rows all
   * carry its final owner (a retry upserts the same keys), one per item it reported.
   */
  async function expectSinkInvariants(units: UnitRow[], killed: Killed, integrationIds: string[]): Promise<void> {
    const { rows: groups } = await t.db.query<{ unit_id: string; lease_owner: string; n: number; last: Date }>(
      `SELECT unit_id, lease_owner, count(*)::int AS n, max(written_at) AS last FROM syncrelay.synthetic_items
        WHERE integration_id = ANY($1::uuid[]) GROUP BY unit_id, lease_owner`,
      [integrationIds],
    );
    const { rows: execs } = await t.db.query<Execution>(
      'SELECT unit_id, lease_owner, started_at, ended_at, outcome FROM syncrelay.synthetic_executions ' +
        'WHERE unit_id = ANY($1::uuid[])',
      [units.map((u) => u.id)],
    );
    for (const g of groups) {
      const e = execs.find((x) => x.unit_id === g.unit_id && x.lease_owner === g.lease_owner);
      expect(e, `rows of ${g.unit_id} by ${g.lease_owner} come from an execution`).toBeDefined();
      const leaseEnd = e!.ended_at ?? killed.get(g.unit_id)?.leaseExpiresAt;
      expect(leaseEnd, `lease end of ${g.lease_owner}`).toBeDefined();
      expect(g.last.getTime()).toBeLessThanOrEqual(leaseEnd!.getTime());
    }
    for (const u of units.filter((x) => x.status === 'success')) {
      const mine = groups.filter((g) => g.unit_id === u.id);
      expect(
        mine.map((g) => ({ owner: g.lease_owner, n: g.n })),
        `sink rows of ${u.id}`,
      ).toEqual([{ owner: u.lease_owner, n: u.result?.items }]);
      expect(u.result?.items).toBeGreaterThan(0);
    }
  }

  /** Backfill never writes a watermark; incremental ones sit at the successful units' window ends. */
  async function expectWatermarks(
    units: UnitRow[],
    linearId: string,
    plainId: string,
    plainRunId: string,
  ): Promise<void> {
    const { rows } = await t.db.query<{
      integration_id: string;
      source_id: string;
      dataset_key: string;
      watermark_at: Date;
    }>(
      'SELECT integration_id, source_id, dataset_key, watermark_at FROM syncrelay.sync_watermarks ' +
        'WHERE integration_id = ANY($1::uuid[])',
      [[linearId, plainId]],
    );
    expect(
      rows.filter((w) => w.integration_id === linearId),
      'backfill watermarks',
    ).toEqual([]);
    const key = (source: string | null, dataset: string) => `${String(source)}/${dataset}`;
    const got = new Map(rows.map((w) => [key(w.source_id, w.dataset_key), w.watermark_at.getTime()]));
    const want = new Map(
      units
        .filter((u) => u.sync_run_id === plainRunId && u.status === 'success')
        .map((u) => [key(u.source_id, u.dataset_key), u.before_at!.getTime()]),
    );
    expect(got).toEqual(want);
  }
});
