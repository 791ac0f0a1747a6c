/**
 * Lock order (found by `syncrelay chaos`: dozens of deadlocks a minute under load, each stalling
 * its transactions for deadlock_timeout — long enough, with a 2 s lease, to lose units a provider
 * had finished). Two transactions are interleaved statement by statement on PostgreSQL: one is
 * parked at an exact statement, holding its locks, while the other runs into it.
 *
 * 1. A transaction arms all its outbox rows in ONE statement, in (run id, kind) order. A rate-limit
 *    retry used to arm its own run's dispatch row first and the waiting runs' rows after, so it
 *    could hold run B's row while a unit end holding run A's row waited for it — and then wait for A.
 * 2. The run row is locked FOR NO KEY UPDATE. FOR UPDATE also blocks the FOR KEY SHARE lock the
 *    foreign key takes when a unit's end (holding its unit row) inserts the run's first finalize
 *    row; a cancellation holding the run and waiting for that unit's row then closed a cycle.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RateLimitError } from '../../src/errors.js';
import { cancelRun } from '../../src/planning/cancel.js';
import { GatedDb, sqlTable, untilBlockedOrDone } from './gate.js';
import { Harness, SECOND, within } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const OUTBOX_WRITE = new RegExp(`INSERT INTO ${sqlTable('sync_dispatch_outbox')}`);

describe('lock order: outbox rows', () => {
  it('a rate-limit retry and a unit end waking the same runs do not deadlock', async () => {
    h = await Harness.open({ settings: { concurrencyPerBucket: 2 } });
    const integ = await h.integration();
    // Three runs of three units each, all in one bucket; B (the highest run id, the last one) runs two of its units.
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await h.backfill(integ, 21)).syncRunId);
    const b = [...ids].sort().at(-1)!;
    await h.pass();
    const dispatches = await h.take('dispatch_sync_run');
    await h.deliver(dispatches.find((m) => m.payload.runId === b)!);
    const [retried, ended, ...rest] = await h.take('run_sync_unit');
    expect(rest).toEqual([]);
    expect([retried!.payload.runId, ended!.payload.runId]).toEqual([b, b]);

    // The retry parks right after its first outbox write, keeping the rows it locked.
    h.provider.throwOnce(retried!.payload.unitId!, new RateLimitError(5 * SECOND));
    const retryDb = new GatedDb(h.db);
    const parked = retryDb.park(OUTBOX_WRITE, 'after');
    const retry = h.deliver(retried!, h.worker({ db: retryDb }));
    await within(parked.reached, 5000, 'the retry reaching its outbox write');

    // The unit end wakes the oldest run waiting in the bucket (the first run); the retry arms the
    // first run's row too (its freed slot) and B's (its own retry), in run id order.
    const endDb = new GatedDb(h.db);
    const end = h.deliver(ended!, h.worker({ db: endDb }));
    await untilBlockedOrDone(h.db, end);
    parked.release();

    expect(await within(retry, 10_000, 'the retry')).toBe('retrying');
    expect(await within(end, 10_000, 'the unit end')).toBe('success');
    expect(retryDb.deadlocks + endDb.deadlocks).toBe(0);
    // Every wake-up landed: the first run's dispatch row is pending and due now, B's when its
    // retry comes due; the middle run waits its turn.
    const [first, middle] = ids;
    expect(b).toBe(ids[2]);
    const firstRow = (await h.outbox(first!, 'dispatch_sync_run'))!;
    expect([firstRow.status, firstRow.available_at.getTime()]).toEqual(['pending', h.now().getTime()]);
    const own = (await h.outbox(b, 'dispatch_sync_run'))!;
    expect(own.status).toBe('pending');
    expect(own.available_at.getTime()).toBeGreaterThan(h.now().getTime());
    expect((await h.outbox(middle!, 'dispatch_sync_run'))!.status).toBe('dispatched');
  });
});

describe('lock order: the run row', () => {
  const cancelVsLastUnitEnd =
    "a cancellation holding the run row and the run's last unit end (which inserts the finalize row) do not deadlock";
  it(cancelVsLastUnitEnd, async () => {
    h = await Harness.open();
    const integ = await h.integration();
    const { syncRunId: runId } = await h.backfill(integ, 7); // one unit
    await h.pass();
    for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
    const [msg] = await h.take('run_sync_unit');

    // The cancellation locks the run row and parks there, before it goes for the unit rows.
    const cancelDb = new GatedDb(h.db);
    const parked = cancelDb.park(/FOR (NO KEY )?UPDATE/, 'after');
    const cancel = cancelRun(cancelDb, h.clock, runId);
    await within(parked.reached, 5000, 'the cancellation holding the run row');

    // The unit's end statement locks the unit row, then inserts the run's first finalize row:
    // the foreign key's FOR KEY SHARE on the run row must not wait for the cancellation, which
    // would then wait for the unit row.
    const endDb = new GatedDb(h.db);
    expect(await within(h.deliver(msg!, h.worker({ db: endDb })), 10_000, 'the unit end')).toBe('success');
    expect((await h.outbox(runId, 'finalize_sync_run'))!.status).toBe('pending');
    parked.release();

    expect(await within(cancel, 10_000, 'the cancellation')).toBe('cancelled');
    expect(endDb.deadlocks + cancelDb.deadlocks).toBe(0);
    // The unit's success stands; the cancellation came after it.
    const run = (await h.run(runId))!;
    expect(run).toMatchObject({ status: 'cancelled', completed_units: 1, failed_units: 0 });
    expect((await h.units(runId)).map((u) => u.status)).toEqual(['success']);
  });
});
