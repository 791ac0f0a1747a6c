/**
 * Hand-made webhook deliveries and the runs they armed, written straight into the tables with known
 * times, for the tests of the delivery reports (store, API, CLI, dashboard) and of their retention.
 */
import type { Db } from '../../src/db/types.js';
import type { RunStatus } from '../../src/domain/statuses.js';
import type { WebhookDeliveryStatus, WebhookOutcome } from '../../src/store/webhookDeliveries.js';

/** An integration of `orgId` (no sources or datasets: the reports read none). */
export async function seedIntegration(
  db: Db,
  orgId: string,
  provider = 'github',
  name = 'Acme GitHub',
): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO ${db.schema.integrations} (org_id, provider, name) VALUES ($1, $2, $3) RETURNING id`,
    [orgId, provider, name],
  );
  return rows[0]!.id;
}

/** An incremental run of the integration in `status`, ended at `completedAt` (null: not ended). */
export async function seedRun(
  db: Db,
  r: { orgId: string; integrationId: string; status: RunStatus; completedAt: Date | null },
): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO ${db.schema.sync_runs} (org_id, integration_id, triggered_by, mode, status, completed_at)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [r.orgId, r.integrationId, 'webhook', 'incremental', r.status, r.completedAt],
  );
  return rows[0]!.id;
}

export interface SeedDelivery {
  orgId: string;
  integrationId: string;
  status: WebhookDeliveryStatus;
  outcome?: WebhookOutcome | null;
  runId?: string | null;
  receivedAt: Date;
  deliveryId?: string | null;
  event?: string | null;
  action?: string | null;
  source?: string | null;
  summary?: Record<string, unknown>;
}

/** One delivery row as the webhook planner would have left it. Returns its id. */
export async function seedDelivery(db: Db, d: SeedDelivery): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO ${db.schema.webhook_deliveries}
       (org_id, integration_id, provider, delivery_id, event, action, source, status, outcome, summary,
        sync_run_id, received_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12) RETURNING id`,
    [
      d.orgId,
      d.integrationId,
      'github',
      d.deliveryId === undefined ? `dl-${Math.random().toString(36).slice(2)}` : d.deliveryId,
      d.event === undefined ? 'issues' : d.event,
      d.action === undefined ? 'opened' : d.action,
      d.source === undefined ? 'acme/widgets' : d.source,
      d.status,
      d.outcome ?? null,
      JSON.stringify(d.summary ?? {}),
      d.runId ?? null,
      d.receivedAt,
    ],
  );
  return rows[0]!.id;
}

/**
 * A known window ending at `now`: ten received deliveries armed into successful runs with
 * delivery-to-data times of 1 … 10 s, two coalesced into the 1 s run (twelve samples: p50 4 s, p95
 * and max 10 s by nearest rank), one pending (no run yet), one ignored, one armed into a failed run
 * (not timed), two duplicates and one rejected; and one received 30 h ago, armed into a run that
 * ended 60 s later (outside a 24 h window).
 */
export async function seedKnownWindow(
  db: Db,
  orgId: string,
  integrationId: string,
  now: Date,
): Promise<{ successRuns: string[]; failedRun: string }> {
  const at = (msAgo: number) => new Date(now.getTime() - msAgo);
  const HOUR = 3_600_000;
  const successRuns: string[] = [];
  for (let i = 1; i <= 10; i++) {
    const received = at(i * HOUR);
    const runId = await seedRun(db, {
      orgId,
      integrationId,
      status: 'success',
      completedAt: new Date(received.getTime() + i * 1000),
    });
    successRuns.push(runId);
    await seedDelivery(db, { orgId, integrationId, status: 'received', outcome: 'armed', runId, receivedAt: received });
  }
  // Two more joined the first run (received just as it was armed: 1 s to its end as well).
  for (let i = 0; i < 2; i++) {
    await seedDelivery(db, {
      orgId,
      integrationId,
      status: 'received',
      outcome: 'coalesced',
      runId: successRuns[0]!,
      receivedAt: at(HOUR),
    });
  }
  await seedDelivery(db, { orgId, integrationId, status: 'received', outcome: 'pending', receivedAt: at(30 * 60_000) });
  await seedDelivery(db, {
    orgId,
    integrationId,
    status: 'received',
    outcome: 'ignored',
    receivedAt: at(20 * 60_000),
    event: 'star',
  });
  const failedRun = await seedRun(db, { orgId, integrationId, status: 'failed', completedAt: at(HOUR) });
  await seedDelivery(db, {
    orgId,
    integrationId,
    status: 'received',
    outcome: 'armed',
    runId: failedRun,
    receivedAt: at(2 * HOUR + 5000),
  });
  for (let i = 0; i < 2; i++) {
    await seedDelivery(db, { orgId, integrationId, status: 'duplicate', receivedAt: at((3 + i) * HOUR) });
  }
  await seedDelivery(db, {
    orgId,
    integrationId,
    status: 'rejected',
    receivedAt: at(10 * 60_000),
    deliveryId: null,
    event: null,
    action: null,
    source: null,
    summary: { reason: 'the body is not a JSON object' },
  });
  // Outside a 24 h window: counted by a longer one only.
  const oldRun = await seedRun(db, { orgId, integrationId, status: 'success', completedAt: at(30 * HOUR - 60_000) });
  await seedDelivery(db, {
    orgId,
    integrationId,
    status: 'received',
    outcome: 'armed',
    runId: oldRun,
    receivedAt: at(30 * HOUR),
  });
  return { successRuns, failedRun };
}
