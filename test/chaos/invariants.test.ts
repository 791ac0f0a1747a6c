/**
 * The chaos invariants added for breaks the bounded run used to miss, each over hand-built event
 * data: a healthy history passes and the history a break leaves behind fails, naming what is wrong.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TaskMessage } from '../../src/broker/types.js';
import { buildLeaseTable, checkNoFencedOutWrites, checkNoOverlappingLeases } from '../../src/chaos/checkLeases.js';
import {
  judgeLedger,
  judgePostSyncTrail,
  type OutboxEvent,
  type PostSyncTrail,
} from '../../src/chaos/checkPostSync.js';
import { auditTables, installAudit } from '../../src/chaos/database.js';
import { DUPLICATE_DELAYS_MS, FlakyBroker } from '../../src/chaos/flakyBroker.js';
import type { Db } from '../../src/db/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const t = (ms: number) => new Date(T0 + ms);

// --- post_sync rows from the outbox history ---------------------------------------------------------

/** One change: status, claimed?, attempts, due time (ms after T0), at (ms after T0). */
const ev = (atMs: number, status: string, claimed: boolean, attempts: number, dueMs = 0): OutboxEvent => ({
  at: t(atMs),
  status,
  claimed,
  attempts,
  availableAt: t(dueMs),
});
const trail = (events: OutboxEvent[], receipts: number[] = []): PostSyncTrail => ({
  runId: 'r1',
  events,
  receipts: receipts.map(t),
});

describe('post_sync rows, at-most-once: claimed once, marked before their publish, never pending again', () => {
  it('passes a row armed, claimed, marked, then delivered', () => {
    const ok = trail([ev(0, 'pending', false, 0), ev(10, 'pending', true, 1), ev(12, 'dispatched', false, 1)], [30]);
    expect(judgePostSyncTrail(ok, 'at-most-once')).toEqual([]);
  });

  it('passes a second claim after a claim that died or was released before its mark (nothing was published)', () => {
    const died = [ev(0, 'pending', false, 0), ev(10, 'pending', true, 1), ev(5010, 'pending', true, 2)];
    const released = [ev(0, 'pending', false, 0), ev(10, 'pending', true, 1), ev(20, 'pending', false, 1)];
    for (const events of [died, released]) {
      const done = [...events, ev(6000, 'pending', true, 3), ev(6002, 'dispatched', false, 3)];
      expect(judgePostSyncTrail(trail(done, [6100]), 'at-most-once')).toEqual([]);
    }
  });

  it('fails a row published while claimed and left for redelivery (the exactly-once path taken in this mode)', () => {
    const events = [
      ev(0, 'pending', false, 0),
      ev(10, 'pending', true, 1),
      ev(15, 'pending', false, 1, 5015),
      ev(5020, 'pending', true, 2, 5015),
      ev(5025, 'pending', false, 2, 10_025),
    ];
    const found = judgePostSyncTrail(trail(events, [14]), 'at-most-once');
    expect(found).toEqual([
      expect.stringMatching(/left pending for redelivery 2 time\(s\), first at .* by claim 1: published while claimed/),
      expect.stringMatching(/still pending after 2 claim\(s\): never marked/),
      expect.stringMatching(/delivered \(receipt at .*\) before it was marked \(never marked\) — claimed 2 time/),
    ]);
  });

  it('fails a delivery that came before the mark', () => {
    const events = [ev(0, 'pending', false, 0), ev(10, 'pending', true, 1), ev(40, 'dispatched', false, 1)];
    expect(judgePostSyncTrail(trail(events, [25]), 'at-most-once')).toEqual([
      expect.stringMatching(/delivered \(receipt at 2030-01-01T00:00:00.025Z\) before it was marked \(at .*\.040Z\)/),
    ]);
  });

  it('fails a row that returns to pending, or is claimed or marked again, after its mark', () => {
    const events = [
      ev(0, 'pending', false, 0),
      ev(10, 'pending', true, 1),
      ev(12, 'dispatched', false, 1),
      ev(900, 'pending', false, 1),
      ev(950, 'pending', true, 2),
      ev(952, 'dispatched', false, 2),
    ];
    expect(judgePostSyncTrail(trail(events, [30]), 'at-most-once')).toEqual([
      expect.stringMatching(/returned to pending at .*\.900Z, after it was marked/),
      expect.stringMatching(/claimed again at .*\.950Z, after it was marked/),
      expect.stringMatching(/marked a second time/),
    ]);
  });
});

