/**
 * Crash windows 1, 2, 6 and 7 (SPEC §11): what the relay does when a publish is lost, fails or is
 * interrupted — against real PostgreSQL and a real BullMQ queue on Redis.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { markOutboxDispatched, markOutboxPublishFailed } from '../../src/store/outbox.js';
import { InjectedFault } from '../../src/errors.js';
import { Faults } from '../../src/faults.js';
import { Harness, SECOND, T0, unreachableBroker } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A run ended well: every unit succeeded once, observers and post_sync agree. */
async function expectCleanSuccess(h: Harness, runId: string, units: number): Promise<void> {
  const run = (await h.run(runId))!;
  expect(run.status).toBe('success');
  expect(run.total_units).toBe(units);
  expect(run.completed_units).toBe(units);
  expect(run.failed_units).toBe(0);
  expect((await h.jobRun(runId)).status).toBe('success');
  for (const u of await h.units(runId)) {
    expect(u.status).toBe('success');
    expect(await h.executions(u.id)).toEqual([{ lease_owner: u.lease_owner, outcome: 'success' }]);
  }
  expect(await h.ledger(runId)).toEqual([{ kind: 'post_sync' }]);
  expect(await h.receipts(runId)).toHaveLength(1);
  expect(await h.metricGenerations(runId)).toBe(1);
  expect((await h.outbox(runId, 'post_sync'))!.status).toBe('dispatched');
}

describe('window 1: run committed, dispatch publish lost', () => {
  const lostDispatchRearmed =
    'a dispatch message the broker lost is re-armed by the materializer and relayed; the run ends success';
  it(lostDispatchRearmed, async () => {
    h = await Harness.open({ redis: true });
    const integ = await h.integration();
    const { syncRunId } = await h.backfill(integ, 14);
    expect((await h.run(syncRunId))!.status).toBe('planned');
    expect((await h.outbox(syncRunId, 'dispatch_sync_run'))!.status).toBe('pending');

    // The relay publishes dispatch_sync_run to Redis and marks the row …
    const first = await h.pass();
    expect(first.relayed_dispatch).toBe(1);
    const row = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
    expect(row.status).toBe('dispatched');
    // … and Redis loses it before any worker took it.
    expect(await h.broker.purge()).toBe(1);
    expect(await h.take()).toEqual([]);
    expect((await h.units(syncRunId)).map((u) => u.status)).toEqual(['planned', 'planned']);

    // The next pass finds a committed run with planned units and no pending dispatch row.
    const second = await h.pass();
    expect(second.materialized_dispatch).toBe(1);
    expect(second.relayed_dispatch).toBe(1);
    const [msg, ...rest] = await h.take();
    expect(rest).toEqual([]);
    expect(msg!.name).toBe('dispatch_sync_run');
    expect(msg!.payload.runId).toBe(syncRunId);
    expect((await h.outbox(syncRunId, 'dispatch_sync_run'))!.attempts).toBe(2);

    await h.deliver(msg!);
    expect((await h.run(syncRunId))!.status).toBe('dispatching');
    const run = await h.settle(syncRunId);
    expect(run.status).toBe('success');
    await expectCleanSuccess(h, syncRunId, 2);
  });

  it('a dispatch publish that fails outright stays pending and the next due pass publishes it', async () => {
    h = await Harness.open({ redis: true });
    const integ = await h.integration();
    const { syncRunId } = await h.backfill(integ, 14);
    h.broker.failNext(1);
    const c = await h.pass();
    expect(c.publish_failures).toBe(1);
    expect(c.relayed_dispatch).toBe(0);
    const row = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
    expect(row).toMatchObject({ status: 'pending', attempts: 1, claim_token: null });
    expect(row.last_error).toContain('injected publish failure');
    expect(await h.take()).toEqual([]);
    const run = await h.settle(syncRunId);
    expect(run.status).toBe('success');
    await expectCleanSuccess(h, syncRunId, 2);
  });

  const unitPublishLost =
    'run_sync_unit publish lost after the dispatch commit: units are re-published at once, run ends success';
  it(unitPublishLost, async () => {
    h = await Harness.open({ redis: true });
    const integ = await h.integration();
    const { syncRunId } = await h.backfill(integ, 14);
    await h.pass();
    const [dispatch] = await h.take();
    // dispatch_sync_run commits the claim, then its run_sync_unit publish fails.
    h.broker.failNext(1);
    expect(await h.deliver(dispatch!)).toMatchObject({ kind: 'dispatched', units: 2, published: false });
    const units = await h.units(syncRunId);
    expect(units.map((u) => [u.status, u.dispatched_at])).toEqual([
      ['dispatching', null],
      ['dispatching', null],
    ]);
    // The dispatch row is re-armed with the publish backoff; nothing reached Redis.
    const row = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
    expect(row.status).toBe('pending');
    expect(row.available_at.getTime()).toBe(T0 + 60 * SECOND);
    expect(await h.take()).toEqual([]);
    // An unpublished dispatching unit is not "fresh": the re-armed dispatch re-publishes it.
    h.advance(60 * SECOND);
    expect((await h.pass()).relayed_dispatch).toBe(1);
    const [again] = await h.take();
    expect(await h.deliver(again!)).toMatchObject({ kind: 'dispatched', units: 2, published: true });
    const unitMsgs = await h.take();
    expect(unitMsgs.map((m) => m.payload.unitId).sort()).toEqual(units.map((u) => u.id).sort());
    h.requeue(unitMsgs);
    const run = await h.settle(syncRunId);
    expect(run.status).toBe('success');
    await expectCleanSuccess(h, syncRunId, 2);
  });
});

