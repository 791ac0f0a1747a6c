import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { metricsDays } from '../../src/domain/metricsDays.js';
import type { IntegrationInfo, PostSyncPayload } from '../../src/sdk/types.js';
import {
  computeWorkItemMetrics,
  normalizedSink,
  workItemMetricsHandler,
  WORK_ITEM_METRICS,
} from '../../src/sinks/normalized/index.js';
import { migrate } from '../../src/db/migrator.js';
import { PgliteDb } from '../../src/db/pglite.js';
import type { Db } from '../../src/db/types.js';
import { deleteIntegration } from '../../src/planning/integrations.js';
import { waitFor } from '../helpers/engine.js';
import { createTestDatabase } from '../helpers/pg.js';
import { insertIntegration, insertRunningUnit, testGuard } from './normalizedHelpers.js';

const ORG = 'org-metrics';
const at = (iso: string) => `2026-${iso}:00Z`; // at('03-02T10:00') → 2026-03-02T10:00:00Z
const NOW = Date.parse(at('03-04T12:00'));

interface MetricsRow {
  day: string;
  computed_at: Date;
  items_created: number;
  items_completed: number;
  wip: number;
  cycle_time_p50_hours: number | null;
  cycle_time_p90_hours: number | null;
  prs_merged: number;
  pr_time_to_merge_p50_hours: number | null;
}

