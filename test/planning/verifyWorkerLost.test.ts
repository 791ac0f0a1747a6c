/**
 * A verify run whose worker stops mid-listing, through the engine (real PostgreSQL, the Jira
 * provider against its emulator, a manual clock shared by both; the test delivers every task and
 * runs every reconciler pass itself). The worker parks at the listing's second page — a worker that
 * no longer runs — and its lease runs out because the clock jumps past it: the reconciler, not a
 * sleep, takes the unit away. Nothing is marked deleted by the lost attempt, even once it wakes up;
 * the unit, retried under a fresh lease, lists from the start and marks exactly the deleted issue.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskMessage } from '../../src/broker/types.js';
import { ManualClock } from '../../src/clock.js';
import type { EngineContext } from '../../src/context.js';
import { linearBackfillEligibility, type RetryEligibility } from '../../src/domain/retryPolicy.js';
import { startJiraEmulator, type JiraEmulator } from '../../src/emulators/jira/index.js';
import { Engine } from '../../src/engine.js';
import { Faults } from '../../src/faults.js';
import { silentLogger } from '../../src/logger.js';
import { createJiraProvider } from '../../src/providers/jira/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { reconcilePass } from '../../src/reconciler/pass.js';
import { SecretKey } from '../../src/secrets/key.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { nextDueAt } from '../../src/store/outbox.js';
import type { RunRow, UnitRow } from '../../src/store/rows.js';
import { dispatchSyncRun } from '../../src/tasks/dispatchSyncRun.js';
import { finalizeSyncRun } from '../../src/tasks/finalizeSyncRun.js';
import { postSync } from '../../src/tasks/postSync.js';
import { runUnitMessage } from '../../src/tasks/runSyncUnit.js';
import { HarnessBroker, Hold, within } from '../crash/harness.js';
import { testSettings } from '../helpers/engine.js';
import { DAY, T0 } from '../helpers/emulatorSuite.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const ORG = 'org-verify-lost';
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history'];
const SECOND = 1000;
const LEASE_MS = 2 * SECOND;
const RETRY_BACKOFF_MS = 60 * SECOND;

/** The default policy, and verify units too: a verify marks only what it confirmed under its lease. */
const verifyRetried: RetryEligibility = (f) =>
  linearBackfillEligibility(f) ||
  (f.mode === 'verify' && f.declaredSurfaces.every((s) => f.retrySafeSurfaces.includes(s)));

interface Setup {
  t: TestDatabase;
  emu: JiraEmulator;
  engine: Engine;
  clock: ManualClock;
  broker: HarnessBroker;
  inflight: Set<Promise<unknown>>;
}

let s: Setup | undefined;
/** A parked listing request, released when the test ends (whatever it asserted). */
let parked: Hold | undefined;

afterEach(async () => {
  parked?.release();
  parked = undefined;
  if (!s) return;
  await Promise.race([Promise.allSettled([...s.inflight]), new Promise((r) => setTimeout(r, 10_000).unref())]);
  await s.engine.close();
  await s.broker.close();
  await s.emu.close();
  await s.t.drop();
  s = undefined;
});

/**
 * The engine on its own database with the Jira provider reading the emulator through `fetch`; no
 * worker or reconciler loop runs.
 */
async function open(fetchVia: typeof fetch): Promise<Setup> {
  const t = await createTestDatabase();
  const clock = new ManualClock(T0);
  const emu = await startJiraEmulator({
    seed: 21,
    searchLagMs: 0,
    scale: { projects: 1, issues: 260, longLists: 0, days: 20 },
    clock,
    now: new Date(T0),
  });
  const provider = createJiraProvider({
    retry: { baseDelayMs: 1, maxDelayMs: 2 },
    budget: { probePollMs: 20, reserve: 0 },
    fetch: fetchVia,
  });
  const broker = new HarnessBroker(clock, null);
  const engine = await Engine.open({
    settings: testSettings({
      secretKey: SecretKey.generate(),
      unitsPerMessage: 1,
      leaseMs: LEASE_MS,
      expiredLeaseRetryBackoffMs: RETRY_BACKOFF_MS,
      expiredLeaseMaxRetries: 1,
    }),
    db: t.db,
    broker,
    clock,
    registry: new ProviderRegistry().register(provider, normalizedSink(t.db)),
    retryEligibility: verifyRetried,
    logger: silentLogger(),
    faults: new Faults(),
    migrate: false,
  });
  engine.ctx.random = () => 0;
  return { t, emu, engine, clock, broker, inflight: new Set() };
}