describe('window 2: concurrency cap hit, the re-armed dispatch publish lost', () => {
  const overflowDrains =
    'overflow stays planned, the lost re-dispatch is re-armed by the reconciler and the overflow drains under the cap';
  it(overflowDrains, async () => {
    h = await Harness.open({ redis: true, settings: { concurrencyPerBucket: 2, redispatchCountdownMs: 60 * SECOND } });
    const integ = await h.integration();
    const { syncRunId } = await h.backfill(integ, 35); // 5 weekly units in one bucket
    const active = async () =>
      (await h!.units(syncRunId)).filter((u) => u.status === 'dispatching' || u.status === 'running').length;

    await h.pass();
    const [dispatch] = await h.take();
    expect(await h.deliver(dispatch!)).toMatchObject({ kind: 'dispatched', units: 2 });
    expect((await h.units(syncRunId)).filter((u) => u.status === 'planned')).toHaveLength(3);
    // Capped: the dispatch row is re-armed for now + SYNC_DISPATCH_REDISPATCH_COUNTDOWN.
    let row = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
    expect(row.status).toBe('pending');
    expect(row.available_at.getTime()).toBe(T0 + 60 * SECOND);

    // The countdown passes with the cap still full: the re-armed dispatch is relayed, claims nothing, re-arms.
    const unitMsgs = await h.take('run_sync_unit');
    expect(unitMsgs).toHaveLength(2);
    h.advance(60 * SECOND);
    expect((await h.pass()).relayed_dispatch).toBe(1);
    const [redispatch] = await h.take('dispatch_sync_run');
    expect(await h.deliver(redispatch!)).toMatchObject({ kind: 'dispatched', units: 0 });
    expect(await active()).toBe(2);

    // The two units finish: freed capacity wakes the dispatch row for now …
    for (const m of unitMsgs) expect(await h.deliver(m)).toBe('success');
    row = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
    expect(row.status).toBe('pending');
    expect(row.available_at.getTime()).toBeLessThanOrEqual(h.now().getTime());
    // … and that re-armed dispatch is published, then lost by the broker.
    expect((await h.pass()).relayed_dispatch).toBe(1);
    expect((await h.outbox(syncRunId, 'dispatch_sync_run'))!.status).toBe('dispatched');
    expect(await h.broker.purge()).toBe(1);
    expect((await h.units(syncRunId)).filter((u) => u.status === 'planned')).toHaveLength(3);

    // The reconciler re-drives: materialize → relay; the overflow drains, never above the cap.
    const c = await h.pass();
    expect(c.materialized_dispatch).toBe(1);
    expect(c.relayed_dispatch).toBe(1);
    for (let i = 0; i < 20; i++) {
      const msgs = await h.take();
      if (msgs.length === 0) {
        const pass = await h.pass();
        if (pass.relayed_dispatch + pass.relayed_finalize + pass.relayed_post_sync === 0) break;
        continue;
      }
      for (const m of msgs) {
        await h.deliver(m);
        expect(await active()).toBeLessThanOrEqual(2);
      }
    }
    const run = await h.settle(syncRunId);
    expect(run.status).toBe('success');
    await expectCleanSuccess(h, syncRunId, 5);
  });

  it('a re-arm that lands while the relay is still publishing the row is not lost', async () => {
    h = await Harness.open({ redis: true, settings: { concurrencyPerBucket: 1, redispatchCountdownMs: 60 * SECOND } });
    const integ = await h.integration();
    const { syncRunId } = await h.backfill(integ, 14); // 2 units, cap 1
    // The worker handles dispatch_sync_run between the relay's publish and its mark.
    h.faults.arm('relay.afterPublish.beforeMark', async () => {
      const [msg] = await h!.take('dispatch_sync_run');
      await h!.deliver(msg!);
    });
    expect((await h.pass()).relayed_dispatch).toBe(1);
    // The capped re-arm happened under the relay's live claim: the mark leaves the row pending.
    const row = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
    expect(row.status).toBe('pending');
    expect(row.claim_token).toBeNull();
    expect(row.available_at.getTime()).toBe(T0 + 60 * SECOND);
    const run = await h.settle(syncRunId);
    expect(run.status).toBe('success');
    await expectCleanSuccess(h, syncRunId, 2);
  });
});