/** The handler's figures, checked on PostgreSQL and on PGlite. */
function metricsSuite(label: string, open: () => Promise<{ db: Db; drop(): Promise<void> }>): void {
  describe(`work-item-metrics post_sync handler (${label})`, () => {
    let t: { db: Db; drop(): Promise<void> };
    let integrationId: string;
    let otherIntegration: string;
    const clock = new ManualClock(NOW);
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (s: string) => void warnings.push(s) });

    /** Items (created, started, completed, status) and pull requests chosen so each figure is checkable by hand. */
    beforeAll(async () => {
      t = await open();
      integrationId = await insertIntegration(t.db, ORG);
      otherIntegration = await insertIntegration(t.db, ORG);
      const unitId = await insertRunningUnit(t.db, ORG, integrationId, 'w', new Date(NOW + 86_400_000));
      const sink = normalizedSink(t.db);
      const guard = testGuard(t.db, unitId, 'w', clock);
      const base = (id: string, integration = integrationId) => ({
        org_id: ORG,
        integration_id: integration,
        provider: 'github',
        external_id: id,
        last_synced_at: clock.now(),
      });
      type Item = [string, string, string | null, string | null, string, string?];
      const items: Item[] = [
        // id, created, started, completed, status, updated
        ['A', '02-20T10:00', null, null, 'todo'],
        ['B', '03-01T08:00', '03-02T08:00', '03-03T08:00', 'done'], // cycle 24 h (from started)
        ['C', '03-02T00:00', null, '03-03T12:00', 'done'], // cycle 36 h (from created)
        ['D', '03-02T06:00', '03-03T00:00', '03-03T10:00', 'done'], // cycle 10 h
        ['E', '03-03T09:00', null, '03-04T09:00', 'cancelled'],
        ['F', '03-04T23:59', '03-04T23:59', null, 'in_progress'],
        ['G', '03-05T01:00', null, null, 'todo'], // after the window
        ['H', '03-02T12:00', null, '03-02T18:00', 'done'], // cycle 6 h, closed the day it was opened
        ['I', '02-25T00:00', null, '03-01T00:00', 'done'], // closed before the window
        ['J', '03-03T05:00', null, null, 'cancelled', '03-03T20:00'], // no completed_at: ends at updated_at
        ['K', '03-02T03:00', null, '03-05T02:00', 'done'], // closed after the window
      ];
      await sink.write(
        guard,
        'work_items',
        items.map(([id, created, started, completed, status, updated]) => ({
          ...base(id),
          status,
          created_at: at(created),
          started_at: started && at(started),
          completed_at: completed && at(completed),
          updated_at: updated && at(updated),
        })),
      );
      await sink.write(guard, 'work_items', [
        { ...base('L', otherIntegration), status: 'todo', created_at: at('03-02T00:00') },
      ]);
      const prs: [string, string, string | null][] = [
        ['P1', '03-01T00:00', '03-02T12:00'], // 36 h
        ['P2', '03-02T00:00', '03-02T02:00'], // 2 h
        ['P3', '03-02T00:00', '03-02T10:00'], // 10 h
        ['P4', '03-03T00:00', null], // closed unmerged
        ['P5', '03-04T00:00', '03-05T00:00'], // merged at the first instant after the window's last day
        ['P6', '03-04T08:00', '03-04T20:00'], // 12 h
        ['P7', '03-01T00:00', '03-01T23:59'], // before the window
      ];
      await sink.write(
        guard,
        'pull_requests',
        prs.map(([id, created, merged]) => ({
          ...base(id),
          state: merged ? 'merged' : 'closed',
          created_at: at(created),
          merged_at: merged && at(merged),
        })),
      );
    });
    afterAll(async () => {
      await t.drop();
    });
    beforeEach(async () => {
      clock.set(NOW);
      warnings.length = 0;
      await t.db.query(`DELETE FROM ${t.db.schema.table('work_item_metrics_daily')}`);
    });

    const payload = (from: string | null, to: string | null): PostSyncPayload => ({
      orgId: ORG,
      runId: '00000000-0000-0000-0000-000000000001',
      integrationId,
      provider: 'github',
      datasets: ['work-items'],
      window: { from, to },
    });

    const run = (p: PostSyncPayload) =>
      t.db.transaction((tx) => computeWorkItemMetrics(p, { tx, idempotencyKey: 'k', clock, logger }));

    async function metrics(): Promise<MetricsRow[]> {
      const { rows } = await t.db.query<MetricsRow>(
        `SELECT to_char(day, 'YYYY-MM-DD') AS day, computed_at, items_created, items_completed, wip,
              cycle_time_p50_hours, cycle_time_p90_hours, prs_merged, pr_time_to_merge_p50_hours
         FROM ${t.db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1 ORDER BY computed_at, day`,
        [integrationId],
      );
      return rows;
    }

    const figures = (r: MetricsRow) => {
      const { computed_at: _, ...rest } = r;
      return rest;
    };

    const EXPECTED = [
      {
        day: '2026-03-02',
        items_created: 4, // C, D, H, K
        items_completed: 1, // H
        wip: 5, // A, B, C, D, K (H closed the same day)
        cycle_time_p50_hours: 6,
        cycle_time_p90_hours: 6,
        prs_merged: 3, // P1, P2, P3
        pr_time_to_merge_p50_hours: 10, // of 2, 10, 36
      },
      {
        day: '2026-03-03',
        items_created: 2, // E, J
        items_completed: 3, // B, C, D
        wip: 3, // A, E, K (J ended the day it was opened, at its updated_at)
        cycle_time_p50_hours: 24, // of 10, 24, 36
        cycle_time_p90_hours: 33.6, // 24 + 0.8 × (36 − 24)
        prs_merged: 0,
        pr_time_to_merge_p50_hours: null,
      },
      {
        day: '2026-03-04',
        items_created: 1, // F, at 23:59
        items_completed: 0, // E was cancelled, not completed
        wip: 3, // A, F, K
        cycle_time_p50_hours: null,
        cycle_time_p90_hours: null,
        prs_merged: 1, // P6 (P5 merged at 03-05T00:00)
        pr_time_to_merge_p50_hours: 12,
      },
    ];

    it('computes each UTC day the window touches against hand-computed figures', async () => {
      expect(await run(payload(at('03-02T10:00'), at('03-04T12:00')))).toBe(3);
      const rows = await metrics();
      expect(rows.map(figures)).toEqual(
        EXPECTED.map((e) => ({
          ...e,
          cycle_time_p90_hours: e.cycle_time_p90_hours === null ? null : expect.closeTo(e.cycle_time_p90_hours, 9),
        })),
      );
      expect(rows.every((r) => r.computed_at.getTime() === NOW)).toBe(true);
    });

    it('a window ending exactly at midnight does not touch the next day', async () => {
      await run(payload(at('03-03T00:00'), at('03-05T00:00')));
      expect((await metrics()).map((r) => r.day)).toEqual(['2026-03-03', '2026-03-04']);
    });

    it('a second run adds a second generation with its own computed_at', async () => {
      const window = payload(at('03-02T00:00'), at('03-05T00:00'));
      await run(window);
      clock.advance(3_600_000);
      await run(window);
      const rows = await metrics();
      expect(rows).toHaveLength(6);
      expect([...new Set(rows.map((r) => r.computed_at.getTime()))]).toEqual([NOW, NOW + 3_600_000]);
      expect(rows.slice(3).map(figures)).toEqual(rows.slice(0, 3).map(figures));
      expect(rows.slice(0, 3).map((r) => r.wip)).toEqual([5, 3, 3]);
    });

    it('an unbounded window runs from the integration’s first item to now', async () => {
      await run(payload(null, null));
      const rows = await metrics();
      expect(rows.map((r) => r.day)[0]).toBe('2026-02-20');
      expect(rows.at(-1)!.day).toBe('2026-03-04');
      expect(rows).toHaveLength(13);
      expect(figures(rows[0]!)).toMatchObject({ items_created: 1, wip: 1, items_completed: 0 }); // A
      expect(figures(rows.find((r) => r.day === '2026-03-01')!)).toMatchObject({
        items_created: 1, // B
        items_completed: 1, // I
        wip: 2, // A, B
        prs_merged: 1, // P7
      });
    });

    it('writes in the handler’s transaction: nothing stays when it rolls back', async () => {
      await t.db
        .transaction(async (tx) => {
          await computeWorkItemMetrics(payload(at('03-02T00:00'), at('03-03T00:00')), {
            tx,
            idempotencyKey: 'k',
            clock,
            logger,
          });
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      expect(await metrics()).toEqual([]);
    });

    it('computes at most 400 days per run, the most recent, and warns about the rest', async () => {
      const from = new Date(NOW - 500 * 86_400_000).toISOString();
      expect(await run(payload(from, at('03-04T12:00')))).toBe(400);
      const rows = await metrics();
      expect(rows[0]!.day).toBe('2025-01-29'); // 2026-03-04 − 399 days
      expect(rows.at(-1)!.day).toBe('2026-03-04');
      expect(warnings.join('')).toContain('"skippedDays":101');
    });

    it('an empty window or an integration without items writes nothing', async () => {
      expect(await run(payload(at('03-02T00:00'), at('03-02T00:00')))).toBe(0);
      expect(await run({ ...payload(null, null), integrationId: '00000000-0000-7000-8000-000000000000' })).toBe(0);
      expect(await metrics()).toEqual([]);
    });

    it('writes nothing for an integration deleted before the handler ran', async () => {
      const gone = await insertIntegration(t.db, ORG);
      await t.db.query(`DELETE FROM ${t.db.schema.integrations} WHERE id = $1`, [gone]);
      expect(await run({ ...payload(at('03-02T00:00'), at('03-05T00:00')), integrationId: gone })).toBe(0);
      expect(await run({ ...payload(at('03-02T00:00'), at('03-05T00:00')), orgId: 'another-org' })).toBe(0);
      const { rows } = await t.db.query(`SELECT 1 FROM ${t.db.schema.table('work_item_metrics_daily')}`);
      expect(rows).toEqual([]);
    });

    it('serves integrations of the providers that write work items', () => {
      const integration = (provider: string): IntegrationInfo => ({
        id: 'i',
        orgId: ORG,
        provider,
        name: 'n',
        config: {},
      });
      expect(workItemMetricsHandler.name).toBe(WORK_ITEM_METRICS);
      expect(
        ['github', 'linear', 'jira', 'synthetic'].map((p) => workItemMetricsHandler.appliesTo!(integration(p))),
      ).toEqual([true, true, true, false]);
    });
  });
}

