/**
 * Behind a backlog, a dispatch message is queued, not lost (found by `syncrelay chaos`: in a soak
 * with hundreds of runs capped in one bucket, the materializer re-armed every capped run whose
 * dispatch message was still waiting in the queue, on every pass; each duplicate lengthened the
 * queue, dispatch messages outnumbered unit messages 40 to 1 and throughput fell tenfold).
 * The materializer re-arms a run's dispatch when it can make progress now — a unit that needs
 * dispatching sits in a bucket with free capacity — or when its last dispatch message went out
 * longer ago than the stale threshold (presumed lost, as for a dispatching unit).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Harness, SECOND, T0, within } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('dispatch behind a backlog', () => {
  it('a full bucket and a queued dispatch message: no duplicate per pass; re-armed once the message counts as lost or capacity frees', async () => {
    h = await Harness.open({
      settings: { concurrencyPerBucket: 1, leaseMs: 60 * SECOND, dispatchStaleMs: 10 * SECOND, redispatchCountdownMs: 60 * SECOND },
    });
    const integ = await h.integration();
    const a = (await h.backfill(integ, 14)).syncRunId; // two units each, one bucket with room for one
    const b = (await h.backfill(integ, 14)).syncRunId;
    expect((await h.pass()).relayed_dispatch).toBe(2);
    const dispatches = await h.take('dispatch_sync_run');
    await h.deliver(dispatches.find((m) => m.payload.runId === a)!);
    const [unitOfA] = await h.take('run_sync_unit');
    // A's unit runs under a live lease: the bucket is full. B's dispatch message waits in the queue.
    const hold = h.provider.holdBeforeReturn(unitOfA!.payload.unitId!);
    const running = h.deliver(unitOfA!);
    await within(hold.reached, 5000, "A's unit running");

    for (let i = 0; i < 4; i++) {
      h.advance(2 * SECOND);
      expect(await h.pass()).toMatchObject({ materialized_dispatch: 0, relayed_dispatch: 0 });
    }
    expect(await h.take()).toEqual([]);

    // 11 s after it went out, B's dispatch message counts as lost: armed once, relayed once.
    h.advance(3 * SECOND);
    expect(await h.pass()).toMatchObject({ materialized_dispatch: 1, relayed_dispatch: 1 });
    const [again] = await h.take('dispatch_sync_run');
    expect(again!.payload.runId).toBe(b);
    expect(await h.deliver(again!)).toMatchObject({ kind: 'dispatched', units: 0 }); // still full
    expect((await h.outbox(b, 'dispatch_sync_run'))!.available_at.getTime()).toBe(h.now().getTime() + 60 * SECOND);

    // A's unit ends: capacity frees, and every run waits only for the wake-ups, not the countdown.
    hold.release();
    expect(await within(running, 5000, "A's unit")).toBe('success');
    for (const id of [a, b]) expect((await h.settle(id)).status).toBe('success');
    expect(h.now().getTime()).toBeLessThan(T0 + 60 * SECOND);
  });

  it('queued dispatch messages and one free slot: one run is re-armed per free slot, the oldest first', async () => {
    h = await Harness.open({ settings: { concurrencyPerBucket: 1, dispatchStaleMs: 900 * SECOND, redispatchCountdownMs: 60 * SECOND } });
    const integ = await h.integration();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await h.backfill(integ, 14)).syncRunId);
    expect((await h.pass()).relayed_dispatch).toBe(3);
    const queued = await h.take('dispatch_sync_run'); // three dispatch messages still in the queue
    h.advance(1 * SECOND);
    expect(await h.pass()).toMatchObject({ materialized_dispatch: 1, relayed_dispatch: 1 });
    const [dup] = await h.take('dispatch_sync_run');
    const { rows } = await h.db.query<{ id: string }>('SELECT id FROM sync_runs ORDER BY created_at, id LIMIT 1');
    expect(dup!.payload.runId).toBe(rows[0]!.id);
    h.requeue([...queued, dup!]);
    for (const id of ids) expect((await h.settle(id)).status).toBe('success');
  });

  it('capacity free and a dispatch message lost: the next pass re-arms it without waiting for the stale threshold', async () => {
    h = await Harness.open({ settings: { concurrencyPerBucket: 1, dispatchStaleMs: 900 * SECOND, redispatchCountdownMs: 60 * SECOND } });
    const integ = await h.integration();
    const runId = (await h.backfill(integ, 14)).syncRunId;
    expect((await h.pass()).relayed_dispatch).toBe(1);
    expect(await h.broker.purge()).toBe(1); // the broker lost it
    h.advance(1 * SECOND);
    expect(await h.pass()).toMatchObject({ materialized_dispatch: 1, relayed_dispatch: 1 });
    expect((await h.settle(runId)).status).toBe('success');
  });
});