/** Runs the task a message names, as a worker would. */
function deliver(msg: TaskMessage): Promise<unknown> {
  const ctx: EngineContext = s!.engine.ctx;
  const work = (async () => {
    const { runId } = msg.payload;
    switch (msg.name) {
      case 'dispatch_sync_run':
        return dispatchSyncRun(ctx, runId);
      case 'run_sync_unit': {
        const outcome = await runUnitMessage(ctx, msg.payload);
        await ctx.unitEnds.settle();
        return outcome;
      }
      case 'finalize_sync_run':
        return finalizeSyncRun(ctx, runId);
      case 'post_sync':
        return postSync(ctx, runId);
    }
  })();
  s!.inflight.add(work);
  void work.then(
    () => s?.inflight.delete(work),
    () => s?.inflight.delete(work),
  );
  return work;
}

const pass = () => reconcilePass(s!.engine.ctx, 'verify-reconciler');

/** Drives the run to its end: deliver what the broker holds, pass, and jump the clock to what is due next. */
async function settle(runId: string): Promise<RunRow> {
  for (let i = 0; i < 100; i++) {
    let delivered = 0;
    for (let batch = await s!.broker.take(); batch.length > 0; batch = await s!.broker.take()) {
      for (const m of batch) await deliver(m);
      delivered += batch.length;
    }
    const c = await pass();
    const moved =
      delivered +
      c.expired_units +
      c.materialized_dispatch +
      c.materialized_finalize +
      c.materialized_post_sync +
      c.relayed_dispatch +
      c.relayed_finalize +
      c.relayed_post_sync;
    if (moved > 0) continue;
    const run = (await query<RunRow>('sync_runs', 'id', runId))[0]!;
    const due = await nextDueAt(s!.t.db);
    if (!due) {
      if (['success', 'partial_failed', 'failed', 'cancelled'].includes(run.status)) return run;
      throw new Error(`run ${runId} is ${run.status} and nothing is due`);
    }
    if (due > s!.clock.now()) s!.clock.set(due);
  }
  throw new Error(`run ${runId} did not settle`);
}

async function query<T>(table: 'sync_runs' | 'sync_run_units', column: string, id: string): Promise<T[]> {
  const { rows } = await s!.t.db.query<T>(`SELECT * FROM ${s!.t.db.schema[table]} WHERE ${column} = $1`, [id]);
  return rows;
}

/** External ids of the stored issues marked deleted. */
async function marked(): Promise<string[]> {
  const { rows } = await s!.t.db.query<{ external_id: string }>(
    `SELECT external_id FROM ${s!.t.db.schema.table('work_items')} WHERE deleted_at IS NOT NULL ORDER BY 1`,
  );
  return rows.map((r) => r.external_id);
}

const hrefOf = (url: string | URL | Request) => (url instanceof Request ? url.url : url.toString());

