/**
 * Migration 0021: job_runs.triggered_by takes 'webhook' besides the earlier triggers (every member
 * of the domain's TRIGGERS) and still refuses anything else, on PostgreSQL and on PGlite (where the
 * delivery reports and their pruning run too).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrator.js';
import { PgliteDb } from '../../src/db/pglite.js';
import type { Db } from '../../src/db/types.js';
import { TRIGGERS } from '../../src/domain/statuses.js';
import { pruneWebhookDeliveries } from '../../src/store/webhookDeliveries.js';
import { summarizeWebhookDeliveries } from '../../src/store/webhookDeliveryReports.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { seedIntegration, seedKnownWindow } from '../helpers/webhookDeliveries.js';

const INTEGRATION = '0b6c4c5e-7e43-4d0a-9c1e-4e1f1f6f2a10';

async function insertJobRun(db: Db, triggeredBy: string): Promise<void> {
  await db.query(`INSERT INTO ${db.schema.job_runs} (org_id, integration_id, triggered_by) VALUES ($1, $2, $3)`, [
    'org-m',
    INTEGRATION,
    triggeredBy,
  ]);
}

async function checkTriggers(db: Db): Promise<void> {
  expect(TRIGGERS).toContain('webhook');
  for (const trigger of TRIGGERS) await insertJobRun(db, trigger);
  const { rows } = await db.query<{ triggered_by: string }>(
    `SELECT triggered_by FROM ${db.schema.job_runs} ORDER BY triggered_by`,
  );
  expect(rows.map((r) => r.triggered_by)).toEqual([...TRIGGERS].sort());
  for (const other of ['cron', 'Webhook', 'webhooks', '']) {
    await expect(insertJobRun(db, other)).rejects.toMatchObject({ code: '23514' });
  }
}

describe('job_runs.triggered_by on PostgreSQL', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 1 });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it("allows every trigger of the domain, 'webhook' included, and refuses others", async () => {
    await checkTriggers(t.db);
    const { rows } = await t.db.query<{ def: string }>(
      `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
        WHERE conname = 'job_runs_triggered_by_check' AND conrelid = $1::regclass`,
      [t.db.schema.job_runs],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.def).toContain("'webhook'");
  });
});

describe('job_runs.triggered_by on PGlite', () => {
  it('the migrations apply and the same triggers pass; the delivery reports and pruning run', async () => {
    const db = await PgliteDb.open();
    try {
      await migrate(db);
      await checkTriggers(db);
      const now = new Date('2026-03-01T12:00:00Z');
      const id = await seedIntegration(db, 'org-m');
      await seedKnownWindow(db, 'org-m', id, now);
      const summary = await summarizeWebhookDeliveries(db, 'org-m', id, new Date(now.getTime() - 86_400_000), now);
      expect(summary.delivery_to_data).toEqual({ samples: 12, p50_ms: 4000, p95_ms: 10_000, max_ms: 10_000 });
      // All 19 are older than now + 1 ms; the pending one (no run yet) stays.
      expect(await pruneWebhookDeliveries(db, new Date(now.getTime() + 1), 100)).toBe(18);
      const { rows } = await db.query<{ outcome: string }>(`SELECT outcome FROM ${db.schema.webhook_deliveries}`);
      expect(rows).toEqual([{ outcome: 'pending' }]);
    } finally {
      await db.close();
    }
    // PGlite (WebAssembly) applies every core migration here: minutes on a loaded machine.
  }, 180_000);
});