describe('post_sync rows, exactly-once: acknowledged once, after their receipts', () => {
  const published = [ev(0, 'pending', false, 0), ev(10, 'pending', true, 1), ev(15, 'pending', false, 1, 5015)];

  it('passes a row published while claimed, then acknowledged after the receipt', () => {
    expect(judgePostSyncTrail(trail([...published, ev(60, 'dispatched', false, 1)], [40]), 'exactly-once')).toEqual([]);
  });

  it('fails an acknowledgement before the receipt, and a row never acknowledged', () => {
    expect(judgePostSyncTrail(trail([...published, ev(30, 'dispatched', false, 1)], [40]), 'exactly-once')).toEqual([
      expect.stringMatching(/acknowledged at .*\.030Z, before its receipt at .*\.040Z/),
    ]);
    expect(judgePostSyncTrail(trail(published, []), 'exactly-once')).toEqual([
      expect.stringMatching(/still pending after 1 claim\(s\): never acked/),
    ]);
  });
});

describe('the once-only ledger', () => {
  const run = { runId: 'r1', status: 'success', successes: 3, ledgerRows: 1, postSyncRows: 1 };

  it('passes one ledger row and one post_sync row, and none for a run without successful units', () => {
    expect(judgeLedger(run)).toEqual([]);
    expect(judgeLedger({ ...run, status: 'cancelled', successes: 0, ledgerRows: 0, postSyncRows: 0 })).toEqual([]);
  });

  it('fails a run with successful units but no ledger row (ledger off), or two of either row', () => {
    expect(judgeLedger({ ...run, ledgerRows: 0 })).toEqual([
      'run r1 (success, 3 successful units): no sync_run_post_dispatches row',
    ]);
    expect(judgeLedger({ ...run, postSyncRows: 0 })).toEqual([
      'run r1 (success, 3 successful units): no post_sync outbox row',
    ]);
    expect(judgeLedger({ ...run, ledgerRows: 2, postSyncRows: 2 })).toHaveLength(2);
  });
});

// --- leases and fenced writes, from hand-written audit rows in a real database ----------------------

