/**
 * Crash windows 3, 4, 8 and 9 (SPEC §11) and the finalize "hot row" race (SPEC §5): finalize and
 * post_sync lost, failed, crashed or delivered twice — asserted from the run, the once-only ledger,
 * the outbox, the receipts and the metrics roll-up's `computed_at` generations.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskMessage } from '../../src/broker/types.js';
import { InjectedFault } from '../../src/errors.js';
import { METRICS_ROLLUP } from '../../src/providers/synthetic.js';
import type { Db } from '../../src/db/types.js';
import { finalizeSyncRun } from '../../src/tasks/finalizeSyncRun.js';
import type { DispatchOutcome } from '../../src/tasks/dispatchSyncRun.js';
import { runSyncUnit } from '../../src/tasks/runSyncUnit.js';
import { LEDGER_SLICE_BATCHES } from '../../src/reconciler/materialize.js';
import { RowLocks, sqlTable } from './gate.js';
import { Harness, SECOND } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Plans a 2-unit backfill and runs both units to success; the finalize row is then pending. */
async function runUnitsToSuccess(h: Harness): Promise<string> {
  const integ = await h.integration();
  const { syncRunId } = await h.backfill(integ, 14);
  expect((await h.pass()).relayed_dispatch).toBe(1);
  const [dispatch] = await h.take();
  await h.deliver(dispatch!);
  for (const m of await h.take()) expect(await h.deliver(m)).toBe('success');
  expect((await h.outbox(syncRunId, 'finalize_sync_run'))!.status).toBe('pending');
  expect((await h.run(syncRunId))!.status).toBe('dispatching');
  return syncRunId;
}

/** Relays what is due and returns the messages it published. */
async function relayAndTake(h: Harness, name?: TaskMessage['name']): Promise<TaskMessage[]> {
  await h.pass();
  return h.take(name);
}

function outcomes(h: Harness, name: TaskMessage['name'], runId: string): unknown[] {
  return h.deliveries.filter((d) => d.name === name && d.runId === runId).map((d) => d.outcome);
}

