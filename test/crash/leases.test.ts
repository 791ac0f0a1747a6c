/**
 * Crash windows 5, 10, 11 and 12 (SPEC §11) and cancellation mid-run: what happens to a unit whose
 * worker dies, whose dispatch goes stale, whose lease is taken over or that is rate limited.
 * A worker "dies" by parking its provider at an exact sink write (a ScriptedProvider hold); its lease
 * then runs out because the ManualClock jumps past it — the reconciler, not a sleep, takes it away.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskMessage } from '../../src/broker/types.js';
import { InjectedFault } from '../../src/errors.js';
import { dispatchSyncRun, FIRST_SLICE } from '../../src/tasks/dispatchSyncRun.js';
import { runSyncUnit } from '../../src/tasks/runSyncUnit.js';
import type { UnitRow } from '../../src/store/rows.js';
import { CHUNK_ROWS, Harness, SECOND, T0, within, type NewTestIntegration } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const LINEAR = { impersonate: 'linear', itemsPerDay: 80 };

/** Relays the dispatch row, delivers dispatch_sync_run and returns the run_sync_unit messages by unit id. */
async function dispatchUnits(h: Harness): Promise<Map<string, TaskMessage>> {
  await h.pass();
  for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
  const msgs = await h.take('run_sync_unit');
  return new Map(msgs.map((m) => [m.payload.unitId!, m]));
}

/**
 * Starts the unit's delivery with its next attempt parked after its first sink write; resolves once
 * parked. `abortable`: the parked provider ends when its lease is lost (its heartbeat CAS fails);
 * otherwise it stays parked — a dead worker — until `thaw()` lets it try its next write.
 */
async function dieMidUnit(
  h: Harness,
  msg: TaskMessage,
  abortable = false,
): Promise<{ done: Promise<unknown>; owner: string; thaw: () => Promise<unknown> }> {
  const hold = h.provider.holdAtWrite(msg.payload.unitId!, 1, { abortable });
  const done = h.deliver(msg);
  await within(hold.reached, 5000, 'the unit reaching its hold');
  return {
    done,
    owner: hold.owner!,
    thaw: () => {
      hold.release();
      return within(done, 5000, 'the thawed worker');
    },
  };
}

async function outboxDueAt(h: Harness, runId: string): Promise<number | null> {
  const row = await h.outbox(runId, 'dispatch_sync_run');
  return row?.status === 'pending' ? row.available_at.getTime() : null;
}

