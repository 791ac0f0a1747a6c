import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, type Clock } from '../../src/clock.js';
import type { Tx } from '../../src/db/types.js';
import { LeaseLostError, ValidationError } from '../../src/errors.js';
import type { LeaseGuard } from '../../src/sdk/types.js';
import { PostgresSink } from '../../src/sinks/postgres.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const ORG = 'org-sink';
const T0 = Date.UTC(2026, 0, 10, 12);

/** The fence the engine's guard implements: the unit row locked FOR SHARE, owner + running + live lease. */
function testGuard(db: Tx, unitId: string, owner: string, clock: Clock): LeaseGuard {
  const check = async (tx: Tx) => {
    const res = await tx.query(
      `SELECT 1 FROM syncrelay.sync_run_units
        WHERE id = $1 AND lease_owner = $2 AND status = 'running' AND lease_expires_at > $3 FOR SHARE`,
      [unitId, owner, clock.now()],
    );
    if (res.rowCount === 0) throw new LeaseLostError(unitId);
  };
  return { unitId, owner, assertHeld: () => check(db), assertHeldIn: check };
}

describe('PostgresSink', () => {
  let t: TestDatabase;
  let sink: PostgresSink;
  let integrationId: string;
  let runId: string;
  const clock = new ManualClock(T0);

  beforeAll(async () => {
    t = await createTestDatabase();
    // A plain table name is in the install's schema (syncrelay in tests): the sink's tables are made there.
    await t.db.exec(`CREATE TABLE syncrelay.sink_things (
      org_id text NOT NULL, scope text NOT NULL, key text NOT NULL,
      label text, doc jsonb, version integer NOT NULL DEFAULT 1,
      PRIMARY KEY (scope, key));
      CREATE TABLE syncrelay.sink_log (scope text NOT NULL, key text NOT NULL, PRIMARY KEY (scope, key))`);
    sink = new PostgresSink(t.db, {
      things: {
        table: 'sink_things',
        conflictColumns: ['scope', 'key'],
        columns: ['org_id', 'scope', 'key', 'label', 'doc', 'version'],
        jsonColumns: ['doc'],
        retrySafe: true,
      },
      log: { table: 'sink_log', conflictColumns: ['scope', 'key'], columns: ['scope', 'key'], retrySafe: false },
    });
    const integ = await t.db.query<{ id: string }>(
      `INSERT INTO syncrelay.integrations (org_id, provider, name) VALUES ($1, 'synthetic', 'sink test') RETURNING id`,
      [ORG],
    );
    integrationId = integ.rows[0]!.id;
    const run = await t.db.query<{ id: string }>(
      `INSERT INTO syncrelay.sync_runs (org_id, integration_id, triggered_by, mode, status)
       VALUES ($1, $2, 'manual', 'backfill', 'dispatching') RETURNING id`,
      [ORG, integrationId],
    );
    runId = run.rows[0]!.id;
  });
  afterAll(async () => {
    await t.drop();
  });
  beforeEach(async () => {
    clock.set(T0);
    await t.db.query('DELETE FROM syncrelay.sink_things');
    await t.db.query('DELETE FROM syncrelay.sink_log');
  });

  async function unit(opts: { owner?: string; status?: string; leaseMs?: number } = {}): Promise<string> {
    const res = await t.db.query<{ id: string }>(
      `INSERT INTO syncrelay.sync_run_units (org_id, sync_run_id, integration_id, provider, dataset_key, tier,
                                   cost_class, mode, status, attempts, lease_owner, lease_expires_at)
       VALUES ($1, $2, $3, 'synthetic', 'work-items', 'work_item', 'standard', 'backfill', $4, 1, $5, $6)
       RETURNING id`,
      [
        ORG,
        runId,
        integrationId,
        opts.status ?? 'running',
        opts.owner ?? 'owner-a',
        new Date(T0 + (opts.leaseMs ?? 60_000)),
      ],
    );
    return res.rows[0]!.id;
  }

  const rows = (n: number, label = 'v1') =>
    Array.from({ length: n }, (_, i) => ({ org_id: ORG, scope: 's1', key: `k${i}`, label, doc: { i, tags: ['a'] } }));

  async function things(): Promise<{ key: string; label: string; doc: unknown; version: number }[]> {
    const res = await t.db.query<{ key: string; label: string; doc: unknown; version: number }>(
      'SELECT key, label, doc, version FROM syncrelay.sink_things ORDER BY key',
    );
    return res.rows;
  }

  it('declares its surfaces and which are retry-safe', () => {
    expect(sink.name).toBe('postgres');
    expect(sink.surfaces).toEqual(['things', 'log']);
    expect(sink.retrySafeSurfaces).toEqual(['things']);
  });

  it('writes under a live lease and returns the rows written', async () => {
    const id = await unit();
    expect(await sink.write(testGuard(t.db, id, 'owner-a', clock), 'things', rows(3))).toBe(3);
    const got = await things();
    expect(got.map((r) => r.key)).toEqual(['k0', 'k1', 'k2']);
    expect(got[1]).toMatchObject({ label: 'v1', doc: { i: 1, tags: ['a'] }, version: 1 });
  });

  it.each([
    ['a wrong owner', { owner: 'owner-b' }],
    ['an expired lease', { leaseMs: -1 }],
    ['a lease expiring exactly now', { leaseMs: 0 }],
    ['a unit no longer running', { status: 'retrying' }],
    ['a finished unit', { status: 'success' }],
  ])('throws LeaseLostError and writes nothing under %s', async (_label, opts) => {
    const owner = 'owner-a';
    const id = await unit(opts);
    const err = await sink.write(testGuard(t.db, id, owner, clock), 'things', rows(3)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LeaseLostError);
    expect((err as LeaseLostError).unitId).toBe(id);
    expect(await things()).toEqual([]);
  });

  it('fences out a write once the lease moved on as the clock passes expiry', async () => {
    const id = await unit({ leaseMs: 1000 });
    const guard = testGuard(t.db, id, 'owner-a', clock);
    expect(await sink.write(guard, 'things', rows(1))).toBe(1);
    clock.advance(1000);
    await expect(sink.write(guard, 'things', rows(2, 'late'))).rejects.toBeInstanceOf(LeaseLostError);
    expect(await things()).toMatchObject([{ key: 'k0', label: 'v1' }]);
  });

  it('upserts idempotently: the same rows twice leave one copy; a changed row updates in place', async () => {
    const id = await unit();
    const guard = testGuard(t.db, id, 'owner-a', clock);
    await sink.write(guard, 'things', rows(3));
    await sink.write(guard, 'things', rows(3));
    expect(await things()).toHaveLength(3);
    expect(await sink.write(guard, 'things', [{ org_id: ORG, scope: 's1', key: 'k1', label: 'v2', version: 7 }])).toBe(
      1,
    );
    const got = await things();
    expect(got).toHaveLength(3);
    expect(got[1]).toMatchObject({ key: 'k1', label: 'v2', version: 7 });
    expect(got[0]).toMatchObject({ key: 'k0', label: 'v1', version: 1 });
  });

  it('keeps the last of two rows with one key in a batch', async () => {
    const id = await unit();
    const batch = [
      { org_id: ORG, scope: 's1', key: 'dup', label: 'first' },
      { org_id: ORG, scope: 's1', key: 'dup', label: 'second' },
    ];
    expect(await sink.write(testGuard(t.db, id, 'owner-a', clock), 'things', batch)).toBe(1);
    expect(await things()).toMatchObject([{ key: 'dup', label: 'second' }]);
  });

  it('does nothing on conflict for a surface whose columns are all key columns', async () => {
    const id = await unit();
    const guard = testGuard(t.db, id, 'owner-a', clock);
    expect(await sink.write(guard, 'log', [{ scope: 's1', key: 'k0' }])).toBe(1);
    expect(
      await sink.write(guard, 'log', [
        { scope: 's1', key: 'k0' },
        { scope: 's1', key: 'k9' },
      ]),
    ).toBe(1);
    const res = await t.db.query<{ key: string }>('SELECT key FROM syncrelay.sink_log ORDER BY key');
    expect(res.rows.map((r) => r.key)).toEqual(['k0', 'k9']);
  });

  it('splits a batch larger than the bound-parameter limit into statements of one transaction', async () => {
    const id = await unit();
    const big = Array.from({ length: 14_000 }, (_, i) => ({
      org_id: ORG,
      scope: 'big',
      key: `k${i}`,
      label: 'x',
      doc: null,
    }));
    expect(await sink.write(testGuard(t.db, id, 'owner-a', clock), 'things', big)).toBe(14_000);
    const res = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM syncrelay.sink_things WHERE scope = 'big'`,
    );
    expect(res.rows[0]!.n).toBe(14_000);
  });

  it("a surface's hooks run in the write's transaction, around the upserts; a failing one writes nothing", async () => {
    const seen: string[] = [];
    const count = async (tx: Tx) =>
      (await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM syncrelay.sink_things')).rows[0]!.n;
    let fail = false;
    const hooked = new PostgresSink(t.db, {
      things: {
        table: 'sink_things',
        conflictColumns: ['scope', 'key'],
        columns: ['org_id', 'scope', 'key', 'label'],
        retrySafe: true,
        hooks: {
          before: async (tx, batch) => void seen.push(`before ${batch.length} rows, ${await count(tx)} stored`),
          after: async (tx, batch) => {
            seen.push(`after ${batch.length} rows, ${await count(tx)} stored`);
            if (fail) throw new Error('after failed');
          },
        },
      },
    });
    const guard = testGuard(t.db, await unit(), 'owner-a', clock);
    const batch = [...rows(2).map(({ doc: _doc, ...r }) => r), { org_id: ORG, scope: 's1', key: 'k0', label: 'v2' }];
    expect(await hooked.write(guard, 'things', batch)).toBe(2);
    // The hooks get the batch as written (the two rows for k0 are one), and see the upserts after them.
    expect(seen).toEqual(['before 2 rows, 0 stored', 'after 2 rows, 2 stored']);
    fail = true;
    await expect(
      hooked.write(
        guard,
        'things',
        rows(4).map(({ doc: _doc, ...r }) => r),
      ),
    ).rejects.toThrow('after failed');
    expect((await things()).map((r) => [r.key, r.label])).toEqual([
      ['k0', 'v2'],
      ['k1', 'v1'],
    ]);
    const fenced = testGuard(t.db, await unit({ owner: 'owner-b' }), 'owner-a', clock);
    seen.length = 0;
    const one = rows(1).map(({ doc: _doc, ...r }) => r);
    await expect(hooked.write(fenced, 'things', one)).rejects.toBeInstanceOf(LeaseLostError);
    expect(seen).toEqual([]);
  });

  it('rejects an unknown surface or column with a ValidationError naming it, writing nothing', async () => {
    const id = await unit();
    const guard = testGuard(t.db, id, 'owner-a', clock);
    const surface = await sink.write(guard, 'nope', rows(1)).catch((e: unknown) => e);
    expect(surface).toBeInstanceOf(ValidationError);
    expect((surface as Error).message).toContain('nope');
    const column = await sink
      .write(guard, 'things', [...rows(2), { org_id: ORG, scope: 's1', key: 'k9', bogus: 1 }])
      .catch((e: unknown) => e);
    expect(column).toBeInstanceOf(ValidationError);
    expect((column as ValidationError).field).toBe('things.bogus');
    const missingKey = await sink.write(guard, 'things', [{ org_id: ORG, scope: 's1' }]).catch((e: unknown) => e);
    expect((missingKey as ValidationError).field).toBe('things.key');
    expect(await things()).toEqual([]);
  });

  it('quotes identifiers: a hostile column name is only ever an identifier', async () => {
    await t.db.exec(
      `CREATE TABLE syncrelay."odd ""names""" ("k" text PRIMARY KEY, "we""ird; DROP TABLE sink_things; --" text)`,
    );
    const odd = new PostgresSink(t.db, {
      odd: {
        table: 'odd "names"',
        conflictColumns: ['k'],
        columns: ['k', 'we"ird; DROP TABLE sink_things; --'],
        retrySafe: true,
      },
    });
    const id = await unit();
    await odd.write(testGuard(t.db, id, 'owner-a', clock), 'odd', [
      { k: '1', 'we"ird; DROP TABLE sink_things; --': "'); --" },
    ]);
    const res = await t.db.query<Record<string, string>>(`SELECT * FROM syncrelay."odd ""names"""`);
    expect(res.rows).toEqual([{ k: '1', 'we"ird; DROP TABLE sink_things; --': "'); --" }]);
    expect(await things()).toEqual([]);
  });

  it('a takeover committed while the write waits on the unit row fences the write out', async () => {
    const id = await unit();
    const other = new pg.Client({ connectionString: t.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`UPDATE syncrelay.sync_run_units SET lease_owner = 'owner-b' WHERE id = $1`, [id]);
      const write = sink.write(testGuard(t.db, id, 'owner-a', clock), 'things', rows(2)).catch((e: unknown) => e);
      await waitForLockWaiters(t, 1);
      await other.query('COMMIT');
      expect(await write).toBeInstanceOf(LeaseLostError);
      expect(await things()).toEqual([]);
    } finally {
      await other.end();
    }
  });

  it('holds the unit row FOR SHARE until the write commits: a takeover waits for it', async () => {
    const id = await unit();
    const other = new pg.Client({ connectionString: t.url });
    await other.connect();
    try {
      const events: string[] = [];
      let takeover: Promise<unknown> = Promise.resolve();
      const base = testGuard(t.db, id, 'owner-a', clock);
      const guard: LeaseGuard = {
        ...base,
        async assertHeldIn(tx) {
          await base.assertHeldIn(tx);
          takeover = other
            .query(`UPDATE syncrelay.sync_run_units SET lease_owner = 'owner-b' WHERE id = $1`, [id])
            .then(() => events.push('takeover'));
          await waitForLockWaiters(t, 1);
          events.push('fenced write continues');
        },
      };
      expect(await sink.write(guard, 'things', rows(2))).toBe(2);
      events.push('write committed');
      await takeover;
      expect(events).toEqual(['fenced write continues', 'write committed', 'takeover']);
      expect(await things()).toHaveLength(2);
    } finally {
      await other.end();
    }
  });
});

/** Polls pg_stat_activity until `n` sessions of this database wait on a lock (bounded, no fixed sleep). */
async function waitForLockWaiters(t: TestDatabase, n: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const res = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (res.rows[0]!.n >= n) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('no session started waiting on a lock');
}
