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
import { RateLimitError } from '../../src/errors.js';
import { bucketKey } from '../../src/store/rows.js';
import { Harness, SECOND, T0, within } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('dispatch behind a backlog', () => {
  const fullBucketQueued =
    'a full bucket and a queued dispatch message: no duplicate per pass; ' +
    're-armed once the message counts as lost or capacity frees';
  it(fullBucketQueued, async () => {
    h = await Harness.open({
      settings: {
        concurrencyPerBucket: 1,
        leaseMs: 60 * SECOND,
        dispatchStaleMs: 10 * SECOND,
        redispatchCountdownMs: 60 * SECOND,
      },
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
    h = await Harness.open({
      settings: { concurrencyPerBucket: 1, dispatchStaleMs: 900 * SECOND, redispatchCountdownMs: 60 * SECOND },
    });
    const integ = await h.integration();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await h.backfill(integ, 14)).syncRunId);
    expect((await h.pass()).relayed_dispatch).toBe(3);
    const queued = await h.take('dispatch_sync_run'); // three dispatch messages still in the queue
    h.advance(1 * SECOND);
    expect(await h.pass()).toMatchObject({ materialized_dispatch: 1, relayed_dispatch: 1 });
    const [dup] = await h.take('dispatch_sync_run');
    const { rows } = await h.db.query<{ id: string }>(
      'SELECT id FROM syncrelay.sync_runs ORDER BY created_at, id LIMIT 1',
    );
    expect(dup!.payload.runId).toBe(rows[0]!.id);
    h.requeue([...queued, dup!]);
    for (const id of ids) expect((await h.settle(id)).status).toBe('success');
  });

  const capacityFreeLost =
    'capacity free and a dispatch message lost: the next pass re-arms it without waiting for the stale threshold';
  it(capacityFreeLost, async () => {
    h = await Harness.open({
      settings: { concurrencyPerBucket: 1, dispatchStaleMs: 900 * SECOND, redispatchCountdownMs: 60 * SECOND },
    });
    const integ = await h.integration();
    const runId = (await h.backfill(integ, 14)).syncRunId;
    expect((await h.pass()).relayed_dispatch).toBe(1);
    expect(await h.broker.purge()).toBe(1); // the broker lost it
    h.advance(1 * SECOND);
    expect(await h.pass()).toMatchObject({ materialized_dispatch: 1, relayed_dispatch: 1 });
    expect((await h.settle(runId)).status).toBe('success');
  });

  it('a unit that ends wakes one waiting run, the one with the oldest planned unit in its bucket', async () => {
    // Found by a soak: every end woke up to 16 runs with planned units in the bucket; behind a
    // backlog of capped runs each end set off a crowd of dispatch tasks for one free slot.
    h = await Harness.open({ settings: { concurrencyPerBucket: 1, redispatchCountdownMs: 60 * SECOND } });
    const integ = await h.integration();
    const [a, b, c] = [
      (await h.backfill(integ, 14)).syncRunId,
      (await h.backfill(integ, 14)).syncRunId,
      (await h.backfill(integ, 14)).syncRunId,
    ];
    expect((await h.pass()).relayed_dispatch).toBe(3);
    const dispatches = await h.take('dispatch_sync_run');
    const of = (run: string) => dispatches.find((m) => m.payload.runId === run)!;
    expect(await h.deliver(of(a))).toMatchObject({ kind: 'dispatched', units: 1 });
    expect(await h.deliver(of(b))).toMatchObject({ kind: 'dispatched', units: 0 }); // the bucket is full
    expect(await h.deliver(of(c))).toMatchObject({ kind: 'dispatched', units: 0 });
    const countdown = h.now().getTime() + 60 * SECOND;
    const dueAt = async (run: string) => (await h!.outbox(run, 'dispatch_sync_run'))!.available_at.getTime();

    // A's first unit ends: the oldest planned unit of the bucket is A's second one.
    const [first] = await h.take('run_sync_unit');
    expect(await h.deliver(first!)).toBe('success');
    expect(await dueAt(a)).toBe(h.now().getTime());
    expect([await dueAt(b), await dueAt(c)]).toEqual([countdown, countdown]);

    // A's second unit ends: now B holds the oldest planned unit; C still waits for its turn.
    expect((await h.pass()).relayed_dispatch).toBe(1);
    expect(await h.deliver((await h.take('dispatch_sync_run'))[0]!)).toMatchObject({ kind: 'dispatched', units: 1 });
    expect(await h.deliver((await h.take('run_sync_unit'))[0]!)).toBe('success');
    expect(await dueAt(b)).toBe(h.now().getTime());
    expect(await dueAt(c)).toBe(countdown);
    for (const id of [a, b, c]) expect((await h.settle(id)).status).toBe('success');
  });

  it('a dispatch that finds its bucket full does not wait for the bucket lock', async () => {
    h = await Harness.open({ settings: { concurrencyPerBucket: 1, redispatchCountdownMs: 60 * SECOND } });
    const integ = await h.integration();
    const a = (await h.backfill(integ, 14)).syncRunId;
    const b = (await h.backfill(integ, 14)).syncRunId;
    expect((await h.pass()).relayed_dispatch).toBe(2);
    const dispatches = await h.take('dispatch_sync_run');
    expect(await h.deliver(dispatches.find((m) => m.payload.runId === a)!)).toMatchObject({
      kind: 'dispatched',
      units: 1,
    });
    const [unit] = await h.units(a);
    const key = bucketKey({ org_id: unit!.org_id, provider: unit!.provider, cost_class: unit!.cost_class });
    // Another dispatcher holds the bucket's lock (as one with room would, while it claims).
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const lockedNow = new Promise<void>((r) => (locked = r));
    const holder = h.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`syncrelay.bucket:${key}`]);
      locked();
      await released;
    });
    try {
      await lockedNow;
      const full = h.deliver(dispatches.find((m) => m.payload.runId === b)!);
      expect(await within(full, 5000, 'the dispatch of a run whose bucket is full')).toMatchObject({
        kind: 'dispatched',
        units: 0,
      });
    } finally {
      release();
      await holder;
    }
    for (const id of [a, b]) expect((await h.settle(id)).status).toBe('success');
  });

  /**
   * Every path that frees a slot follows the one rule of what an end wakes: a unit's deferral, its
   * lease expiring, its run's cancellation — each wakes the run waiting longest in the bucket now,
   * not at the countdown.
   */
  describe('every path that frees a slot wakes the run waiting longest', () => {
    async function fullBucket(h: Harness) {
      const integ = await h.integration();
      const a = (await h.backfill(integ, 7)).syncRunId; // one unit each, one bucket with room for one
      const b = (await h.backfill(integ, 7)).syncRunId;
      expect((await h.pass()).relayed_dispatch).toBe(2);
      const dispatches = await h.take('dispatch_sync_run');
      const of = (run: string) => dispatches.find((m) => m.payload.runId === run)!;
      expect(await h.deliver(of(a))).toMatchObject({ kind: 'dispatched', units: 1 });
      expect(await h.deliver(of(b))).toMatchObject({ kind: 'dispatched', units: 0 }); // the bucket is full
      const [unitOfA] = await h.take('run_sync_unit');
      const countdown = h.now().getTime() + 60 * SECOND;
      expect((await h.outbox(b, 'dispatch_sync_run'))!.available_at.getTime()).toBe(countdown);
      return { a, b, unitOfA: unitOfA! };
    }
    const dueAt = async (h: Harness, run: string) => (await h.outbox(run, 'dispatch_sync_run'))!.available_at.getTime();
    const open = () =>
      Harness.open({ settings: { concurrencyPerBucket: 1, leaseMs: 10 * SECOND, redispatchCountdownMs: 60 * SECOND } });

    it('a rate-limit deferral', async () => {
      h = await open();
      const { a, b, unitOfA } = await fullBucket(h);
      h.provider.script(unitOfA.payload.unitId!, { kind: 'throw', error: new RateLimitError(120 * SECOND) });
      expect(await h.deliver(unitOfA)).toBe('retrying');
      expect(await dueAt(h, b)).toBe(h.now().getTime());
      expect(await dueAt(h, a)).toBeGreaterThanOrEqual(h.now().getTime() + 120 * SECOND); // its own retry
    });

    it('a lease expiring in the reconciler', async () => {
      h = await open();
      const { b, unitOfA } = await fullBucket(h);
      const hold = h.provider.holdBeforeReturn(unitOfA.payload.unitId!, { abortable: false });
      const running = h.deliver(unitOfA);
      await within(hold.reached, 5000, "A's unit running");
      h.advance(11 * SECOND); // past the lease: the worker is as good as dead
      expect(await h.pass()).toMatchObject({ expired_units: 1, relayed_dispatch: 1 });
      const { rows } = await h.db.query<{ available_at: Date; status: string }>(
        `SELECT available_at, status FROM syncrelay.sync_dispatch_outbox
          WHERE sync_run_id = $1 AND kind = 'dispatch_sync_run'`,
        [b],
      );
      // Woken by the expiry at the pass's time, not at the countdown 49 s ahead (the same pass relayed it).
      expect(rows[0]!.available_at.getTime()).toBeLessThanOrEqual(h.now().getTime());
      hold.release();
      expect(await running).toBe('lease_lost');
    });

    it('a cancellation of the run holding the slot', async () => {
      h = await open();
      const { a, b } = await fullBucket(h);
      expect(await h.engine.cancel(a)).toBe('cancelled');
      expect(await dueAt(h, b)).toBe(h.now().getTime());
      expect((await h.settle(b)).status).toBe('success');
    });
  });
});