metricsSuite('PostgreSQL', () => createTestDatabase({ poolSize: 2 }));

metricsSuite('PGlite', async () => {
  const db = await PgliteDb.open();
  await migrate(db);
  return { db, drop: () => db.close() };
});

describe('metricsDays', () => {
  const d = (iso: string) => new Date(iso);
  it('keeps every UTC day a window touches, partial days included', () => {
    expect(
      metricsDays({ from: d('2026-03-02T23:00:00Z'), to: d('2026-03-03T00:00:01Z') }, d('2026-04-01T00:00:00Z'), null),
    ).toEqual({
      firstDay: '2026-03-02',
      lastDay: '2026-03-03',
      skippedDays: 0,
    });
  });
  it('caps the days from the end of the window', () => {
    expect(
      metricsDays(
        { from: d('2026-01-01T00:00:00Z'), to: d('2026-01-11T00:00:00Z') },
        d('2026-04-01T00:00:00Z'),
        null,
        3,
      ),
    ).toEqual({
      firstDay: '2026-01-08',
      lastDay: '2026-01-10',
      skippedDays: 7,
    });
  });
  it('starts an unbounded window at the first item and ends it now; nothing without items', () => {
    const now = d('2026-01-03T05:00:00Z');
    expect(metricsDays({ from: null, to: null }, now, d('2026-01-01T12:00:00Z'))).toMatchObject({
      firstDay: '2026-01-01',
      lastDay: '2026-01-03',
    });
    expect(metricsDays({ from: null, to: null }, now, null)).toBeNull();
  });
});