describe('window 5: worker dies mid-unit', () => {
  const settings = { leaseMs: 2 * SECOND, expiredLeaseRetryBackoffMs: 60 * SECOND, expiredLeaseMaxRetries: 1 };

  const eligibleRetried =
    'an eligible Linear backfill unit goes retrying, is re-driven with a fresh lease after the backoff and succeeds';
  it(eligibleRetried, async () => {
    h = await Harness.open({ settings });
    const integ = await h.integration({ config: LINEAR });
    const { syncRunId: runId } = await h.backfill(integ, 28); // two 14-day Linear windows
    const msgs = await dispatchUnits(h);
    const [a, b] = await h.units(runId);
    expect(a!.provider).toBe('linear');

    const dying = await dieMidUnit(h, msgs.get(a!.id)!, true);
    expect(await h.itemsByOwner(a!.id)).toEqual({ [dying.owner]: CHUNK_ROWS });
    expect((await h.unit(a!.id)).lease_expires_at!.getTime()).toBe(T0 + 2 * SECOND);

    // The clock passes the lease end: no heartbeat can extend it any more (its CAS needs
    // lease_expires_at > now) and the reconciler takes the unit away.
    h.advance(2 * SECOND + 1);
    const c = await h.pass();
    expect(c).toMatchObject({ expired_units: 1, expired_retry_units: 1, expired_retry_exhausted_units: 0 });
    const retrying = await h.unit(a!.id);
    expect(retrying).toMatchObject({
      status: 'retrying',
      lease_owner: null,
      lease_expires_at: null,
      expired_lease_retry_count: 1,
      last_retry_reason: 'expired_lease',
      attempts: 1,
    });
    const retryAt = h.now().getTime() + 60 * SECOND;
    expect(retrying.available_at!.getTime()).toBe(retryAt);
    expect(await outboxDueAt(h, runId)).toBe(retryAt);
    // Its own heartbeat CAS now fails: the parked provider is aborted and makes no terminal write.
    expect(await within(dying.done, 5000, 'the lost worker')).toBe('lease_lost');
    expect(await h.executions(a!.id)).toEqual([{ lease_owner: dying.owner, outcome: 'lease_lost' }]);

    // The sibling carries on meanwhile.
    expect(await h.deliver(msgs.get(b!.id)!)).toBe('success');

    // Not before available_at: a claim is refused and dispatch does not pick it.
    h.advance(59 * SECOND);
    expect(await runSyncUnit(h.ctx, a!.id)).toBe('not_dispatchable');
    expect(await dispatchSyncRun(h.ctx, runId)).toMatchObject({ kind: 'dispatched', units: 0 });
    expect((await h.pass()).relayed_dispatch).toBe(0);
    expect((await h.unit(a!.id)).status).toBe('retrying');

    // At available_at the dispatch row comes due and the unit runs again under a fresh lease.
    h.advance(1 * SECOND);
    expect((await h.pass()).relayed_dispatch).toBe(1);
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    const [again] = await h.take('run_sync_unit');
    expect(again!.payload.unitId).toBe(a!.id);
    expect(await h.deliver(again!)).toBe('success');
    const done = await h.unit(a!.id);
    expect(done).toMatchObject({ status: 'success', attempts: 2, expired_lease_retry_count: 1 });
    expect(done.lease_owner).not.toBe(dying.owner);
    // The retry re-wrote every row idempotently: none is left from the lost worker.
    expect(await h.itemsByOwner(a!.id)).toEqual({ [done.lease_owner!]: 14 * 80 });
    expect((await h.executions(a!.id)).map((e) => e.outcome)).toEqual(['lease_lost', 'success']);

    const run = await h.settle(runId);
    expect(run).toMatchObject({ status: 'success', completed_units: 2, failed_units: 0 });
  });

  const retryBudgetSpent =
    'with the retry budget spent, the unit fails worker_lost_retry_exhausted; the run ends partial_failed';
  it(retryBudgetSpent, async () => {
    h = await Harness.open({ settings });
    const integ = await h.integration({ config: LINEAR });
    const { syncRunId: runId } = await h.backfill(integ, 28);
    const msgs = await dispatchUnits(h);
    const [a, b] = await h.units(runId);

    const first = await dieMidUnit(h, msgs.get(a!.id)!);
    h.advance(2 * SECOND + 1);
    expect((await h.pass()).expired_retry_units).toBe(1);
    expect(await first.thaw()).toBe('lease_lost');
    h.advance(60 * SECOND);
    await h.pass();
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    const [again] = await h.take('run_sync_unit');

    const second = await dieMidUnit(h, again!);
    expect(second.owner).not.toBe(first.owner);
    h.advance(2 * SECOND + 1);
    const c = await h.pass();
    expect(c).toMatchObject({ expired_units: 1, expired_retry_units: 0, expired_retry_exhausted_units: 1 });
    const failed = await h.unit(a!.id);
    expect(failed).toMatchObject({ status: 'failed', attempts: 2, expired_lease_retry_count: 1 });
    expect(failed.result).toMatchObject({ error_category: 'worker_lost_retry_exhausted' });
    expect(failed.retry_exhausted_at!.getTime()).toBe(h.now().getTime());
    expect(await second.thaw()).toBe('lease_lost');
    expect(await h.itemsByOwner(a!.id)).toEqual({ [second.owner]: CHUNK_ROWS }); // its first chunk, nothing after

    expect(await h.deliver(msgs.get(b!.id)!)).toBe('success');
    const run = await h.settle(runId);
    expect(run).toMatchObject({ status: 'partial_failed', total_units: 2, completed_units: 1, failed_units: 1 });
    expect((await h.jobRun(runId)).status).toBe('failed');
    expect(await h.metricGenerations(runId)).toBe(1);
  });

  const diesAfterClaim =
    'a worker that dies right after its claim, before the provider starts, ' +
    'is expired at the exact lease end and retried';
  it(diesAfterClaim, async () => {
    h = await Harness.open({ settings });
    const integ = await h.integration({ config: LINEAR });
    const { syncRunId: runId } = await h.backfill(integ, 14);
    const msgs = await dispatchUnits(h);
    const [unit] = await h.units(runId);
    h.faults.arm('unit.afterClaim', 'throw');
    await expect(h.deliver(msgs.get(unit!.id)!)).rejects.toBeInstanceOf(InjectedFault);
    const claimed = await h.unit(unit!.id);
    expect(claimed).toMatchObject({ status: 'running', attempts: 1 });
    expect(claimed.lease_expires_at!.getTime()).toBe(T0 + 2 * SECOND);
    expect(await h.executions(unit!.id)).toEqual([]); // the provider never started

    h.advance(2 * SECOND - 1);
    expect((await h.pass()).expired_units).toBe(0); // still live 1 ms before its end
    h.advance(1);
    expect((await h.pass()).expired_retry_units).toBe(1);
    expect(await h.unit(unit!.id)).toMatchObject({
      status: 'retrying',
      lease_owner: null,
      expired_lease_retry_count: 1,
    });
    const run = await h.settle(runId);
    expect(run.status).toBe('success');
    const done = await h.unit(unit!.id);
    expect(done).toMatchObject({ status: 'success', attempts: 2 });
    expect(done.lease_owner).not.toBe(claimed.lease_owner);
    expect(await h.executions(unit!.id)).toEqual([{ lease_owner: done.lease_owner, outcome: 'success' }]);
  });

  const notEligible: {
    name: string;
    integ: NewTestIntegration;
    plan: (h: Harness, i: { id: string; orgId: string }) => Promise<{ syncRunId: string }>;
  }[] = [
    { name: 'a non-Linear backfill unit', integ: { config: { itemsPerDay: 80 } }, plan: (h, i) => h.backfill(i, 14) },
    {
      name: 'an incremental Linear unit',
      integ: { sources: ['s1', 's2'], config: LINEAR },
      plan: (h, i) => h.incremental(i),
    },
    {
      name: 'a Linear backfill unit whose sink surface is not retry-safe',
      integ: { provider: 'synthetic-unsafe', config: LINEAR },
      plan: (h, i) => h.backfill(i, 28),
    },
  ];

  for (const variant of notEligible) {
    it(`${variant.name} fails worker_lost; its sibling continues; the run ends partial_failed`, async () => {
      h = await Harness.open({ settings });
      const integ = await h.integration(variant.integ);
      const { syncRunId: runId } = await variant.plan(h, integ);
      const msgs = await dispatchUnits(h);
      const [a, b] = await h.units(runId);
      expect(msgs.size).toBe(2);

      const dying = await dieMidUnit(h, msgs.get(a!.id)!);
      h.advance(2 * SECOND + 1);
      const c = await h.pass();
      expect(c).toMatchObject({ expired_units: 1, expired_retry_units: 0, expired_retry_exhausted_units: 0 });
      const failed = await h.unit(a!.id);
      expect(failed).toMatchObject({ status: 'failed', expired_lease_retry_count: 0, retry_exhausted_at: null });
      expect(failed.result).toMatchObject({ error_category: 'worker_lost' });
      expect(await dying.thaw()).toBe('lease_lost'); // it wakes up and tries its next write: refused
      expect(await h.itemsByOwner(a!.id)).toEqual({ [dying.owner]: CHUNK_ROWS }); // nothing after the takeaway
      expect(await h.unit(a!.id)).toMatchObject({ status: 'failed' });

      expect(await h.deliver(msgs.get(b!.id)!)).toBe('success');
      const run = await h.settle(runId);
      expect(run).toMatchObject({ status: 'partial_failed', total_units: 2, completed_units: 1, failed_units: 1 });
      expect((await h.jobRun(runId)).status).toBe('failed');
      expect(h.deliveries.filter((d) => d.name === 'finalize_sync_run' && d.outcome === 'finalized')).toHaveLength(1);
    });
  }
});

