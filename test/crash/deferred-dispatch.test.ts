/**
 * A run whose first dispatch is armed for later (a webhook run's debounce: deliveries for its
 * source join it until then) is not started early by a slot its bucket frees: the end of a unit
 * wakes the waiting runs whose dispatch is due, and leaves the deferred one to its time.
 */
import { afterEach, expect, it } from 'vitest';
import { Harness, SECOND } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

it('a freed slot wakes a capped run, not one whose first dispatch is deferred', async () => {
  h = await Harness.open({ settings: { concurrencyPerBucket: 1, redispatchCountdownMs: 60 * SECOND } });
  const integ = await h.integration();
  // Run A holds the bucket's one slot.
  const a = await h.incremental(integ);
  await h.pass();
  for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
  const [unitOfA] = await h.take('run_sync_unit');
  expect(unitOfA?.payload.runId).toBe(a.syncRunId);

  // Run B: armed for a minute from now (as a webhook run is for its debounce).
  const deferredTo = new Date(h.now().getTime() + 60 * SECOND);
  const b = await h.engine.trigger({
    orgId: integ.orgId,
    integrationId: integ.id,
    mode: 'incremental',
    triggeredBy: 'webhook',
    force: true,
    dispatchAt: deferredTo,
  });
  // Run C: due now, finds the bucket full and waits for the countdown.
  const c = await h.incremental(integ);
  await h.pass();
  for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
  expect(await h.take('run_sync_unit')).toEqual([]);
  expect((await h.outbox(c.syncRunId, 'dispatch_sync_run'))!.available_at.getTime()).toBe(
    h.now().getTime() + 60 * SECOND,
  );

  h.advance(SECOND);
  await h.deliver(unitOfA!); // A's unit ends: its slot is free
  expect((await h.outbox(c.syncRunId, 'dispatch_sync_run'))!.available_at).toEqual(h.now());
  expect((await h.outbox(b.syncRunId, 'dispatch_sync_run'))!.available_at).toEqual(deferredTo);
});
