/**
 * The reconciler pass's outbox-depth step: one sample a minute at most (a second pass in the same
 * minute writes nothing), samples older than seven days pruned, both counted in the pass's counters.
 */
import { afterEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { reconcilePass } from '../../src/reconciler/pass.js';
import { OUTBOX_SAMPLE_RETENTION_MS } from '../../src/reconciler/outboxSamples.js';
import { openTestEngine, type TestEngine } from '../helpers/engine.js';

const NOW = new Date('2026-03-01T12:00:30Z');
const MIN = 60_000;

let h: TestEngine | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

it('samples once a minute and prunes samples past the retention', async () => {
  const clock = new ManualClock(NOW);
  h = await openTestEngine({ clock });
  const { db } = h.engine;
  const table = db.schema.table('outbox_depth_samples');
  const sampledAt = (msAgo: number) => new Date(NOW.getTime() - msAgo);
  for (const ago of [OUTBOX_SAMPLE_RETENTION_MS + 2 * MIN, OUTBOX_SAMPLE_RETENTION_MS + MIN, 3 * MIN]) {
    await db.query(`INSERT INTO ${table} (sampled_at, org_id, pending, due) VALUES ($1, '', 0, 0), ($1, 'o', 1, 1)`, [
      sampledAt(ago),
    ]);
  }

  const first = await reconcilePass(h.engine.ctx, 'sampler');
  expect(first).toMatchObject({ outbox_samples: 1, pruned_outbox_samples: 4 });
  clock.advance(20_000);
  expect(await reconcilePass(h.engine.ctx, 'sampler')).toMatchObject({ outbox_samples: 0, pruned_outbox_samples: 0 });
  clock.advance(MIN);
  expect(await reconcilePass(h.engine.ctx, 'sampler')).toMatchObject({ outbox_samples: 1 });

  const { rows } = await db.query<{ at: Date; org_id: string }>(
    `SELECT sampled_at AS at, org_id FROM ${table} ORDER BY sampled_at, org_id`,
  );
  expect(rows).toEqual([
    { at: sampledAt(3 * MIN), org_id: '' },
    { at: sampledAt(3 * MIN), org_id: 'o' },
    { at: new Date('2026-03-01T12:00:00Z'), org_id: '' },
    { at: new Date('2026-03-01T12:01:00Z'), org_id: '' },
  ]);
  const recorded = await db.query<{ n: number }>(
    `SELECT (counters ->> 'pruned_outbox_samples')::int AS n FROM ${db.schema.reconciler_passes}
      WHERE reconciler = 'sampler' ORDER BY id LIMIT 1`,
  );
  expect(recorded.rows).toEqual([{ n: 4 }]);
});