describe('work-item-metrics and a concurrent purge (PostgreSQL)', () => {
  it('a purge started while the handler’s transaction is open waits for it and deletes its generation', async () => {
    const t = await createTestDatabase({ poolSize: 4 });
    let release = () => {};
    try {
      const id = await insertIntegration(t.db, ORG);
      await t.db.query(
        `INSERT INTO ${t.db.schema.table('work_items')} (org_id, integration_id, provider, external_id, last_synced_at,
                                                         created_at)
         VALUES ($1, $2, 'github', '1', now(), '2026-03-02T10:00:00Z')`,
        [ORG, id],
      );
      const clock = new ManualClock(NOW);
      const logger = pino({ level: 'silent' });
      const gate = new Promise<void>((r) => (release = r));
      let written = 0;
      const handler = t.db.transaction(async (tx) => {
        written = await computeWorkItemMetrics(
          { ...basePayload(id), window: { from: at('03-02T00:00'), to: at('03-03T00:00') } },
          { tx, idempotencyKey: 'k', clock, logger },
        );
        await gate;
      });
      await waitFor(async () => written > 0);
      const deletion = deleteIntegration(t.db, id, { orgId: ORG, purgeData: true });
      // The deletion is blocked on the integration row the handler holds.
      await waitFor(async () => {
        const { rows } = await t.db.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return rows.length > 0;
      });
      release();
      await handler;
      const done = await deletion;
      expect(done.purged?.work_item_metrics_daily).toBe(1);
      const { rows } = await t.db.query(
        `SELECT 1 FROM ${t.db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1`,
        [id],
      );
      expect(rows).toEqual([]);
    } finally {
      release();
      await t.drop();
    }
  });
});

describe('work-item-metrics of two runs ending side by side (PostgreSQL)', () => {
  it('two handlers computing at the same instant both succeed: one generation, the later figures', async () => {
    const t = await createTestDatabase({ poolSize: 4 });
    let release = () => {};
    try {
      const id = await insertIntegration(t.db, ORG);
      await t.db.query(
        `INSERT INTO ${t.db.schema.table('work_items')} (org_id, integration_id, provider, external_id, last_synced_at,
                                                         created_at)
         VALUES ($1, $2, 'github', '1', now(), '2026-03-02T10:00:00Z')`,
        [ORG, id],
      );
      const clock = new ManualClock(NOW);
      const logger = pino({ level: 'silent' });
      const payload = { ...basePayload(id), window: { from: at('03-02T00:00'), to: at('03-03T00:00') } };
      const gate = new Promise<void>((r) => (release = r));
      let first = 0;
      // The first handler's generation is written and not committed when the second computes its own.
      const held = t.db.transaction(async (tx) => {
        first = await computeWorkItemMetrics(payload, { tx, idempotencyKey: 'a', clock, logger });
        await gate;
      });
      await waitFor(async () => first > 0);
      await t.db.query(
        `INSERT INTO ${t.db.schema.table('work_items')} (org_id, integration_id, provider, external_id, last_synced_at,
                                                         created_at)
         VALUES ($1, $2, 'github', '2', now(), '2026-03-02T11:00:00Z')`,
        [ORG, id],
      );
      const second = t.db.transaction((tx) =>
        computeWorkItemMetrics(payload, { tx, idempotencyKey: 'b', clock, logger }),
      );
      release();
      await held;
      expect(await second).toBe(first);
      const { rows } = await t.db.query<{ day: string; items_created: number }>(
        `SELECT to_char(day, 'YYYY-MM-DD') AS day, items_created
           FROM ${t.db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1 ORDER BY day`,
        [id],
      );
      expect(rows.find((r) => r.day === '2026-03-02')?.items_created).toBe(2);
    } finally {
      release();
      await t.drop();
    }
  });
});

function basePayload(integrationId: string): PostSyncPayload {
  return {
    orgId: ORG,
    runId: '00000000-0000-0000-0000-000000000002',
    integrationId,
    provider: 'github',
    datasets: ['work-items'],
    window: { from: null, to: null },
  };
}