describe('window 10: stale dispatching', () => {
  const staleRepublished =
    'a unit dispatching past SYNC_UNIT_DISPATCH_STALE_SECONDS is re-published; a fresh one is not; ' +
    'a running one never is';
  it(staleRepublished, async () => {
    h = await Harness.open({
      settings: {
        concurrencyPerBucket: 3,
        leaseMs: 1800 * SECOND,
        dispatchStaleMs: 900 * SECOND,
        redispatchCountdownMs: 60 * SECOND,
      },
    });
    const integ = await h.integration({ config: { itemsPerDay: 80 } });
    const { syncRunId: runId } = await h.backfill(integ, 28); // 4 weekly units, cap 3
    const first = await dispatchUnits(h);
    expect(first.size).toBe(3);
    const byStatus = async (s: string) => (await h!.units(runId)).filter((u) => u.status === s).map((u) => u.id);
    const [u4] = await byStatus('planned');
    const [u1, u2, u3] = [...first.keys()];

    expect(await h.deliver(first.get(u1!)!)).toBe('success'); // u1 done
    // u2's run_sync_unit message is lost; u3 runs (parked mid-unit) under a live 1800 s lease.
    const hold = h.provider.holdAtWrite(u3!, 1);
    const u3Done = h.deliver(first.get(u3!)!);
    await within(hold.reached);

    // T0+600: the freed slot goes to the planned u4; u2 (600 s in dispatching) is fresh, not re-published.
    h.advance(600 * SECOND);
    const published = () => h!.broker.published('run_sync_unit').map((m) => m.payload.unitId);
    await h.pass();
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    expect(published()).toEqual([u1, u2, u3, u4]);
    const u4Msgs = await h.take('run_sync_unit'); // and its message is lost too
    expect(u4Msgs.map((m) => m.payload.unitId)).toEqual([u4]);
    expect((await h.unit(u4!)).dispatched_at!.getTime()).toBe(T0 + 600 * SECOND);

    // T0+899: nothing is stale yet.
    h.advance(299 * SECOND);
    await h.pass();
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    expect(await dispatchSyncRun(h.ctx, runId)).toMatchObject({ units: 0 });
    expect(published()).toHaveLength(4);

    // T0+900: u2 is stale → re-published (once); u4 (300 s) is fresh; u3 is running.
    h.advance(1 * SECOND);
    const c = await h.pass();
    expect(c.materialized_dispatch + c.relayed_dispatch).toBeGreaterThanOrEqual(1);
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    expect(await dispatchSyncRun(h.ctx, runId)).toMatchObject({ units: 0 });
    expect(published()).toEqual([u1, u2, u3, u4, u2]);
    expect((await h.unit(u2!)).dispatched_at!.getTime()).toBe(T0 + 900 * SECOND);
    expect((await h.unit(u4!)).dispatched_at!.getTime()).toBe(T0 + 600 * SECOND);
    const running = await h.unit(u3!);
    expect(running).toMatchObject({ status: 'running', attempts: 1, lease_owner: hold.owner });

    const [u2Again] = await h.take('run_sync_unit');
    expect(await h.deliver(u2Again!)).toBe('success');
    expect(await h.deliver(first.get(u2!)!)).toBe('not_dispatchable'); // the old message, delivered late

    // T0+1500: u4 goes stale and is re-published; u3 (lease until T0+1800) still is not.
    h.advance(600 * SECOND);
    await h.pass();
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    expect(published()).toEqual([u1, u2, u3, u4, u2, u4]);
    for (const m of await h.take('run_sync_unit')) expect(await h.deliver(m)).toBe('success');
    expect(await h.deliver(u4Msgs[0]!)).toBe('not_dispatchable');
    expect(await h.unit(u3!)).toMatchObject({ status: 'running', attempts: 1, lease_owner: hold.owner });

    hold.release();
    expect(await within(u3Done)).toBe('success');
    const run = await h.settle(runId);
    expect(run).toMatchObject({ status: 'success', completed_units: 4 });
    for (const u of await h.units(runId)) {
      expect(u.attempts).toBe(1);
      expect(await h.executions(u.id)).toHaveLength(1);
    }
  });

  const crashBeforePublish =
    'dispatch crashing between its commit and its publish: the units are re-published once stale, not before';
  it(crashBeforePublish, async () => {
    h = await Harness.open({ settings: { dispatchStaleMs: 900 * SECOND } });
    const integ = await h.integration();
    const { syncRunId: runId } = await h.backfill(integ, 14);
    await h.pass();
    const [dispatch] = await h.take('dispatch_sync_run');
    h.faults.arm('dispatch.afterCommit.beforePublish', 'throw');
    await expect(h.deliver(dispatch!)).rejects.toBeInstanceOf(InjectedFault);
    expect((await h.units(runId)).map((u) => [u.status, u.dispatched_at?.getTime()])).toEqual([
      ['dispatching', T0],
      ['dispatching', T0],
    ]);
    expect((await h.outbox(runId, 'dispatch_sync_run'))!.status).toBe('dispatched');
    expect(h.broker.published('run_sync_unit')).toEqual([]);

    h.advance(900 * SECOND - 1);
    const early = await h.pass();
    expect(early.materialized_dispatch + early.relayed_dispatch).toBe(0);
    h.advance(1);
    const due = await h.pass();
    expect(due).toMatchObject({ materialized_dispatch: 1, relayed_dispatch: 1 });
    const [again] = await h.take('dispatch_sync_run');
    expect(await h.deliver(again!)).toMatchObject({ kind: 'dispatched', units: 2, published: true });
    expect(h.broker.published('run_sync_unit')).toHaveLength(2);
    const run = await h.settle(runId);
    expect(run.status).toBe('success');
    for (const u of await h.units(runId)) {
      expect(u.attempts).toBe(1);
      expect(await h.executions(u.id)).toHaveLength(1);
    }
  });
  const crashAfterFirstSlice =
    'dispatch crashing after its first slice commits: ' +
    'the rest of the run is re-armed at the next pass, the slice once stale';
  it(crashAfterFirstSlice, async () => {
    h = await Harness.open({ settings: { dispatchStaleMs: 900 * SECOND, concurrencyPerBucket: 1000 } });
    // 2 one-week windows per source: more units than the first slice holds.
    const sources = Array.from({ length: FIRST_SLICE / 2 + 8 }, (_, i) => `s${i}`);
    const { syncRunId: runId, units: total } = await h.backfill(await h.integration({ sources }), 14);
    expect(total).toBe(FIRST_SLICE + 16);
    await h.pass();
    const [dispatch] = await h.take('dispatch_sync_run');
    h.faults.arm('dispatch.afterCommit.beforePublish', 'throw');
    await expect(h.deliver(dispatch!)).rejects.toBeInstanceOf(InjectedFault);
    const count = async (status: string) => (await h!.units(runId)).filter((u) => u.status === status).length;
    expect([await count('dispatching'), await count('planned')]).toEqual([FIRST_SLICE, 16]);
    expect(h.broker.published('run_sync_unit')).toEqual([]);
    // The first slice did not re-arm the run (the slices after it would have): nothing is pending.
    expect((await h.outbox(runId, 'dispatch_sync_run'))!.status).toBe('dispatched');

    expect(await h.pass()).toMatchObject({ materialized_dispatch: 1, relayed_dispatch: 1 });
    const [rest] = await h.take('dispatch_sync_run');
    expect(await h.deliver(rest!)).toMatchObject({ kind: 'dispatched', units: 16, published: true });
    expect(h.broker.published('run_sync_unit')).toHaveLength(16);
    for (const m of await h.take('run_sync_unit')) expect(await h.deliver(m)).toBe('success');

    h.advance(900 * SECOND);
    expect(await h.pass()).toMatchObject({ materialized_dispatch: 1, relayed_dispatch: 1 });
    const [stale] = await h.take('dispatch_sync_run');
    expect(await h.deliver(stale!)).toMatchObject({ kind: 'dispatched', units: FIRST_SLICE, published: true });
    const run = await h.settle(runId);
    expect(run).toMatchObject({ status: 'success', completed_units: total });
    for (const u of await h.units(runId)) {
      expect(u.attempts).toBe(1);
      expect(await h.executions(u.id)).toHaveLength(1);
    }
  });

  const twoSlices =
    'a large run is dispatched in two slices, each committed then published: a small first one, then the rest';
  it(twoSlices, async () => {
    h = await Harness.open({ settings: { concurrencyPerBucket: 1000 } });
    const sources = Array.from({ length: FIRST_SLICE / 2 + 8 }, (_, i) => `s${i}`);
    const { syncRunId: runId } = await h.backfill(await h.integration({ sources }), 14);
    await h.pass();
    const [dispatch] = await h.take('dispatch_sync_run');
    const seen: number[] = [];
    h.faults.arm(
      'dispatch.afterCommit.beforePublish',
      async () => {
        seen.push((await h!.units(runId)).filter((u) => u.status === 'dispatching').length);
      },
      2,
    );
    expect(await h.deliver(dispatch!)).toMatchObject({ kind: 'dispatched', units: FIRST_SLICE + 16, published: true });
    expect(seen).toEqual([FIRST_SLICE, FIRST_SLICE + 16]);
    expect(h.broker.published('run_sync_unit')).toHaveLength(FIRST_SLICE + 16);
  });
});