describe('window 3: unit finishes, finalize publish lost', () => {
  it('a failed and then a lost finalize publish: the relay finalizes, post_sync is relayed exactly once', async () => {
    h = await Harness.open();
    const runId = await runUnitsToSuccess(h);

    // 1st: the broker refuses the publish → pending with backoff.
    h.broker.failNext(1);
    expect((await h.pass()).publish_failures).toBe(1);
    expect((await h.outbox(runId, 'finalize_sync_run'))!).toMatchObject({ status: 'pending', attempts: 1 });
    // 2nd (after the backoff): accepted, marked dispatched — and lost.
    h.advance(60 * SECOND);
    h.broker.loseNext(1);
    expect((await h.pass()).relayed_finalize).toBe(1);
    expect((await h.outbox(runId, 'finalize_sync_run'))!.status).toBe('dispatched');
    expect(await h.take()).toEqual([]);
    expect((await h.run(runId))!.status).toBe('dispatching');

    // The reconciler sees a live run with no open unit and no pending finalize row.
    const c = await h.pass();
    expect(c.materialized_finalize).toBe(1);
    expect(c.relayed_finalize).toBe(1);
    const [fin] = await h.take();
    expect(fin!.name).toBe('finalize_sync_run');
    expect(await h.deliver(fin!)).toBe('finalized');
    const run = (await h.run(runId))!;
    expect(run).toMatchObject({ status: 'success', total_units: 2, completed_units: 2, failed_units: 0 });
    expect((await h.jobRun(runId)).status).toBe('success');
    expect(await h.ledger(runId)).toEqual([{ kind: 'post_sync' }]);

    // post_sync is relayed once; later passes (and a re-delivered finalize) never arm it again.
    const [ps] = await relayAndTake(h);
    expect(ps!.name).toBe('post_sync');
    expect(await h.deliver(ps!)).toMatchObject({ delivered: [METRICS_ROLLUP] });
    expect(await h.deliver(fin!)).toBe('already_final');
    let relayedPostSync = 0;
    for (let i = 0; i < 5; i++) {
      h.advance(3600 * SECOND);
      const p = await h.pass();
      relayedPostSync += p.relayed_post_sync + p.materialized_post_sync;
    }
    expect(relayedPostSync).toBe(0);
    expect(await h.take()).toEqual([]);
    expect(await h.ledger(runId)).toHaveLength(1);
    expect(await h.outboxCount(runId)).toEqual({ dispatch_sync_run: 1, finalize_sync_run: 1, post_sync: 1 });
    expect((await h.outbox(runId, 'post_sync'))!).toMatchObject({ status: 'dispatched', attempts: 1 });
    expect(h.broker.published('post_sync')).toHaveLength(1);
    expect(await h.receipts(runId)).toEqual([{ handler: METRICS_ROLLUP, delivery: 'at-most-once' }]);
    expect(await h.metricGenerations(runId)).toBe(1);
  });

  const finalizeCrashes =
    'finalize crashes before its commit: nothing of it persists and the materializer finalizes the run once';
  it(finalizeCrashes, async () => {
    h = await Harness.open();
    const runId = await runUnitsToSuccess(h);
    const [fin] = await relayAndTake(h);
    h.faults.arm('finalize.beforeCommit', 'throw');
    await expect(h.deliver(fin!)).rejects.toBeInstanceOf(InjectedFault);
    expect((await h.run(runId))!.status).toBe('dispatching');
    expect(await h.ledger(runId)).toEqual([]);
    expect(await h.outbox(runId, 'post_sync')).toBeNull();
    expect((await h.jobRun(runId)).status).toBe('running');

    const run = await h.settle(runId);
    expect(run.status).toBe('success');
    expect(outcomes(h, 'finalize_sync_run', runId)).toEqual(['finalized']);
    expect(await h.ledger(runId)).toHaveLength(1);
    expect(await h.receipts(runId)).toHaveLength(1);
    expect(await h.metricGenerations(runId)).toBe(1);
  });
});

