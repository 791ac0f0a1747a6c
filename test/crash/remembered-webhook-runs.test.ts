/**
 * Webhook deliveries remembered while their source was being read (webhook_pending_runs) are armed
 * by the worker as soon as what held them back ends — the unit reading their source, or, at the
 * live-run cap, a run of the integration — not at the reconciler's next pass. No pass runs in these
 * tests between the end and the check.
 */
import { afterEach, expect, it } from 'vitest';
import { Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A delivery for the integration's one source, remembered as the delivery path does. */
async function remember(integ: { id: string; orgId: string }): Promise<void> {
  const s = h!.db.schema;
  await h!.db.query(
    `INSERT INTO ${s.webhook_pending_runs} (integration_id, source_id, org_id, datasets, first_at, updated_at)
     SELECT integration_id, id, org_id, ARRAY['work-items'], $2, $2 FROM ${s.integration_sources}
      WHERE integration_id = $1`,
    [integ.id, h!.now()],
  );
}

async function webhookRuns(integrationId: string): Promise<number> {
  const { rows } = await h!.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${h!.db.schema.sync_runs} WHERE integration_id = $1 AND triggered_by = 'webhook'`,
    [integrationId],
  );
  return rows[0]!.n;
}

async function remembered(integrationId: string): Promise<number> {
  const { rows } = await h!.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${h!.db.schema.webhook_pending_runs} WHERE integration_id = $1`,
    [integrationId],
  );
  return rows[0]!.n;
}

/** Starts an incremental and runs it up to its one unit's message (dispatched, not yet run). */
async function incrementalUpToItsUnit(integ: { id: string; orgId: string }) {
  const { syncRunId } = await h!.incremental(integ);
  await h!.pass();
  for (const m of await h!.take('dispatch_sync_run')) await h!.deliver(m);
  const units = await h!.take('run_sync_unit');
  expect(units).toHaveLength(1);
  return { runId: syncRunId, unit: units[0]! };
}

it('the end of the unit reading the source arms the remembered run at once', async () => {
  h = await Harness.open();
  const integ = await h.integration();
  const { unit } = await incrementalUpToItsUnit(integ);
  await remember(integ);

  await h.deliver(unit); // the unit ends; its task's background work is settled
  expect(await remembered(integ.id)).toBe(0);
  expect(await webhookRuns(integ.id)).toBe(1);
});

it('at the live-run cap, the end of a run of the integration arms it', async () => {
  h = await Harness.open({ settings: { integrationMaxLiveRuns: 1 } });
  const integ = await h.integration();
  const { unit } = await incrementalUpToItsUnit(integ);
  await remember(integ);

  await h.deliver(unit); // the source is free, but the run is still live: no room under the cap
  expect(await remembered(integ.id)).toBe(1);
  expect(await webhookRuns(integ.id)).toBe(0);

  const [finalize] = await h.take('finalize_sync_run');
  if (!finalize) {
    // The unit's end armed finalize in its own statement; the relay publishes it.
    await h.pass();
  }
  for (const m of finalize ? [finalize] : await h.take('finalize_sync_run')) await h.deliver(m);
  await h.ctx.unitEnds.settle();
  expect(await remembered(integ.id)).toBe(0);
  expect(await webhookRuns(integ.id)).toBe(1);
});

it('an end that frees nothing remembered arms nothing', async () => {
  h = await Harness.open();
  const integ = await h.integration();
  const other = await h.integration({ sources: ['s2'] });
  const { unit } = await incrementalUpToItsUnit(integ);
  await remember(other);

  await h.deliver(unit);
  expect(await remembered(other.id)).toBe(1);
  expect(await webhookRuns(other.id)).toBe(0);
});
