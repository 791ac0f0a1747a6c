/**
 * The integration's row lock (getIntegration with `lock`) serialises what decides about the
 * integration — triggers, arming a webhook run, credential and secret changes — and nothing else:
 * a transaction that only writes a row referencing the integration (a webhook delivery that joins
 * or is remembered, a source, a run) takes a key-share lock on it by its foreign key, and must not
 * wait for a holder of the row lock. If it did, the holder waiting in turn for anything that
 * transaction holds (a delivery id it inserted, a pending-run row) was a deadlock: PostgreSQL broke
 * it after deadlock_timeout, a second's stall (two API processes receiving redeliveries).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Db } from '../../src/db/types.js';
import { getIntegration, insertSources } from '../../src/store/integrations.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { seedIntegration } from './seed.js';

let t: TestDatabase;
let db: Db;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 4 });
  db = t.db;
});

afterAll(async () => {
  await t?.drop();
});

it('a row referencing the integration is written while another transaction holds its lock', async () => {
  const i = await seedIntegration(db);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const holder = db.transaction(async (tx) => {
    expect(await getIntegration(tx, i.integrationId, { lock: true })).not.toBeNull();
    locked();
    await held;
  });
  await isLocked;
  try {
    // A wait for the holder would fail at once instead of hanging: lock_timeout.
    const written = await db.transaction(async (tx) => {
      await tx.query("SET LOCAL lock_timeout = '200ms'");
      return insertSources(tx, i.orgId, i.integrationId, ['acme/referencing']);
    });
    expect(written.map((s) => s.external_key)).toEqual(['acme/referencing']);
    // Another decider still waits for the holder.
    const second = db.transaction(async (tx) => {
      await tx.query("SET LOCAL lock_timeout = '200ms'");
      return getIntegration(tx, i.integrationId, { lock: true });
    });
    await expect(second).rejects.toMatchObject({ code: '55P03' });
  } finally {
    release();
    await holder;
  }
});
