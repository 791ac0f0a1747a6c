/**
 * Window 6, after the broker recovers (found by `syncrelay chaos`: a dispatch row relayed 25 times
 * failed ONE publish while Redis restarted and was parked for backoff(25) = 900 s, stranding its run
 * for 15 minutes on a healthy broker). A failed publish still parks its row with the backoff of
 * SPEC §4 while the broker keeps failing; but once the broker takes messages again — it answers a
 * pass's ping and a trial publish goes through, or any other publish goes through — every row
 * parked before that comes due at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { relayDue } from '../../src/reconciler/relay.js';
import { armOutbox } from '../../src/store/outbox.js';
import { Harness, SECOND, T0, unreachableBroker } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('window 6: parked rows after the broker recovers', () => {
  const parksOnFailedPublish =
    'a row relayed many times parks for 900 s on one failed publish, ' +
    'and is relayed at the next pass once Redis answers';
  it(parksOnFailedPublish, async () => {
    h = await Harness.open({ redis: true });
    const integ = await h.integration();
    const { syncRunId: runId } = await h.backfill(integ, 14);
    // The run's dispatch row is woken and relayed again and again (capacity freed, retries due …).
    for (let i = 0; i < 6; i++) {
      await h.db.transaction((tx) =>
        armOutbox(tx, 'dispatch_sync_run', [{ orgId: integ.orgId, runId }], h!.now(), h!.now()),
      );
      expect((await h.pass()).relayed_dispatch).toBe(1);
      await h.take();
    }
    expect((await h.outbox(runId, 'dispatch_sync_run'))!.attempts).toBe(6);

    const down = unreachableBroker();
    try {
      h.broker.setOutage(down);
      await h.db.transaction((tx) =>
        armOutbox(tx, 'dispatch_sync_run', [{ orgId: integ.orgId, runId }], h!.now(), h!.now()),
      );
      expect((await h.pass()).publish_failures).toBe(1);
      const parked = (await h.outbox(runId, 'dispatch_sync_run'))!;
      expect(parked).toMatchObject({ status: 'pending', attempts: 7 });
      expect(parked.last_error).toMatch(/BrokerError/);
      expect(parked.available_at.getTime()).toBe(h.now().getTime() + 900 * SECOND);

      // Still down: passes ask the broker, get no answer, and leave the row parked.
      h.advance(10 * SECOND);
      expect(await h.pass()).toMatchObject({ relayed_dispatch: 0, publish_failures: 0 });
      expect(h.broker.attempts.filter((a) => a.result === 'failed')).toHaveLength(1);
    } finally {
      h.broker.setOutage(null);
      await down.close();
    }

    // Redis is back: the next pass relays the row, 885 s before its backoff would have ended.
    h.advance(1 * SECOND);
    expect(await h.pass()).toMatchObject({ relayed_dispatch: 1, parked_woken: 1 });
    expect((await h.outbox(runId, 'dispatch_sync_run'))!).toMatchObject({ status: 'dispatched', last_error: null });
    const run = await h.settle(runId);
    expect(run.status).toBe('success');
  });

  const dispatchTaskParks =
    'a dispatch task whose run_sync_unit publish failed parks its re-armed row; it is relayed once the broker answers';
  it(dispatchTaskParks, async () => {
    h = await Harness.open({ redis: true });
    const integ = await h.integration();
    const { syncRunId: runId } = await h.backfill(integ, 14);
    await h.pass();
    const [dispatch] = await h.take('dispatch_sync_run');
    h.broker.failNext(1);
    expect(await h.deliver(dispatch!)).toMatchObject({ kind: 'dispatched', units: 2, published: false });
    const row = (await h.outbox(runId, 'dispatch_sync_run'))!;
    expect(row.status).toBe('pending');
    expect(row.available_at.getTime()).toBe(T0 + 60 * SECOND);
    expect(row.last_error).toMatch(/injected publish failure/);

    // The broker answers the next pass's ping: the row is tried at once, not 60 s later.
    h.advance(1 * SECOND);
    expect(await h.pass()).toMatchObject({ relayed_dispatch: 1, parked_woken: 1 });
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    expect((await h.take('run_sync_unit')).map((m) => m.payload.runId)).toEqual([runId, runId]);
  });

  const parkedUnderClaim =
    'a dispatch task whose publish fails while a relay holds the re-armed row stays parked after the ' +
    "relay's mark, and is relayed as soon as a publish goes through, not after its backoff";
  it(parkedUnderClaim, async () => {
    // Found by `syncrelay chaos` (publish-fail with duplicate deliveries): a unit sat dispatching for
    // the whole 60 s backoff on a healthy broker, its run 51 s past the terminal bound. A cap of 1
    // keeps a unit planned, so the relay has a dispatch to publish.
    h = await Harness.open({ redis: true, settings: { concurrencyPerBucket: 1, redispatchCountdownMs: 60 * SECOND } });
    const integ = await h.integration();
    const { syncRunId: runId } = await h.backfill(integ, 14);
    await h.pass();
    const [first] = await h.take('dispatch_sync_run');

    // The first dispatch task has claimed the units (committed) and has not published them yet.
    let reached!: () => void;
    const atPublish = new Promise<void>((r) => (reached = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    h.faults.arm('dispatch.afterCommit.beforePublish', async () => {
      reached();
      await released;
    });
    const firstDone = h.deliver(first!);
    await atPublish;

    // Something wakes the run's dispatch row; a relay claims and publishes it. Before the relay
    // marks it, the second dispatch task finds the units in flight (nothing to do), and then the
    // first task's publish fails: it re-arms the row for its backoff under the relay's live claim.
    await h.db.transaction((tx) =>
      armOutbox(tx, 'dispatch_sync_run', [{ orgId: integ.orgId, runId }], h!.now(), h!.now()),
    );
    h.faults.arm('relay.afterPublish.beforeMark', async () => {
      const [second] = await h!.take('dispatch_sync_run');
      expect(await h!.deliver(second!)).toMatchObject({ kind: 'dispatched', units: 0 });
      h!.broker.failNext(1);
      release();
      expect(await firstDone).toMatchObject({ kind: 'dispatched', units: 1, published: false });
    });
    // The relay's mark leaves the row pending for the backoff with that error: parked. The relay's
    // own publish went through after the failure, so the same relay call wakes it and relays it
    // again (with the error cleared by the mark, it waited out the 60 s).
    expect(await h.pass()).toMatchObject({ relayed_dispatch: 2, parked_woken: 1, publish_failures: 0 });
    expect((await h.outbox(runId, 'dispatch_sync_run'))!).toMatchObject({ status: 'dispatched', last_error: null });
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    expect((await h.take('run_sync_unit')).map((m) => m.payload.runId)).toEqual([runId]);
    expect((await h.settle(runId)).status).toBe('success');
  });

  const parkedRelayedTogether =
    'rows parked by a failed publish are relayed in the same relay call as the next publish that goes through';
  it(parkedRelayedTogether, async () => {
    h = await Harness.open({ redis: true });
    const integ = await h.integration();
    const a = (await h.backfill(integ, 14)).syncRunId;
    const b = (await h.backfill(integ, 14)).syncRunId;
    h.broker.failNext(1);
    expect((await h.pass()).publish_failures).toBe(2); // both rows in one failed batch
    for (const id of [a, b])
      expect((await h.outbox(id, 'dispatch_sync_run'))!.available_at.getTime()).toBe(T0 + 60 * SECOND);

    // A new run is triggered: its publish goes through, and the parked rows follow right behind it.
    h.advance(1 * SECOND);
    const c = (await h.backfill(integ, 14)).syncRunId;
    expect(await relayDue(h.ctx)).toMatchObject({ relayed_dispatch: 3, parked_woken: 2, publish_failures: 0 });
    expect((await h.take('dispatch_sync_run')).map((m) => m.payload.runId).sort()).toEqual([a, b, c].sort());
  });
});
