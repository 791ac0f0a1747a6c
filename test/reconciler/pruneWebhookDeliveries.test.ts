/**
 * Retention of webhook deliveries: the reconciler pass deletes deliveries older than
 * SYNC_WEBHOOK_DELIVERY_RETENTION_HOURS in bounded batches, keeps newer ones and every delivery still
 * waiting to arm a run (pending, no run yet), and counts what it pruned (`pruned_webhook_deliveries`)
 * in its counters and in reconciler_passes.
 */
import { afterEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { reconcilePass } from '../../src/reconciler/pass.js';
import { openTestEngine, type TestEngine } from '../helpers/engine.js';
import { seedDelivery, seedIntegration, seedRun, type SeedDelivery } from '../helpers/webhookDeliveries.js';

const HOUR = 3_600_000;
const NOW = new Date('2026-03-01T12:00:00Z');
const ORG = 'org-p';

let h: TestEngine | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function remaining(te: TestEngine): Promise<string[]> {
  const { rows } = await te.engine.db.query<{ delivery_id: string }>(
    `SELECT delivery_id FROM ${te.engine.db.schema.webhook_deliveries} ORDER BY delivery_id`,
  );
  return rows.map((r) => r.delivery_id);
}

it('prunes old deliveries, keeps recent ones and pending ones not armed yet, and reports the count', async () => {
  const clock = new ManualClock(NOW);
  h = await openTestEngine({ clock, settings: { webhookDeliveryRetentionMs: 48 * HOUR } });
  const { db } = h.engine;
  const integrationId = await seedIntegration(db, ORG);
  const runId = await seedRun(db, { orgId: ORG, integrationId, status: 'success', completedAt: NOW });
  const at = (hoursAgo: number) => new Date(NOW.getTime() - hoursAgo * HOUR);
  const d = (deliveryId: string, hoursAgo: number, more: Partial<SeedDelivery>) =>
    seedDelivery(db, { orgId: ORG, integrationId, status: 'received', receivedAt: at(hoursAgo), deliveryId, ...more });

  await d('old-armed', 72, { outcome: 'armed', runId });
  await d('old-coalesced', 50, { outcome: 'coalesced', runId });
  await d('old-ignored', 49, { outcome: 'ignored' });
  await d('old-duplicate', 60, { status: 'duplicate' });
  await d('old-rejected', 60, { status: 'rejected' });
  await d('old-pending-unarmed', 100, { outcome: 'pending' });
  await d('old-pending-armed', 100, { outcome: 'pending', runId });
  await d('exactly-two-days', 48, { outcome: 'armed', runId });
  await d('recent', 1, { outcome: 'armed', runId });
  await d('recent-pending', 0, { outcome: 'pending' });

  const counters = await reconcilePass(h.engine.ctx, 'prune-deliveries');
  expect(counters.pruned_webhook_deliveries).toBe(6);
  expect(await remaining(h)).toEqual(['exactly-two-days', 'old-pending-unarmed', 'recent', 'recent-pending']);
  const { rows } = await db.query<{ n: number }>(
    `SELECT (counters ->> 'pruned_webhook_deliveries')::int AS n FROM ${db.schema.reconciler_passes}
      WHERE reconciler = 'prune-deliveries'`,
  );
  expect(rows).toEqual([{ n: 6 }]);

  // An hour later the two-day-old delivery has aged out; the unarmed pending one stays until armed.
  clock.set(new Date(NOW.getTime() + HOUR));
  expect((await reconcilePass(h.engine.ctx)).pruned_webhook_deliveries).toBe(1);
  expect(await remaining(h)).toEqual(['old-pending-unarmed', 'recent', 'recent-pending']);
  await db.query(
    `UPDATE ${db.schema.webhook_deliveries} SET outcome = 'armed', sync_run_id = $1 WHERE delivery_id = $2`,
    [runId, 'old-pending-unarmed'],
  );
  expect((await reconcilePass(h.engine.ctx)).pruned_webhook_deliveries).toBe(1);
  expect(await remaining(h)).toEqual(['recent', 'recent-pending']);
  expect((await reconcilePass(h.engine.ctx)).pruned_webhook_deliveries).toBe(0);
});

it('deletes in bounded batches: at most ten batches of ten scan batches per pass', async () => {
  const clock = new ManualClock(NOW);
  // reconcileBatch 1 → batches of 10 rows, at most 100 rows per pass.
  h = await openTestEngine({ clock, settings: { webhookDeliveryRetentionMs: HOUR, reconcileBatch: 1 } });
  const { db } = h.engine;
  const integrationId = await seedIntegration(db, ORG);
  await db.query(
    `INSERT INTO ${db.schema.webhook_deliveries}
       (org_id, integration_id, provider, delivery_id, status, outcome, received_at)
     SELECT $2, $3, 'github', 'old-' || i, 'received', 'ignored', $1::timestamptz - make_interval(mins => i)
       FROM generate_series(61, 210) AS i`,
    [NOW, ORG, integrationId],
  );
  await seedDelivery(db, {
    orgId: ORG,
    integrationId,
    status: 'received',
    outcome: 'pending',
    receivedAt: new Date(0),
    deliveryId: 'waiting',
  });
  await seedDelivery(db, {
    orgId: ORG,
    integrationId,
    status: 'received',
    outcome: 'armed',
    receivedAt: NOW,
    deliveryId: 'fresh',
  });

  expect((await reconcilePass(h.engine.ctx)).pruned_webhook_deliveries).toBe(100);
  expect((await remaining(h)).length).toBe(52);
  // Oldest first: the 100 oldest went, the 50 newest of the old ones are left.
  expect(
    (await remaining(h))
      .filter((id) => id.startsWith('old-'))
      .map((id) => Number(id.slice(4)))
      .sort((a, b) => a - b),
  ).toEqual(Array.from({ length: 50 }, (_, i) => 61 + i));
  expect((await reconcilePass(h.engine.ctx)).pruned_webhook_deliveries).toBe(50);
  expect(await remaining(h)).toEqual(['fresh', 'waiting']);
});