describe('window 4: post_sync publish fails', () => {
  const atMostOnceDefault =
    'at-most-once (default): the row is dispatched before the publish and never re-armed; the handler never runs';
  it(atMostOnceDefault, async () => {
    h = await Harness.open();
    const runId = await runUnitsToSuccess(h);
    const [fin] = await relayAndTake(h);
    expect(await h.deliver(fin!)).toBe('finalized');

    h.broker.failNext(1);
    const c = await h.pass();
    expect(c.publish_failures).toBe(1);
    expect(c.relayed_post_sync).toBe(0);
    const row = (await h.outbox(runId, 'post_sync'))!;
    expect(row).toMatchObject({ status: 'dispatched', attempts: 1, claim_token: null });
    expect(row.dispatched_at).not.toBeNull();

    for (let i = 0; i < 5; i++) {
      h.advance(3600 * SECOND);
      const p = await h.pass();
      expect(p.materialized_post_sync + p.relayed_post_sync + p.publish_failures).toBe(0);
    }
    expect((await h.outbox(runId, 'post_sync'))!).toMatchObject({ status: 'dispatched', attempts: 1 });
    expect(await h.take()).toEqual([]);
    expect(await h.ledger(runId)).toHaveLength(1);
    expect(await h.receipts(runId)).toEqual([]);
    expect(await h.metricGenerations(runId)).toBe(0);
    expect((await h.run(runId))!.status).toBe('success');
  });

  const atMostOnceLoses =
    'at-most-once: a relay crash between mark and publish, or a handler crash after its receipt, ' +
    'loses the delivery — never doubles it';
  it(atMostOnceLoses, async () => {
    h = await Harness.open();
    const runId = await runUnitsToSuccess(h);
    const [fin] = await relayAndTake(h);
    await h.deliver(fin!);

    h.faults.arm('relay.postSync.afterMark.beforePublish', 'throw');
    await expect(h.pass()).rejects.toBeInstanceOf(InjectedFault);
    expect((await h.outbox(runId, 'post_sync'))!.status).toBe('dispatched');
    h.advance(3600 * SECOND);
    expect((await h.pass()).relayed_post_sync).toBe(0);
    expect(await h.take()).toEqual([]);

    // Had the message gone out, a worker crash after the receipt loses it; a redelivery does nothing.
    const msg: TaskMessage = { name: 'post_sync', payload: { orgId: 'org-crash', runId }, jobId: 'redelivered' };
    h.faults.arm('postSync.afterReceipt.beforeHandler', 'throw');
    // (the crash surfaces as a failed handler: logged, never retried in this mode)
    expect(await h.deliver(msg)).toMatchObject({ delivered: [], failed: [METRICS_ROLLUP] });
    expect(await h.deliver(msg)).toMatchObject({ delivered: [], duplicates: [METRICS_ROLLUP] });
    expect(await h.receipts(runId)).toHaveLength(1);
    expect(await h.metricGenerations(runId)).toBe(0);
    expect((await h.run(runId))!.status).toBe('success');
  });

  it('exactly-once: after a failed publish and a lost message the handler runs exactly once', async () => {
    h = await Harness.open({ settings: { postSyncDelivery: 'exactly-once', claimTimeoutMs: 300 * SECOND } });
    const runId = await runUnitsToSuccess(h);
    const [fin] = await relayAndTake(h);
    expect(await h.deliver(fin!)).toBe('finalized');

    // A failed publish: re-armed with the outbox backoff (not dispatched).
    h.broker.failNext(1);
    expect((await h.pass()).publish_failures).toBe(1);
    let row = (await h.outbox(runId, 'post_sync'))!;
    expect(row).toMatchObject({ status: 'pending', attempts: 1, claim_token: null });
    expect(row.last_error).toContain('injected publish failure');
    expect(row.available_at.getTime()).toBe(h.now().getTime() + 60 * SECOND);

    // Published after the backoff, but the message is lost: the row waits for the task's ack.
    h.advance(60 * SECOND);
    h.broker.loseNext(1);
    expect((await h.pass()).relayed_post_sync).toBe(1);
    row = (await h.outbox(runId, 'post_sync'))!;
    expect(row).toMatchObject({ status: 'pending', attempts: 2, claim_token: null, last_error: null });
    expect(row.available_at.getTime()).toBe(h.now().getTime() + 300 * SECOND);
    h.advance(299 * SECOND);
    expect((await h.pass()).relayed_post_sync).toBe(0);

    // Not acknowledged in time: published again, delivered, acknowledged.
    h.advance(1 * SECOND);
    const [ps] = await relayAndTake(h);
    expect(ps!.name).toBe('post_sync');
    expect(await h.deliver(ps!)).toMatchObject({ delivered: [METRICS_ROLLUP] });
    expect((await h.outbox(runId, 'post_sync'))!).toMatchObject({ status: 'dispatched', attempts: 3 });
    // A duplicate of the message finds the receipt.
    expect(await h.deliver(ps!)).toMatchObject({ delivered: [], duplicates: [METRICS_ROLLUP] });
    for (let i = 0; i < 3; i++) {
      h.advance(3600 * SECOND);
      expect((await h.pass()).relayed_post_sync).toBe(0);
    }
    expect(await h.receipts(runId)).toEqual([{ handler: METRICS_ROLLUP, delivery: 'exactly-once' }]);
    expect(await h.metricGenerations(runId)).toBe(1);
    expect(await h.ledger(runId)).toHaveLength(1);
    expect((await h.run(runId))!.status).toBe('success');
  });

  const exactlyOnceRedelivered =
    'exactly-once: a crash after the handler committed but before the ack is redelivered and finds its receipt';
  it(exactlyOnceRedelivered, async () => {
    h = await Harness.open({ settings: { postSyncDelivery: 'exactly-once', claimTimeoutMs: 300 * SECOND } });
    const runId = await runUnitsToSuccess(h);
    const [fin] = await relayAndTake(h);
    await h.deliver(fin!);
    const [ps] = await relayAndTake(h);
    h.faults.arm('postSync.afterHandlers.beforeAck', 'throw');
    await expect(h.deliver(ps!)).rejects.toBeInstanceOf(InjectedFault);
    expect(await h.metricGenerations(runId)).toBe(1);
    expect((await h.outbox(runId, 'post_sync'))!.status).toBe('pending');

    h.advance(300 * SECOND);
    const [again] = await relayAndTake(h);
    expect(again!.jobId).not.toBe(ps!.jobId);
    expect(await h.deliver(again!)).toMatchObject({ delivered: [], duplicates: [METRICS_ROLLUP] });
    expect((await h.outbox(runId, 'post_sync'))!.status).toBe('dispatched');
    expect(await h.receipts(runId)).toHaveLength(1);
    expect(await h.metricGenerations(runId)).toBe(1);
    expect((await h.run(runId))!.status).toBe('success');
  });
});