describe('window 6: broker down during a relay pass', () => {
  const pendingWithBackoff =
    'the row stays pending with last_error and a 60 s backoff; the trigger still commits; ' +
    'the next pass once the broker is back publishes';
  it(pendingWithBackoff, async () => {
    h = await Harness.open({ redis: true });
    const down = unreachableBroker();
    try {
      h.broker.setOutage(down);
      const integ = await h.integration();
      // The trigger commits the JobRun, the run, its units and the dispatch row without the broker.
      const { syncRunId, jobRunId } = await h.backfill(integ, 14);
      expect(jobRunId).toBeTruthy();
      expect((await h.jobRun(syncRunId)).status).toBe('pending');

      const c = await h.pass();
      expect(c.publish_failures).toBe(1);
      expect(c.relayed_dispatch).toBe(0);
      let row = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
      expect(row).toMatchObject({ status: 'pending', attempts: 1, claim_token: null, claim_expires_at: null });
      expect(row.last_error).toMatch(/BrokerError/);
      expect(row.available_at.getTime()).toBe(T0 + 60 * SECOND); // backoff(1) = 60 s
      expect(h.broker.attempts.map((a) => a.result)).toEqual(['failed']);

      // Still down after the backoff: the second failure backs off 120 s.
      h.advance(59 * SECOND);
      expect((await h.pass()).publish_failures).toBe(0); // not due yet
      h.advance(1 * SECOND);
      expect((await h.pass()).publish_failures).toBe(1);
      row = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
      expect(row).toMatchObject({ status: 'pending', attempts: 2 });
      expect(row.available_at.getTime()).toBe(T0 + 60 * SECOND + 120 * SECOND);
      expect((await h.run(syncRunId))!.status).toBe('planned');

      // Redis is back: the next pass finds the broker answering and publishes and marks at once —
      // the backoff spares a failing broker, it does not hold rows back from a recovered one.
      h.broker.setOutage(null);
      h.advance(1 * SECOND);
      expect(await h.pass()).toMatchObject({ relayed_dispatch: 1, parked_woken: 1 });
      row = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
      expect(row).toMatchObject({ status: 'dispatched', attempts: 3, last_error: null, claim_token: null });
      const msgs = await h.take();
      expect(msgs.map((m) => m.name)).toEqual(['dispatch_sync_run']);
      h.requeue(msgs);
      const run = await h.settle(syncRunId);
      expect(run.status).toBe('success');
      await expectCleanSuccess(h, syncRunId, 2);
    } finally {
      await down.close();
    }
  });
});