describe('window 11: a fenced-out worker', () => {
  // A 300 s lease heartbeats every 60 s of real time: the old worker never learns it lost the lease.
  const settings = { leaseMs: 300 * SECOND, expiredLeaseRetryBackoffMs: 0 };

  /** Worker A parks, its lease expires, the unit is retried and worker B claims it and parks too. */
  async function takeOver(h: Harness, scriptA: 'atWrite' | 'beforeReturn') {
    const integ = await h.integration({ config: LINEAR });
    const { syncRunId: runId } = await h.backfill(integ, 14); // one unit, 1120 items = 3 sink writes
    const msgs = await dispatchUnits(h);
    const [unit] = await h.units(runId);
    const holdA =
      scriptA === 'atWrite'
        ? h.provider.holdAtWrite(unit!.id, 1, { abortable: false })
        : h.provider.holdBeforeReturn(unit!.id, { abortable: false });
    const doneA = h.deliver(msgs.get(unit!.id)!);
    await within(holdA.reached);

    h.advance(300 * SECOND);
    const c = await h.pass(); // expire → retrying (backoff 0) → dispatch relayed in the same pass
    expect(c).toMatchObject({ expired_retry_units: 1, relayed_dispatch: 1 });
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    const [msgB] = await h.take('run_sync_unit');
    const holdB = h.provider.holdAtWrite(unit!.id, 1);
    const doneB = h.deliver(msgB!);
    await within(holdB.reached);
    const taken = await h.unit(unit!.id);
    expect(taken).toMatchObject({ status: 'running', attempts: 2, lease_owner: holdB.owner });
    return { runId, unit: unit!, holdA, doneA, holdB, doneB, taken };
  }

  it('a sink write by the old owner after the takeover is refused and writes nothing', async () => {
    h = await Harness.open({ settings });
    const { runId, unit, holdA, doneA, holdB, doneB, taken } = await takeOver(h, 'atWrite');
    // B re-wrote the first chunk (same keys): every row now carries B.
    expect(await h.itemsByOwner(unit.id)).toEqual({ [holdB.owner!]: CHUNK_ROWS });

    holdA.release(); // A thaws and writes its second chunk
    expect(await within(doneA)).toBe('lease_lost');
    expect(await h.itemsByOwner(unit.id)).toEqual({ [holdB.owner!]: CHUNK_ROWS });
    const { rows } = await h.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM syncrelay.synthetic_items WHERE lease_owner = $1',
      [holdA.owner],
    );
    expect(rows[0]!.n).toBe(0);
    // No terminal write either: B still holds the unit, untouched; nothing armed finalize.
    expect(await h.unit(unit.id)).toMatchObject({
      status: 'running',
      lease_owner: holdB.owner,
      attempts: 2,
      error: null,
      result: null,
    });
    expect((await h.unit(unit.id)).lease_expires_at).toEqual(taken.lease_expires_at);
    expect(await h.outbox(runId, 'finalize_sync_run')).toBeNull();
    expect((await h.executions(unit.id)).map((e) => [e.lease_owner, e.outcome])).toEqual([
      [holdA.owner, 'lease_lost'],
      [holdB.owner, 'running'],
    ]);

    holdB.release();
    expect(await within(doneB)).toBe('success');
    expect(await h.itemsByOwner(unit.id)).toEqual({ [holdB.owner!]: 14 * 80 });
    const run = await h.settle(runId);
    expect(run.status).toBe('success');
  });

  it('the old owner finishing after the takeover makes no terminal write and arms nothing', async () => {
    h = await Harness.open({ settings });
    const { runId, unit, holdA, doneA, holdB, doneB, taken } = await takeOver(h, 'beforeReturn');
    holdA.release(); // A returns "success" for work it no longer owns
    expect(await within(doneA)).toBe('lease_lost');
    const after = await h.unit(unit.id);
    expect(after).toMatchObject({
      status: 'running',
      lease_owner: holdB.owner,
      attempts: 2,
      error: null,
      result: null,
      duration_ms: null,
    });
    expect(after.updated_at).toEqual(taken.updated_at);
    expect(await h.outbox(runId, 'finalize_sync_run')).toBeNull();
    expect((await h.run(runId))!.status).toBe('dispatching');

    holdB.release();
    expect(await within(doneB)).toBe('success');
    expect(await h.itemsByOwner(unit.id)).toEqual({ [holdB.owner!]: 14 * 80 });
    const run = await h.settle(runId);
    expect(run).toMatchObject({ status: 'success', completed_units: 1 });
  });

  it('an incremental unit taken away (worker_lost) and then finished by its old owner moves no watermark', async () => {
    h = await Harness.open({ settings });
    const integ = await h.integration({ sources: ['s1', 's2'], config: { impersonate: 'linear' } });
    const { syncRunId: runId } = await h.incremental(integ);
    const msgs = await dispatchUnits(h);
    const [a, b] = await h.units(runId);
    const holdA = h.provider.holdBeforeReturn(a!.id, { abortable: false });
    const doneA = h.deliver(msgs.get(a!.id)!);
    await within(holdA.reached);
    expect(await h.deliver(msgs.get(b!.id)!)).toBe('success');
    const watermarks = async () =>
      (
        await h!.db.query<{ source_id: string; watermark_at: Date }>(
          'SELECT source_id, watermark_at FROM syncrelay.sync_watermarks',
        )
      ).rows;
    expect(await watermarks()).toEqual([{ source_id: b!.source_id, watermark_at: b!.before_at }]);

    h.advance(300 * SECOND);
    expect((await h.pass()).expired_units).toBe(1);
    expect((await h.unit(a!.id)).result).toMatchObject({ error_category: 'worker_lost' });
    holdA.release(); // the old owner returns success for a unit that is no longer its own
    expect(await within(doneA)).toBe('lease_lost');
    expect(await h.unit(a!.id)).toMatchObject({ status: 'failed', error: 'lease expired: worker lost' });
    expect(await watermarks()).toEqual([{ source_id: b!.source_id, watermark_at: b!.before_at }]);
    const run = await h.settle(runId);
    expect(run).toMatchObject({ status: 'partial_failed', completed_units: 1, failed_units: 1 });
  });
});