describe('window 8: duplicate deliveries', () => {
  const deliveredTwice =
    'dispatch, run_sync_unit and finalize delivered twice (at once and later): ' +
    'no double claim, no double finalize, one post_sync';
  it(deliveredTwice, async () => {
    h = await Harness.open();
    const integ = await h.integration();
    const { syncRunId: runId } = await h.backfill(integ, 14);
    const [dispatch] = await relayAndTake(h);

    const d = await Promise.all([h.deliver(dispatch!), h.deliver(dispatch!)]);
    // One dispatched both units; the other found nothing left, or found the run held by the first
    // and re-armed its dispatch for later (BUSY_RETRY_MS; the injected clock never reaches it here).
    const seen = (d as DispatchOutcome[]).map((o) => ('units' in o ? o.units : 'reason' in o ? o.reason : o.kind));
    expect(seen).toContain(2);
    expect([0, 'busy']).toContain(seen.find((x) => x !== 2));
    expect(await h.deliver(dispatch!)).toMatchObject({ units: 0 });
    const unitMsgs = await h.take();
    expect(unitMsgs).toHaveLength(2); // one run_sync_unit per unit, not per dispatch delivery

    for (const m of unitMsgs) {
      const both = await Promise.all([h.deliver(m), h.deliver(m)]);
      expect(both.sort()).toEqual(['not_dispatchable', 'success']);
      expect(await h.deliver(m)).toBe('not_dispatchable');
    }
    for (const u of await h.units(runId)) {
      expect(u).toMatchObject({ status: 'success', attempts: 1 });
      expect(await h.executions(u.id)).toHaveLength(1);
    }

    const [fin] = await relayAndTake(h);
    const f = await Promise.all([h.deliver(fin!), h.deliver(fin!), finalizeSyncRun(h.ctx, runId)]);
    expect(f.sort()).toEqual(['already_final', 'already_final', 'finalized']);
    expect(await h.deliver(fin!)).toBe('already_final');
    expect(await h.ledger(runId)).toHaveLength(1);
    expect(await h.outboxCount(runId)).toEqual({ dispatch_sync_run: 1, finalize_sync_run: 1, post_sync: 1 });

    const [ps] = await relayAndTake(h);
    const p = await Promise.all([h.deliver(ps!), h.deliver(ps!)]);
    expect(p.map((o) => (o as { delivered: string[] }).delivered.length).sort()).toEqual([0, 1]);
    expect(await h.receipts(runId)).toHaveLength(1);
    expect(await h.metricGenerations(runId)).toBe(1);
    const run = (await h.run(runId))!;
    expect(run).toMatchObject({ status: 'success', total_units: 2, completed_units: 2 });
    expect(await h.take()).toEqual([]);
  });
});