describe('window 7: relay crashes between claim and mark', () => {
  const afterPublishBeforeMark =
    'after publish, before mark: the claim expires, another relay publishes, the stale relay’s mark changes nothing';
  it(afterPublishBeforeMark, async () => {
    h = await Harness.open({ redis: true, settings: { claimTimeoutMs: 300 * SECOND } });
    const integ = await h.integration();
    const { syncRunId } = await h.backfill(integ, 14);
    h.faults.arm('relay.afterPublish.beforeMark', 'throw');
    await expect(h.pass()).rejects.toBeInstanceOf(InjectedFault);
    const crashed = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
    expect(crashed.status).toBe('pending');
    expect(crashed.claim_token).not.toBeNull();
    expect(crashed.claim_expires_at!.getTime()).toBe(T0 + 300 * SECOND);
    const { rows: passes } = await h.db.query<{ error: string | null }>(
      'SELECT error FROM syncrelay.reconciler_passes',
    );
    expect(passes.map((p) => p.error)).toEqual([expect.stringContaining('relay.afterPublish.beforeMark')]);

    // While the claim is live nobody else publishes the row.
    const other = h.worker({ faults: new Faults() });
    h.advance(299 * SECOND);
    expect((await h.pass(other, 'relay-b')).relayed_dispatch).toBe(0);
    // The claim expires: another relay claims it with a new token, publishes and marks.
    h.advance(1 * SECOND);
    expect((await h.pass(other, 'relay-b')).relayed_dispatch).toBe(1);
    const marked = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
    expect(marked).toMatchObject({ status: 'dispatched', attempts: 2, claim_token: null });

    // The stale relay wakes up and tries to finish its work with the old token: 0 rows.
    const stale = { id: crashed.id, claimToken: crashed.claim_token! };
    expect(await markOutboxDispatched(h.db, [stale], h.now())).toEqual([]);
    expect(await markOutboxPublishFailed(h.db, [{ ...stale, retryAt: h.now(), error: 'late' }], h.now())).toEqual([]);
    expect((await h.outbox(syncRunId, 'dispatch_sync_run'))!).toMatchObject({ status: 'dispatched', last_error: null });

    // Both publishes reached Redis (distinct job ids, one per claim); the duplicate is harmless.
    const msgs = await h.take();
    expect(msgs.map((m) => m.name)).toEqual(['dispatch_sync_run', 'dispatch_sync_run']);
    expect(new Set(msgs.map((m) => m.jobId)).size).toBe(2);
    expect(await h.deliver(msgs[0]!)).toMatchObject({ kind: 'dispatched', units: 2 });
    expect(await h.deliver(msgs[1]!)).toMatchObject({ kind: 'dispatched', units: 0 });
    const run = await h.settle(syncRunId);
    expect(run.status).toBe('success');
    await expectCleanSuccess(h, syncRunId, 2);
  });

  const afterClaimBeforePublish =
    'after claim, before publish: nothing is published until the claim expires; a mark after expiry fails';
  it(afterClaimBeforePublish, async () => {
    h = await Harness.open({ redis: true, settings: { claimTimeoutMs: 300 * SECOND } });
    const integ = await h.integration();
    const { syncRunId } = await h.backfill(integ, 14);
    h.faults.arm('relay.afterClaim.beforePublish', 'throw');
    await expect(h.pass()).rejects.toBeInstanceOf(InjectedFault);
    const crashed = (await h.outbox(syncRunId, 'dispatch_sync_run'))!;
    expect(crashed).toMatchObject({ status: 'pending', attempts: 1 });
    expect(await h.take()).toEqual([]);

    h.advance(300 * SECOND);
    // The claim has expired: the crashed relay's mark is refused even before anyone re-claims.
    expect(await markOutboxDispatched(h.db, [{ id: crashed.id, claimToken: crashed.claim_token! }], h.now())).toEqual(
      [],
    );
    expect((await h.outbox(syncRunId, 'dispatch_sync_run'))!.status).toBe('pending');
    expect((await h.pass()).relayed_dispatch).toBe(1);
    expect((await h.outbox(syncRunId, 'dispatch_sync_run'))!).toMatchObject({ status: 'dispatched', attempts: 2 });
    const run = await h.settle(syncRunId);
    expect(run.status).toBe('success');
    await expectCleanSuccess(h, syncRunId, 2);
  });

  /** Runs a 2-unit backfill until its post_sync row is armed (not yet relayed). */
  async function untilPostSyncArmed(h: Harness): Promise<string> {
    const integ = await h.integration();
    const { syncRunId } = await h.backfill(integ, 14);
    for (let i = 0; i < 10 && !(await h.outbox(syncRunId, 'post_sync')); i++) {
      await h.pass();
      await h.pump();
    }
    expect((await h.outbox(syncRunId, 'post_sync'))!.status).toBe('pending');
    expect((await h.run(syncRunId))!.status).toBe('success');
    return syncRunId;
  }

  const atMostOnceClaimed =
    'post_sync (at-most-once) claimed and not yet marked when the relay crashes: ' +
    'delivered once after the claim expires';
  it(atMostOnceClaimed, async () => {
    h = await Harness.open({ redis: true, settings: { claimTimeoutMs: 300 * SECOND } });
    const runId = await untilPostSyncArmed(h);
    h.faults.arm('relay.afterClaim.beforePublish', 'throw');
    await expect(h.pass()).rejects.toBeInstanceOf(InjectedFault);
    expect((await h.outbox(runId, 'post_sync'))!).toMatchObject({ status: 'pending', attempts: 1 });
    expect(await h.take()).toEqual([]);
    h.advance(300 * SECOND);
    expect((await h.pass()).relayed_post_sync).toBe(1);
    const msgs = await h.take();
    expect(msgs.map((m) => m.name)).toEqual(['post_sync']);
    await h.deliver(msgs[0]!);
    expect((await h.outbox(runId, 'post_sync'))!).toMatchObject({ status: 'dispatched', attempts: 2 });
    expect(await h.receipts(runId)).toHaveLength(1);
    expect(await h.metricGenerations(runId)).toBe(1);
    expect((await h.run(runId))!.status).toBe('success');
  });

  const exactlyOncePublished =
    'post_sync (exactly-once) published and not yet marked when the relay crashes: ' +
    're-published, the handler still runs once';
  it(exactlyOncePublished, async () => {
    h = await Harness.open({
      redis: true,
      settings: { claimTimeoutMs: 300 * SECOND, postSyncDelivery: 'exactly-once' },
    });
    const runId = await untilPostSyncArmed(h);
    h.faults.arm('relay.afterPublish.beforeMark', 'throw');
    await expect(h.pass()).rejects.toBeInstanceOf(InjectedFault);
    const crashed = (await h.outbox(runId, 'post_sync'))!;
    expect(crashed.claim_token).not.toBeNull();
    // Nobody consumed the first message before the claim expired: another relay publishes again.
    h.advance(300 * SECOND);
    expect((await h.pass()).relayed_post_sync).toBe(1);
    const msgs = await h.take();
    expect(msgs.map((m) => m.name)).toEqual(['post_sync', 'post_sync']);
    expect(await markOutboxDispatched(h.db, [{ id: crashed.id, claimToken: crashed.claim_token! }], h.now())).toEqual(
      [],
    );
    const outcomes = await Promise.all(msgs.map((m) => h!.deliver(m)));
    expect(outcomes.map((o) => (o as { delivered: string[] }).delivered.length).sort()).toEqual([0, 1]);
    expect((await h.outbox(runId, 'post_sync'))!.status).toBe('dispatched');
    expect(await h.receipts(runId)).toHaveLength(1);
    expect(await h.metricGenerations(runId)).toBe(1);
    for (let i = 0; i < 3; i++) {
      h.advance(3600 * SECOND);
      expect((await h.pass()).relayed_post_sync).toBe(0);
    }
    expect((await h.run(runId))!.status).toBe('success');
  });
});
