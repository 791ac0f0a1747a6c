/**
 * The delivery reports against hand-inserted deliveries and runs with known times: the summary's
 * counts and its exact delivery-to-data percentiles, the window, org scoping, and the newest-first
 * keyset page with its status filter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listWebhookDeliveries, summarizeWebhookDeliveries } from '../../src/store/webhookDeliveryReports.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { seedDelivery, seedIntegration, seedKnownWindow } from '../helpers/webhookDeliveries.js';

const HOUR = 3_600_000;
const NOW = new Date('2026-03-01T12:00:00Z');
const ORG = 'org-r';
const OTHER = 'org-other';

let t: TestDatabase;
let integrationId: string;
let otherIntegration: string;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
  integrationId = await seedIntegration(t.db, ORG);
  otherIntegration = await seedIntegration(t.db, OTHER);
  await seedKnownWindow(t.db, ORG, integrationId, NOW);
  // Another org's deliveries, on its own integration and (forged) on this one: never counted.
  await seedDelivery(t.db, { orgId: OTHER, integrationId: otherIntegration, status: 'received', receivedAt: NOW });
  await seedDelivery(t.db, { orgId: OTHER, integrationId, status: 'rejected', receivedAt: NOW });
});
afterAll(async () => {
  await t?.drop();
});

const since = (hours: number) => new Date(NOW.getTime() - hours * HOUR);

describe('summarizeWebhookDeliveries', () => {
  it('counts the last 24 h by status and outcome, and times delivery to data exactly', async () => {
    expect(await summarizeWebhookDeliveries(t.db, ORG, integrationId, since(24), NOW)).toEqual({
      statuses: { received: 15, duplicate: 2, rejected: 1 },
      outcomes: { armed: 11, coalesced: 2, pending: 1, ignored: 1 },
      runs_armed: 11,
      // 1 s ×3 (the first run and the two that joined it), 2 … 10 s: the failed run is not timed.
      delivery_to_data: { samples: 12, p50_ms: 4000, p95_ms: 10_000, max_ms: 10_000 },
    });
  });

  it('a longer window takes the older delivery in', async () => {
    const s = await summarizeWebhookDeliveries(t.db, ORG, integrationId, since(48), NOW);
    expect(s.statuses).toEqual({ received: 16, duplicate: 2, rejected: 1 });
    expect(s.runs_armed).toBe(12);
    expect(s.delivery_to_data).toEqual({ samples: 13, p50_ms: 5000, p95_ms: 60_000, max_ms: 60_000 });
  });

  it('answers zeros and nulls for a window without deliveries, or another org', async () => {
    const empty = {
      statuses: { received: 0, duplicate: 0, rejected: 0 },
      outcomes: { armed: 0, coalesced: 0, pending: 0, ignored: 0 },
      runs_armed: 0,
      delivery_to_data: { samples: 0, p50_ms: null, p95_ms: null, max_ms: null },
    };
    expect(await summarizeWebhookDeliveries(t.db, ORG, integrationId, since(-2), since(-1))).toEqual(empty);
    expect(await summarizeWebhookDeliveries(t.db, 'org-nobody', integrationId, since(48), NOW)).toEqual(empty);
  });
});

describe('listWebhookDeliveries', () => {
  it('pages newest first with a keyset cursor, each row once', async () => {
    const seen: string[] = [];
    let after: { createdUs: string; id: string } | undefined;
    for (;;) {
      const rows = await listWebhookDeliveries(t.db, { orgId: ORG, integrationId, after, limit: 4 });
      seen.push(...rows.map((r) => r.id));
      for (let i = 1; i < rows.length; i++) {
        expect(rows[i - 1]!.received_at.getTime()).toBeGreaterThanOrEqual(rows[i]!.received_at.getTime());
      }
      if (rows.length < 4) break;
      const last = rows.at(-1)!;
      after = { createdUs: last.cursor_us, id: last.id };
    }
    expect(seen.length).toBe(19);
    expect(new Set(seen).size).toBe(19);
  });

  it('filters by status and never lists another org', async () => {
    const rejected = await listWebhookDeliveries(t.db, { orgId: ORG, integrationId, status: 'rejected', limit: 50 });
    expect(rejected.map((r) => [r.status, r.delivery_id, r.summary])).toEqual([
      ['rejected', null, { reason: 'the body is not a JSON object' }],
    ]);
    const dup = await listWebhookDeliveries(t.db, { orgId: ORG, integrationId, status: 'duplicate', limit: 50 });
    expect(dup.map((r) => r.status)).toEqual(['duplicate', 'duplicate']);
    expect(await listWebhookDeliveries(t.db, { orgId: ORG, integrationId: otherIntegration, limit: 50 })).toEqual([]);
  });
});