describe('window 9: zero-unit run', () => {
  it('a run that plans no unit is finalized failed ("no sync units planned")', async () => {
    h = await Harness.open();
    const integ = await h.integration({ sources: [], datasets: ['work-items'] });
    const { syncRunId: runId, units } = await h.backfill(integ, 14);
    expect(units).toBe(0);
    const run = await h.settle(runId);
    expect(run).toMatchObject({
      status: 'failed',
      error: 'no sync units planned',
      total_units: 0,
      completed_units: 0,
      failed_units: 0,
    });
    expect(run.completed_at).not.toBeNull();
    const job = await h.jobRun(runId);
    expect(job.status).toBe('failed');
    expect(outcomes(h, 'finalize_sync_run', runId).filter((o) => o === 'finalized')).toHaveLength(1);
    // post_sync has nothing to publish: no successful unit.
    expect(await h.ledger(runId)).toHaveLength(1);
    expect(outcomes(h, 'post_sync', runId)).toEqual([expect.objectContaining({ nothingToPublish: true })]);
    expect(await h.receipts(runId)).toEqual([]);
  });

  it('even when every message of a zero-unit run is lost, the reconciler finalizes it', async () => {
    h = await Harness.open();
    const integ = await h.integration({ sources: [], datasets: ['work-items'] });
    const { syncRunId: runId } = await h.backfill(integ, 14);
    h.broker.loseNext(1);
    const c = await h.pass();
    expect(c.relayed_dispatch + c.relayed_finalize).toBeGreaterThanOrEqual(1);
    expect(await h.take()).toEqual([]);
    expect((await h.run(runId))!.status).toBe('planned');
    const run = await h.settle(runId);
    expect(run).toMatchObject({ status: 'failed', error: 'no sync units planned' });
    expect((await h.jobRun(runId)).status).toBe('failed');
  });
});

/** Resolves for everybody once `n` callers have arrived. */
/** Resolves once `ready()` holds, checked on every turn of the event loop (bounded). */
async function waitUntil(ready: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`not ready within ${ms} ms`);
    await new Promise((r) => setImmediate(r));
  }
}

function barrier(n: number, whenAllArrived?: () => Promise<void>): () => Promise<void> {
  let arrived = 0;
  let open!: () => void;
  const all = new Promise<void>((r) => (open = r));
  return async () => {
    if (++arrived === n) {
      await whenAllArrived?.();
      open();
    }
    await all;
  };
}