describe('window 12: rate-limited unit', () => {
  async function rateLimitedUnit(
    h: Harness,
    retryAfterMs: number,
  ): Promise<{ runId: string; unit: UnitRow; msg: TaskMessage }> {
    const integ = await h.integration({ config: { rateLimitRate: 1, rateLimitRetryAfterMs: retryAfterMs } });
    const { syncRunId: runId } = await h.backfill(integ, 7);
    const msgs = await dispatchUnits(h);
    const [unit] = await h.units(runId);
    return { runId, unit: unit!, msg: msgs.get(unit!.id)! };
  }

  const deferralsExhausted =
    'retrying until available_at (never claimed before), then more than 10 deferrals fail it with rate_limit';
  it(deferralsExhausted, async () => {
    h = await Harness.open();
    const { runId, unit, msg } = await rateLimitedUnit(h, 30 * SECOND);
    expect(await h.deliver(msg)).toBe('retrying');
    const deferred = await h.unit(unit.id);
    expect(deferred).toMatchObject({
      status: 'retrying',
      rate_limit_deferrals: 1,
      last_retry_reason: 'rate_limit',
      lease_owner: null,
      lease_expires_at: null,
    });
    expect(deferred.rate_limit_first_seen_at!.getTime()).toBe(T0);
    expect(deferred.available_at!.getTime()).toBe(T0 + 30 * SECOND); // jitter pinned to 0
    expect(await outboxDueAt(h, runId)).toBe(T0 + 30 * SECOND);

    // Before available_at nothing claims it: not a redelivered message, not dispatch, not the relay.
    h.advance(30 * SECOND - 1);
    expect(await h.deliver(msg)).toBe('not_dispatchable');
    expect(await runSyncUnit(h.ctx, unit.id)).toBe('not_dispatchable');
    expect(await dispatchSyncRun(h.ctx, runId)).toMatchObject({ kind: 'dispatched', units: 0 });
    const early = await h.pass();
    expect(early.relayed_dispatch + early.materialized_dispatch).toBe(0);
    expect(await h.unit(unit.id)).toMatchObject({ status: 'retrying', attempts: 1 });

    // Each time it comes due it is dispatched, claimed, and deferred again — ten deferrals in all.
    for (let deferral = 2; deferral <= 11; deferral++) {
      h.clock.set((await h.unit(unit.id)).available_at!);
      expect((await h.pass()).relayed_dispatch).toBe(1);
      for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
      const [again] = await h.take('run_sync_unit');
      const outcome = await h.deliver(again!);
      expect(outcome).toBe(deferral <= 10 ? 'retrying' : 'failed');
    }
    const failed = await h.unit(unit.id);
    expect(failed).toMatchObject({ status: 'failed', attempts: 11, rate_limit_deferrals: 10 });
    expect(failed.result).toMatchObject({ error_category: 'rate_limit', rate_limit_deferrals: 10 });
    expect((await h.executions(unit.id)).map((e) => e.outcome)).toEqual(Array(11).fill('rate_limited'));
    const run = await h.settle(runId);
    expect(run).toMatchObject({ status: 'failed', total_units: 1, failed_units: 1 });
  });

  it('a unit still rate limited two hours after its first deferral fails with rate_limit', async () => {
    h = await Harness.open();
    const { runId, unit, msg } = await rateLimitedUnit(h, 60 * SECOND);
    expect(await h.deliver(msg)).toBe('retrying');
    h.advance(2 * 3600 * SECOND + 1);
    expect((await h.pass()).relayed_dispatch).toBe(1);
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    const [again] = await h.take('run_sync_unit');
    expect(await h.deliver(again!)).toBe('failed');
    const failed = await h.unit(unit.id);
    expect(failed).toMatchObject({ status: 'failed', attempts: 2, rate_limit_deferrals: 1 });
    expect(failed.result).toMatchObject({ error_category: 'rate_limit' });
    expect((await h.settle(runId)).status).toBe('failed');
  });
});