describe('a verify whose worker is lost mid-listing', () => {
  const lost =
    'marks nothing; the unit, retried under a fresh lease, ends the run with exactly the deleted issue marked';
  it(lost, async () => {
    // While `hold` is set, the listing's second search request parks there, whatever its abort
    // signal says: the worker no longer runs. Once released, and while `deaf`, its requests go out
    // without their abort signal: a worker that never hears of its lease loss, held only by the fence.
    let hold: Hold | null = null;
    let deaf = false;
    let searches = 0;
    const parking: typeof fetch = async (url, init) => {
      if (hold && hrefOf(url).includes('/search/jql') && ++searches === 2) {
        const h = hold;
        hold = null;
        await h.wait('parked', new AbortController().signal, false);
      }
      return fetch(url, deaf ? { ...init, signal: null } : init);
    };
    s = await open(parking);
    const { engine, emu, clock } = s;
    const { id } = await engine.createIntegration({
      orgId: ORG,
      provider: 'jira',
      name: 'acme-jira',
      sources: ['ENG'],
      datasets: FAMILY,
      config: { siteUrl: emu.url },
      credential: emu.token,
    });
    const backfill = await engine.trigger({
      orgId: ORG,
      integrationId: id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: new Date(T0 - 400 * DAY),
      before: new Date(T0),
    });
    expect((await settle(backfill.syncRunId)).status).toBe('success');
    const issues = emu.data.projects[0]!.issues;
    const { rows: stored } = await s.t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${s.t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [id],
    );
    expect(stored[0]!.n).toBe(issues.length);
    expect(issues.length).toBeGreaterThan(200); // three listing pages

    const gone = issues[10]!;
    const goneComments = gone.comments.length;
    emu.deleteIssue(gone.id);
    const liveComments = issues.reduce((n, i) => n + i.comments.length, 0);
    clock.advance(10 * 60 * SECOND);
    const run = await engine.trigger({ orgId: ORG, integrationId: id, mode: 'verify', triggeredBy: 'api' });
    await pass();
    for (const m of await s.broker.take()) await deliver(m); // dispatch_sync_run
    const [msg, ...others] = await s.broker.take();
    expect(msg!.name).toBe('run_sync_unit');
    expect(others).toEqual([]);
    const unitId = msg!.payload.unitId!;

    // The unit's worker parks at the listing's second page (the first page compared and stamped).
    const h = new Hold();
    hold = h;
    parked = h;
    const dying = deliver(msg!);
    await within(h.reached, 10_000, 'the listing reaching its second page');
    const [running] = await query<UnitRow>('sync_run_units', 'id', unitId);
    expect(running).toMatchObject({ status: 'running', mode: 'verify', attempts: 1 });
    const owner = running!.lease_owner;
    expect(await marked()).toEqual([]);

    // The clock passes the lease end: the reconciler takes the unit away and it waits to be retried.
    clock.advance(LEASE_MS + 1);
    expect(await pass()).toMatchObject({ expired_units: 1, expired_retry_units: 1 });
    expect((await query<UnitRow>('sync_run_units', 'id', unitId))[0]).toMatchObject({
      status: 'retrying',
      lease_owner: null,
      last_retry_reason: 'expired_lease',
    });
    expect(await marked()).toEqual([]);
    // The lost worker wakes up and goes on: its first write is refused (its lease is gone), it marks nothing.
    const calls = emu.requestLog.length;
    deaf = true;
    h.release();
    expect(await within(dying, 10_000, 'the lost worker')).toBe('lease_lost');
    deaf = false;
    expect(emu.requestLog.slice(calls).map((l) => [l.path.split('?')[0], l.status])).toEqual([
      ['/rest/api/3/search/jql', 200],
    ]);
    expect(await marked()).toEqual([]);

    // After the backoff the unit runs again under a fresh lease, from the start of its listing.
    const ended = await settle(run.syncRunId);
    expect(ended).toMatchObject({ status: 'success', completed_units: 1, failed_units: 0 });
    const [done] = await query<UnitRow>('sync_run_units', 'id', unitId);
    expect(done).toMatchObject({ status: 'success', attempts: 2, expired_lease_retry_count: 1 });
    expect(done!.lease_owner).not.toBe(owner);
    expect(done!.result).toMatchObject({
      // The issues listed, then their comments confirmed; the deleted issue marked, and its comments.
      verify: { checked: issues.length + liveComments, missing: 0, stale: 0, restored: 0, deleted: 1 + goneComments },
    });
    expect(await marked()).toEqual([gone.id]);
  });
});