describe('the finalize hot row: two last units finishing together', () => {
  async function twoDispatchedUnits(h: Harness): Promise<{ runId: string; a: TaskMessage; b: TaskMessage }> {
    const integ = await h.integration();
    const { syncRunId: runId } = await h.backfill(integ, 14);
    const [dispatch] = await relayAndTake(h);
    await h.deliver(dispatch!);
    const [a, b] = await h.take();
    return { runId, a: a!, b: b! };
  }

  async function expectFinalizedOnce(h: Harness, runId: string): Promise<void> {
    const run = await h.settle(runId);
    expect(run).toMatchObject({ status: 'success', completed_units: 2 });
    expect(outcomes(h, 'finalize_sync_run', runId).filter((o) => o === 'finalized')).toHaveLength(1);
    expect(h.broker.published('finalize_sync_run')).toHaveLength(1);
    expect(await h.outboxCount(runId)).toMatchObject({ finalize_sync_run: 1, post_sync: 1 });
    expect(await h.ledger(runId)).toHaveLength(1);
    expect(await h.metricGenerations(runId)).toBe(1);
  }

  it('the later unit arms finalize in its own transaction; the earlier one’s re-check finds it armed', async () => {
    h = await Harness.open();
    const { runId, a, b } = await twoDispatchedUnits(h);
    let armedByB: unknown = 'not checked';
    // A has committed (it saw B open, so it armed nothing); B finishes before A re-checks.
    h.faults.arm('unit.afterComplete.beforeRecheck', async () => {
      expect(await h!.outbox(runId, 'finalize_sync_run')).toBeNull();
      expect(await h!.deliver(b)).toBe('success');
      armedByB = (await h!.outbox(runId, 'finalize_sync_run'))?.status;
    });
    expect(await h.deliver(a)).toBe('success');
    expect(armedByB).toBe('pending');
    await expectFinalizedOnce(h, runId);
  });

  /**
   * Both units past their providers, then both end statements sent while the test holds the two
   * unit rows: each statement takes its snapshot and waits; released together, neither sees the
   * other's end (the production path: one end statement per worker, no fault point inside it).
   */
  async function endTogether(h: Harness, a: TaskMessage, b: TaskMessage) {
    let locks: RowLocks | undefined;
    const ids = [a.payload.unitId!, b.payload.unitId!];
    h.faults.arm(
      'unit.beforeComplete',
      barrier(2, async () => {
        locks = await RowLocks.take(h.t.url, h.db.schema.sync_run_units, ids);
      }),
      2,
    );
    // Two workers (two engine contexts): one worker's concurrent ends would share one statement.
    const ends = Promise.allSettled([h.deliver(a), h.deliver(b, h.worker())]);
    await waitUntil(() => locks !== undefined);
    await locks!.untilWaiting(2);
    await locks!.release();
    return ends;
  }

  it('both commit at once, each seeing the other open: the re-checks arm finalize, and it runs once', async () => {
    h = await Harness.open();
    const { runId, a, b } = await twoDispatchedUnits(h);
    // Both have committed and neither has re-checked yet: nothing armed finalize in its statement.
    let armedInTx: unknown = 'not checked';
    const afterCommit = barrier(2, async () => {
      armedInTx = (await h!.outbox(runId, 'finalize_sync_run'))?.status ?? null;
    });
    h.faults.arm('unit.afterComplete.beforeRecheck', afterCommit, 2);
    const ends = await endTogether(h, a, b);
    expect(ends.map((e) => (e.status === 'fulfilled' ? e.value : e.reason)).sort()).toEqual(['success', 'success']);
    expect(armedInTx).toBeNull();
    expect((await h.outbox(runId, 'finalize_sync_run'))!.status).toBe('pending'); // the re-check armed it
    await expectFinalizedOnce(h, runId);
  });

  it('a unit’s task returns before its re-check is made; a graceful stop (UnitEnds.settle) waits for it', async () => {
    h = await Harness.open();
    const { runId, a, b } = await twoDispatchedUnits(h);
    // The re-check's read is held at the database until the test lets it through.
    let reached!: () => void;
    const reachedRead = new Promise<void>((r) => (reached = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const inner = h.db;
    const recheckRead = new RegExp(`NOT EXISTS \\(SELECT 1 FROM ${sqlTable('sync_run_units')}`);
    const held: Db = {
      kind: inner.kind,
      schema: inner.schema,
      query: async (text, values) => {
        if (recheckRead.test(text)) {
          reached();
          await released;
        }
        return inner.query(text, values);
      },
      exec: (script) => inner.exec(script),
      transaction: (fn) => inner.transaction(fn),
      listen: (channel, onNotify) => inner.listen(channel, onNotify),
      close: () => Promise.resolve(),
    };
    const ctx = h.worker({ db: held });
    expect(await runSyncUnit(ctx, a.payload.unitId!)).toBe('success'); // B was open: a re-check is due
    await reachedRead;
    let settled = false;
    const settling = ctx.unitEnds.settle().then(() => (settled = true));
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(settled).toBe(false);
    release();
    await settling;
    expect(settled).toBe(true);
    expect(await h.deliver(b)).toBe('success');
    await expectFinalizedOnce(h, runId);
  });

  it('both crash between commit and re-check: the materializer’s finalizable scan arms finalize', async () => {
    h = await Harness.open();
    const { runId, a, b } = await twoDispatchedUnits(h);
    h.faults.arm('unit.afterComplete.beforeRecheck', 'throw', 2);
    const ends = await endTogether(h, a, b);
    expect(ends.map((e) => e.status)).toEqual(['rejected', 'rejected']);
    expect((await h.units(runId)).map((u) => u.status)).toEqual(['success', 'success']);
    expect(await h.outbox(runId, 'finalize_sync_run')).toBeNull();
    expect((await h.run(runId))!.status).toBe('dispatching');
    const c = await h.pass();
    expect(c.materialized_finalize).toBe(1);
    expect(c.relayed_finalize).toBe(1);
    await expectFinalizedOnce(h, runId);
  });
});

describe('the ledger repair scan: a ledger row whose post_sync outbox row is gone', () => {
  /** Terminal runs with a ledger row each, `minutesAgo` apart; returns their ids, newest first. */
  async function finishedRuns(h: Harness, minutesAgo: number[]): Promise<string[]> {
    const integ = await h.integration();
    const ids: string[] = [];
    for (const m of minutesAgo) {
      const at = new Date(h.now().getTime() - m * 60 * SECOND);
      const { rows } = await h.db.query<{ id: string }>(
        `INSERT INTO syncrelay.sync_runs (org_id, integration_id, triggered_by, mode, status, completed_at, created_at,
                                        updated_at)
         VALUES ($1, $2, 'api', 'backfill', 'success', $3, $3, $3) RETURNING id`,
        [integ.orgId, integ.id, at],
      );
      await h.db.query(
        `INSERT INTO syncrelay.sync_run_post_dispatches (org_id, sync_run_id, kind, dispatched_at)
         VALUES ($1, $2, 'post_sync', $3)`,
        [integ.orgId, rows[0]!.id, at],
      );
      ids.push(rows[0]!.id);
    }
    return ids;
  }

  const boundedScan =
    'is re-armed once; the scan reads a bounded slice per pass, ' +
    'goes on from where it stopped, and skips the day before';
  it(boundedScan, async () => {
    const batch = 2;
    h = await Harness.open({ settings: { reconcileBatch: batch } });
    const examined = batch * LEDGER_SLICE_BATCHES;
    // More ledger rows than one slice holds, then one older than the scan's one-day window.
    const recent = await finishedRuns(
      h,
      Array.from({ length: examined + 1 }, (_, i) => i + 1),
    );
    const [old] = await finishedRuns(h, [25 * 60]);
    // One recent row keeps its outbox row: nothing to repair there.
    const kept = recent[1]!;
    await h.db.query(
      `INSERT INTO syncrelay.sync_dispatch_outbox (org_id, sync_run_id, kind, status, available_at, dispatched_at)
       SELECT org_id, sync_run_id, kind, 'dispatched', dispatched_at, dispatched_at
         FROM syncrelay.sync_run_post_dispatches WHERE sync_run_id = $1`,
      [kept],
    );

    const postSyncRows = async () =>
      (
        await h!.db.query<{ sync_run_id: string }>(
          `SELECT sync_run_id FROM syncrelay.sync_dispatch_outbox WHERE kind = 'post_sync'`,
        )
      ).rows.map((r) => r.sync_run_id);
    const missing = recent.filter((id) => id !== kept);
    const armed: string[][] = [];
    while (armed.flat().length < missing.length && armed.length < 10) {
      const before = new Set(await postSyncRows());
      const c = await h.pass();
      armed.push((await postSyncRows()).filter((id) => !before.has(id)));
      expect(c.materialized_post_sync).toBe(armed.at(-1)!.length);
      expect(c.materialized_post_sync).toBeLessThanOrEqual(batch);
    }
    // The first pass repairs the missing rows among the newest it examines; every missing row is
    // repaired once, within the passes a bounded slice per pass needs; the row older than a day never is.
    const firstSlice = recent.slice(0, examined).filter((id) => id !== kept);
    expect(armed[0]!.sort()).toEqual(firstSlice.slice(0, batch).sort());
    expect(armed.flat().sort()).toEqual([...missing].sort());
    expect(armed.length).toBeGreaterThanOrEqual(Math.ceil(missing.length / batch));
    expect(await h.pass()).toMatchObject({ materialized_post_sync: 0 });
    expect(await h.outbox(old!, 'post_sync')).toBeNull();
    // Each repaired row is relayed once (post_sync, at most once).
    expect(
      h.broker
        .published('post_sync')
        .map((m) => m.payload.runId)
        .sort(),
    ).toEqual([...missing].sort());
  });
});
