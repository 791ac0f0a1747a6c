/**
 * Retention of Idempotency-Key answers: the reconciler pass deletes records older than
 * SYNC_IDEMPOTENCY_RETENTION_HOURS in bounded batches, keeps newer ones, and counts what it pruned
 * (`pruned_idempotency`) in its counters and in reconciler_passes.
 */
import { afterEach, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { reconcilePass } from '../../src/reconciler/pass.js';
import { insertIdempotencyRecord } from '../../src/store/idempotency.js';
import { openTestEngine, type TestEngine } from '../helpers/engine.js';

const HOUR = 3_600_000;
const NOW = new Date('2026-03-01T12:00:00Z');

let h: TestEngine | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function keys(te: TestEngine): Promise<string[]> {
  const { rows } = await te.engine.db.query<{ key: string }>(
    `SELECT key FROM ${te.engine.db.schema.idempotency_keys} ORDER BY key`,
  );
  return rows.map((r) => r.key);
}

it('prunes records past the retention, keeps the others, and reports the count', async () => {
  const clock = new ManualClock(NOW);
  h = await openTestEngine({ clock, settings: { idempotencyRetentionMs: 24 * HOUR } });
  const { db } = h.engine;
  const record = (key: string, ageMs: number) =>
    insertIdempotencyRecord(
      db,
      { orgId: 'org-p', key, requestHash: 'h', statusCode: 202, response: { ok: key } },
      new Date(NOW.getTime() - ageMs),
    );
  await record('a-week-old', 7 * 24 * HOUR);
  await record('a-day-and-a-minute', 24 * HOUR + 60_000);
  await record('exactly-a-day', 24 * HOUR);
  await record('an-hour', HOUR);
  await record('just-now', 0);

  const counters = await reconcilePass(h.engine.ctx, 'prune-test');
  expect(counters.pruned_idempotency).toBe(2);
  expect(await keys(h)).toEqual(['an-hour', 'exactly-a-day', 'just-now']);
  const { rows } = await db.query<{ n: number }>(
    `SELECT (counters ->> 'pruned_idempotency')::int AS n FROM ${db.schema.reconciler_passes}
      WHERE reconciler = 'prune-test'`,
  );
  expect(rows).toEqual([{ n: 2 }]);

  // An hour later the day-old record has aged out too; nothing else changes.
  clock.set(new Date(NOW.getTime() + HOUR));
  expect((await reconcilePass(h.engine.ctx)).pruned_idempotency).toBe(1);
  expect(await keys(h)).toEqual(['an-hour', 'just-now']);
  expect((await reconcilePass(h.engine.ctx)).pruned_idempotency).toBe(0);
});

it('deletes in bounded batches: at most ten batches of ten scan batches per pass', async () => {
  const clock = new ManualClock(NOW);
  // reconcileBatch 1 → batches of 10 rows, at most 100 rows per pass.
  h = await openTestEngine({ clock, settings: { idempotencyRetentionMs: HOUR, reconcileBatch: 1 } });
  const { db } = h.engine;
  await db.query(
    `INSERT INTO ${db.schema.idempotency_keys} (org_id, key, request_hash, status_code, response, created_at)
     SELECT 'org-p', 'old-' || i, 'h', 202, '{}'::jsonb, $1::timestamptz - make_interval(mins => i)
       FROM generate_series(61, 210) AS i`,
    [NOW],
  );
  await insertIdempotencyRecord(
    db,
    { orgId: 'org-p', key: 'fresh', requestHash: 'h', statusCode: 201, response: {} },
    NOW,
  );
  expect((await reconcilePass(h.engine.ctx)).pruned_idempotency).toBe(100);
  expect((await keys(h)).length).toBe(51);
  expect((await reconcilePass(h.engine.ctx)).pruned_idempotency).toBe(50);
  expect(await keys(h)).toEqual(['fresh']);
});
