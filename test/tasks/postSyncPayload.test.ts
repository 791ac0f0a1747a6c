/**
 * The post_sync payload is summed up from the run's successful units in the database: datasets of
 * every successful unit (carried ones included), the window of its successful work-item units (its
 * reference units' when none), null bounds when one of them is unbounded; failed units count for
 * nothing. Units are planned by a real trigger, then given their outcomes and windows directly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine.js';
import { buildPayload } from '../../src/tasks/postSync.js';
import { openTestEngine, type TestEngine } from '../helpers/engine.js';

const ORG = 'org-payload';
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 5);

describe('buildPayload', () => {
  let h: TestEngine;
  let engine: Engine;
  let integrationId: string;

  beforeAll(async () => {
    h = await openTestEngine();
    engine = h.engine;
    const integ = await engine.createIntegration({
      orgId: ORG,
      provider: 'synthetic',
      name: 'payload',
      sources: ['s1', 's2'],
      datasets: ['teams', 'work-items', 'work-item-comments'],
      config: { itemsPerDay: 1 },
    });
    integrationId = integ.id;
  });
  afterAll(async () => {
    await h?.close();
  });

  /** A backfill's planned units (no worker runs them), as (id, tier, dataset). */
  async function planned(): Promise<{ runId: string; units: { id: string; tier: string; dataset_key: string }[] }> {
    const run = await engine.trigger({
      orgId: ORG,
      integrationId,
      mode: 'backfill',
      triggeredBy: 'api',
      since: new Date(T0),
      before: new Date(T0 + 21 * DAY),
      force: true,
    });
    const { rows } = await h.t.db.query<{ id: string; tier: string; dataset_key: string }>(
      `SELECT id, tier, dataset_key FROM ${h.t.db.schema.sync_run_units} WHERE sync_run_id = $1 ORDER BY id`,
      [run.syncRunId],
    );
    return { runId: run.syncRunId, units: rows };
  }

  async function set(
    ids: string[],
    fields: { status: string; since?: Date | null; before?: Date | null; carried?: string[] },
  ) {
    await h.t.db.query(
      `UPDATE ${h.t.db.schema.sync_run_units}
          SET status = $2,
              since_at = CASE WHEN $3 THEN $4::timestamptz ELSE since_at END,
              before_at = CASE WHEN $5 THEN $6::timestamptz ELSE before_at END,
              carried_datasets = COALESCE($7::text[], carried_datasets)
        WHERE id = ANY($1::uuid[])`,
      [
        ids,
        fields.status,
        fields.since !== undefined,
        fields.since ?? null,
        fields.before !== undefined,
        fields.before ?? null,
        fields.carried ?? null,
      ],
    );
  }

  it('names every successful dataset and covers the successful work-item windows only', async () => {
    const { runId, units } = await planned();
    const work = units.filter((u) => u.tier === 'work_item');
    const ref = units.filter((u) => u.tier === 'reference');
    expect(work.length).toBeGreaterThan(3);
    expect(ref.length).toBeGreaterThan(0);
    const [first, second, ...rest] = work;
    await set([first!.id], {
      status: 'success',
      since: new Date(T0 + DAY),
      before: new Date(T0 + 2 * DAY),
      carried: ['x-carried'],
    });
    await set([second!.id], { status: 'success', since: new Date(T0 + 5 * DAY), before: new Date(T0 + 9 * DAY) });
    // Failed units widen nothing and name nothing.
    await set(
      rest.map((u) => u.id),
      { status: 'failed', since: new Date(T0 - 30 * DAY), before: new Date(T0 + 90 * DAY), carried: ['x-failed'] },
    );
    await set(
      ref.map((u) => u.id),
      { status: 'success', since: new Date(T0 - 300 * DAY), before: new Date(T0 + 300 * DAY) },
    );

    const built = await buildPayload(engine.ctx, runId);
    expect(built!.payload).toEqual({
      orgId: ORG,
      runId,
      integrationId,
      provider: 'synthetic',
      datasets: [...new Set([...ref, first!, second!].map((u) => u.dataset_key).concat('x-carried'))].sort(),
      window: { from: new Date(T0 + DAY).toISOString(), to: new Date(T0 + 9 * DAY).toISOString() },
    });
    expect(built!.integration.id).toBe(integrationId);
  });

  it('takes the reference window when no work item succeeded, and null bounds for an unbounded unit', async () => {
    const { runId, units } = await planned();
    const work = units.filter((u) => u.tier === 'work_item');
    const ref = units.filter((u) => u.tier === 'reference');
    await set(
      work.map((u) => u.id),
      { status: 'failed' },
    );
    await set(
      ref.map((u) => u.id),
      { status: 'success', since: new Date(T0), before: new Date(T0 + DAY) },
    );
    expect((await buildPayload(engine.ctx, runId))!.payload.window).toEqual({
      from: new Date(T0).toISOString(),
      to: new Date(T0 + DAY).toISOString(),
    });

    await set([work[0]!.id], { status: 'success', since: new Date(T0), before: null });
    await set([work[1]!.id], { status: 'success', since: new Date(T0), before: new Date(T0 + DAY) });
    expect((await buildPayload(engine.ctx, runId))!.payload.window).toEqual({ from: null, to: null });
  });

  it('is null for a run without a successful unit', async () => {
    const { runId, units } = await planned();
    await set(
      units.map((u) => u.id),
      { status: 'failed' },
    );
    expect(await buildPayload(engine.ctx, runId)).toBeNull();
  });
});