describe('leases and sink writes, timed by the database', () => {
  let tdb: TestDatabase;
  let db: Db;
  const U = '00000000-0000-7000-8000-00000000000';

  beforeAll(async () => {
    tdb = await createTestDatabase({ poolSize: 2 });
    db = tdb.db;
    await installAudit(db);
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  async function reset(): Promise<void> {
    const a = auditTables(db.schema);
    await db.query(`TRUNCATE ${a.unitEvents}, ${a.itemWrites}`);
  }

  /** A unit change: status old → new, owner old → new, lease expiry (ms after T0), at (ms after T0). */
  async function unitEvent(
    unit: string,
    atMs: number,
    [oldStatus, newStatus]: [string | null, string],
    [oldOwner, newOwner]: [string | null, string | null],
    expiresMs: number | null = null,
  ): Promise<void> {
    await db.query(
      `INSERT INTO ${auditTables(db.schema).unitEvents}
         (at, unit_id, old_status, new_status, old_owner, new_owner, lease_expires_at, mode)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'backfill')`,
      [t(atMs), unit, oldStatus, newStatus, oldOwner, newOwner, expiresMs === null ? null : t(expiresMs)],
    );
  }

  /** One write statement of `rows` rows by `owner`, at `atMs` by the database's clock. */
  async function write(unit: string, owner: string, atMs: number, rows = 2): Promise<void> {
    const keys = Array.from({ length: rows }, (_, i) => `k${i + 1}`);
    await db.query(
      `INSERT INTO ${auditTables(db.schema).itemWrites} (at, unit_id, lease_owner, item_key)
       SELECT $1, $2, $3, unnest($4::text[])`,
      [t(atMs), unit, owner, keys],
    );
  }

  async function check() {
    const leases = await buildLeaseTable(db);
    return { overlap: await checkNoOverlappingLeases(db, leases), fence: await checkNoFencedOutWrites(db) };
  }

  /** Unit 1 claimed by A (lease to 2 s), A's lease expired by the reconciler at 3 s, then B's claim at 4 s. */
  async function handedOver(): Promise<void> {
    const u = `${U}1`;
    await unitEvent(u, 0, ['dispatching', 'running'], [null, 'A'], 2000);
    await unitEvent(u, 500, ['running', 'running'], ['A', 'A'], 2500);
    await unitEvent(u, 3000, ['running', 'retrying'], ['A', 'A'], 2500);
    await unitEvent(u, 3600, ['retrying', 'dispatching'], ['A', null]);
    await unitEvent(u, 4000, ['dispatching', 'running'], [null, 'B'], 6000);
    await unitEvent(u, 4500, ['running', 'success'], ['B', 'B'], 6000);
  }

  it('passes writes inside their leases, up to the moment the lease is handed on', async () => {
    await reset();
    await handedOver();
    await write(`${U}1`, 'A', 400);
    await write(`${U}1`, 'A', 2999); // past the expiry its fence saw, before the expiry was recorded
    await write(`${U}1`, 'B', 4400);
    const { overlap, fence } = await check();
    expect(overlap).toMatchObject({ ok: true, checked: '2 leases, 0 provider executions' });
    expect(fence).toMatchObject({ ok: true, checked: '6 row writes in 3 transactions, timed by the database' });
  });

  it('fails a write made after the unit left its lease (fencing off)', async () => {
    await reset();
    await handedOver();
    await write(`${U}1`, 'A', 3700, 3);
    await write(`${U}1`, 'B', 4400);
    await write(`${U}1`, 'C', 4450, 1);
    const { fence } = await check();
    expect(fence.ok).toBe(false);
    expect(fence.examples).toEqual([
      expect.stringMatching(
        new RegExp(
          `unit ${U}1: 3 row\\(s\\) \\(k1…\\) written by A at .*03\\.700Z, 700 ms after the unit left ` +
            'that lease \\(retrying at .*03\\.000Z\\)',
        ),
      ),
      `unit ${U}1: 1 row(s) (k1…) written by C, an owner that never held a lease of that unit`,
    ]);
  });

  it('fails a claim that takes a unit while another owner still holds it (claim CAS weakened)', async () => {
    await reset();
    const u = `${U}2`;
    await unitEvent(u, 0, ['dispatching', 'running'], [null, 'A'], 2000);
    await unitEvent(u, 700, ['running', 'running'], ['A', 'B'], 2700);
    await unitEvent(u, 1200, ['running', 'success'], ['B', 'B'], 2700);
    const { overlap } = await check();
    expect(overlap.ok).toBe(false);
    expect(overlap.examples).toEqual([
      `unit ${u}: leases A and B overlap by 500 ms (B claimed the unit while A still held it)`,
    ]);
  });
});

// --- the duplicate-delivery fault's broker ------------------------------------------------------------

describe('duplicate delivery', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('publishes a chosen message again at once, while it runs and after it ended, under new job ids', async () => {
    vi.useFakeTimers();
    const published: TaskMessage[][] = [];
    const inner = {
      kind: 'bullmq' as const,
      publish: async (m: readonly TaskMessage[]) => void published.push([...m]),
      consume: () => ({ inFlight: () => 0, close: async () => undefined }),
      ping: async () => undefined,
      close: async () => undefined,
    };
    // The first message is chosen and its copies' delays drawn at their minimum; the second is not chosen.
    const draws = [0.1, 0, 0, 0, 0.9];
    const copies: string[] = [];
    const broker = new FlakyBroker(
      inner,
      () => draws.shift() ?? 0,
      () => undefined,
      (m) => copies.push(m.jobId),
    );
    broker.duplicateRate = 0.5;
    const msg = (jobId: string): TaskMessage => ({ name: 'run_sync_unit', payload: { orgId: 'o', runId: 'r' }, jobId });
    await broker.publish([msg('run_sync_unit.u1.1'), msg('run_sync_unit.u2.1')]);
    expect(published).toHaveLength(1);
    expect(DUPLICATE_DELAYS_MS.map(([min]) => min)).toEqual([0, 300, 2000]);
    await vi.advanceTimersByTimeAsync(0);
    expect(copies).toEqual(['run_sync_unit.u1.1.dup1']);
    await vi.advanceTimersByTimeAsync(300);
    expect(copies).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1700);
    expect(copies).toEqual(['run_sync_unit.u1.1.dup1', 'run_sync_unit.u1.1.dup2', 'run_sync_unit.u1.1.dup3']);
    expect(published.slice(1).map((b) => b.map((m) => m.jobId))).toEqual(copies.map((c) => [c]));
    broker.duplicateRate = 0;
    await broker.publish([msg('run_sync_unit.u3.1')]);
    await vi.advanceTimersByTimeAsync(5000);
    expect(published).toHaveLength(5);
  });
});