describe('cancellation mid-run', () => {
  it('fences the running units out: no sink write and no terminal write after the cancel', async () => {
    h = await Harness.open({ settings: { leaseMs: 300 * SECOND } });
    const integ = await h.integration({ config: { itemsPerDay: 80 } });
    const { syncRunId: runId } = await h.backfill(integ, 21); // 3 weekly units of 560 items
    const msgs = await dispatchUnits(h);
    const [a, b, c] = await h.units(runId);
    expect(await h.deliver(msgs.get(a!.id)!)).toBe('success');
    const holdB = h.provider.holdAtWrite(b!.id, 1, { abortable: false });
    const doneB = h.deliver(msgs.get(b!.id)!);
    const holdC = h.provider.holdBeforeReturn(c!.id, { abortable: false });
    const doneC = h.deliver(msgs.get(c!.id)!);
    await within(Promise.all([holdB.reached, holdC.reached]));

    expect(await h.engine.cancel(runId)).toBe('cancelled');
    const cancelled = (await h.run(runId))!;
    expect(cancelled).toMatchObject({ status: 'cancelled', completed_units: 1, failed_units: 0 });
    expect((await h.jobRun(runId)).status).toBe('cancelled');
    const before = { b: await h.itemsByOwner(b!.id), c: await h.itemsByOwner(c!.id) };
    expect(before.b).toEqual({ [holdB.owner!]: CHUNK_ROWS });

    holdB.release();
    holdC.release();
    expect(await within(doneB)).toBe('lease_lost'); // its next sink write was refused
    expect(await within(doneC)).toBe('lease_lost'); // its terminal CAS found the run cancelled
    expect(await h.itemsByOwner(b!.id)).toEqual(before.b);
    expect(await h.itemsByOwner(c!.id)).toEqual(before.c);
    for (const u of [b!, c!]) {
      const row = await h.unit(u.id);
      expect(row).toMatchObject({ status: 'cancelled', lease_expires_at: null });
      expect(row.result).toEqual({ error_category: 'cancelled' });
    }
    expect(await runSyncUnit(h.ctx, b!.id)).toBe('not_dispatchable');

    // The reconciler leaves the cancelled run alone; its one successful unit still reaches post_sync once.
    for (let i = 0; i < 3; i++) {
      h.advance(600 * SECOND);
      const p = await h.pass();
      expect(
        p.expired_units + p.materialized_finalize + p.materialized_dispatch + p.relayed_finalize + p.relayed_dispatch,
      ).toBe(0);
      await h.pump();
    }
    expect((await h.run(runId))!.status).toBe('cancelled');
    expect(await h.outbox(runId, 'finalize_sync_run')).toBeNull();
    expect(await h.receipts(runId)).toHaveLength(1);
    expect(await h.metricGenerations(runId)).toBe(1);
  });
});
