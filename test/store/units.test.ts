/**
 * The unit statements (SPEC §3, §5) against real PostgreSQL, on virtual time: the claim CAS, the
 * heartbeat, the terminal CAS, the fence (FOR SHARE), the resume checkpoint of a deferral, and the
 * dispatch statements under the caps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/types.js';
import type { UnitStatus } from '../../src/domain/statuses.js';
import { claimDispatchCandidates, countActiveInBucket, denyUnits, lockBuckets } from '../../src/store/dispatch.js';
import { expireToFailed, expireToRetrying } from '../../src/store/reconcile.js';
import { cancelOpenUnits, getRun, setPlannedUnits } from '../../src/store/runs.js';
import type { Bucket } from '../../src/store/rows.js';
import {
  claimUnit,
  extendLease,
  finishUnit,
  finishUnits,
  lockLeaseIfHeld,
  retryOwnUnit,
  type ClaimArgs,
  type RetryArgs,
} from '../../src/store/units.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { at, SEC, seedIntegration, seedRun, seedUnits, setRunStatus, setUnit, unit, type UnitSpec } from './seed.js';

const LEASE = 2 * SEC;
const LIFETIME = 10 * SEC;
const OWNER = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';
/** Units are set up relative to this instant; statements run a little after it. */
const NOW = new Date('2030-06-01T12:00:00.000Z');
const STALE_MS = 900 * SEC;
const STALE_BEFORE = at(NOW, -STALE_MS);

let t: TestDatabase;
let db: Db;
let integ: { orgId: string; integrationId: string };

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 12 });
  db = t.db;
  integ = await seedIntegration(db);
});
afterAll(async () => {
  await t?.drop();
});

/** A fresh live run with the given units. */
async function runWith(specs: readonly UnitSpec[]): Promise<{ runId: string; ids: string[] }> {
  const runId = await seedRun(db, integ, { status: 'dispatching' });
  return { runId, ids: await seedUnits(db, integ, runId, specs) };
}

const dispatching: UnitSpec = { set: { status: 'dispatching', dispatched_at: NOW, updated_at: NOW } };

/** A unit claimed at `startedAt` under OWNER, lease until `expiresAt`. */
function running(startedAt: Date, expiresAt: Date | null, owner = OWNER): UnitSpec {
  return {
    set: { status: 'running', lease_owner: owner, started_at: startedAt, lease_expires_at: expiresAt, attempts: 1 },
  };
}

function claimArgs(unitId: string, now: Date, owner = OWNER, leaseMs = LEASE, maxLifetimeMs = LIFETIME): ClaimArgs {
  return { unitId, owner, now, leaseMs, maxLifetimeMs };
}

describe('claimUnit (dispatching → running)', () => {
  it('takes a new owner, attempts+1, started_at = now and lease = now + lease', async () => {
    const { ids } = await runWith([dispatching]);
    const row = await claimUnit(db, claimArgs(ids[0]!, NOW));
    expect(row).toMatchObject({
      status: 'running',
      lease_owner: OWNER,
      attempts: 1,
      started_at: NOW,
      last_heartbeat_at: NOW,
      lease_expires_at: at(NOW, LEASE),
    });
  });

  it('never gives a first lease longer than the max lifetime', async () => {
    const { ids } = await runWith([dispatching]);
    const row = await claimUnit(db, claimArgs(ids[0]!, NOW, OWNER, 30 * SEC, 5 * SEC));
    expect(row!.lease_expires_at).toEqual(at(NOW, 5 * SEC));
  });

  it('claims only from dispatching', async () => {
    const others: UnitStatus[] = ['planned', 'retrying', 'running', 'success', 'failed', 'cancelled'];
    const { ids } = await runWith(
      others.map((status) => ({ set: { status, lease_owner: status === 'running' ? OTHER : null } })),
    );
    for (const [i, id] of ids.entries()) {
      const before = await unit(db, id);
      expect(await claimUnit(db, claimArgs(id, NOW)), others[i]).toBeNull();
      expect(await unit(db, id)).toEqual(before);
    }
  });

  it('requires a live run', async () => {
    for (const status of ['success', 'partial_failed', 'failed', 'cancelled'] as const) {
      const { runId, ids } = await runWith([dispatching]);
      await setRunStatus(db, runId, status, NOW);
      expect(await claimUnit(db, claimArgs(ids[0]!, NOW)), status).toBeNull();
      expect((await unit(db, ids[0]!)).status).toBe('dispatching');
    }
  });

  it('a second claim returns null; of concurrent claimers exactly one wins', async () => {
    const { ids } = await runWith([dispatching, dispatching]);
    expect(await claimUnit(db, claimArgs(ids[0]!, NOW))).not.toBeNull();
    expect(await claimUnit(db, claimArgs(ids[0]!, at(NOW, 1), OTHER))).toBeNull();
    expect(await unit(db, ids[0]!)).toMatchObject({ lease_owner: OWNER, attempts: 1 });

    const owners = Array.from({ length: 8 }, (_, i) => `00000000-0000-4000-8000-00000000000${i}`);
    const results = await Promise.all(owners.map((o) => claimUnit(db, claimArgs(ids[1]!, NOW, o))));
    const winners = results.filter((r) => r !== null);
    expect(winners).toHaveLength(1);
    expect(await unit(db, ids[1]!)).toMatchObject({ lease_owner: winners[0]!.lease_owner, attempts: 1 });
  });
});

describe('extendLease (heartbeat)', () => {
  it('extends the owner’s live lease to now + lease', async () => {
    const { ids } = await runWith([running(NOW, at(NOW, LEASE))]);
    const now = at(NOW, 500);
    expect(await extendLease(db, claimArgs(ids[0]!, now))).toEqual(at(now, LEASE));
    expect(await unit(db, ids[0]!)).toMatchObject({ lease_expires_at: at(now, LEASE), last_heartbeat_at: now });
  });

  it('does nothing for another owner, a lapsed lease, a unit no longer running, or a terminal run', async () => {
    const lapsedAt = at(NOW, LEASE);
    const { runId, ids } = await runWith([
      running(NOW, at(NOW, LEASE)),
      running(NOW, lapsedAt),
      { set: { status: 'retrying', lease_owner: OWNER, started_at: NOW, lease_expires_at: at(NOW, LEASE) } },
    ]);
    const snapshot = async () => Promise.all(ids.map((id) => unit(db, id)));
    const before = await snapshot();
    expect(await extendLease(db, claimArgs(ids[0]!, at(NOW, 500), OTHER))).toBeNull();
    expect(await extendLease(db, claimArgs(ids[1]!, lapsedAt))).toBeNull(); // expires_at = now is not live
    expect(await extendLease(db, claimArgs(ids[2]!, at(NOW, 500)))).toBeNull();
    await setRunStatus(db, runId, 'cancelled', NOW);
    expect(await extendLease(db, claimArgs(ids[0]!, at(NOW, 500)))).toBeNull();
    expect(await snapshot()).toEqual(before);
  });

  it('never extends past started_at + max lifetime, and stops at the deadline', async () => {
    const lease = 4 * SEC;
    const { ids } = await runWith([running(NOW, at(NOW, lease))]);
    const id = ids[0]!;
    const beat = (ms: number) => extendLease(db, claimArgs(id, at(NOW, ms), OWNER, lease, LIFETIME));
    expect(await beat(3 * SEC)).toEqual(at(NOW, 7 * SEC));
    expect(await beat(6.5 * SEC)).toEqual(at(NOW, LIFETIME));
    expect(await beat(9.9 * SEC)).toEqual(at(NOW, LIFETIME));
    expect(await beat(LIFETIME)).toBeNull();
    expect((await unit(db, id)).lease_expires_at).toEqual(at(NOW, LIFETIME));
  });
});

describe('finishUnit (running → success / failed)', () => {
  const finish = (unitId: string, now: Date, owner = OWNER, status: 'success' | 'failed' = 'success') =>
    finishUnit(db, {
      unitId,
      owner,
      now,
      status,
      result: { items: 3 },
      error: null,
      touchedSurfaces: ['synthetic_items'],
    });

  it('the owner of a live lease ends the unit once', async () => {
    const { ids } = await runWith([running(NOW, at(NOW, LEASE))]);
    const row = await finish(ids[0]!, at(NOW, 1500));
    expect(row).toMatchObject({ id: ids[0], status: 'success', lease_owner: OWNER, others_open: false });
    expect(await unit(db, ids[0]!)).toMatchObject({
      status: 'success',
      lease_owner: OWNER,
      lease_expires_at: null,
      result: { items: 3 },
      touched_surfaces: ['synthetic_items'],
      duration_ms: 1500,
    });
    expect(await finish(ids[0]!, at(NOW, 1600))).toBeNull();
    expect(await finish(ids[0]!, at(NOW, 1600), OWNER, 'failed')).toBeNull();
    expect((await unit(db, ids[0]!)).status).toBe('success');
  });

  it('requires its own, live lease and a live run', async () => {
    const { runId, ids } = await runWith([running(NOW, at(NOW, LEASE)), running(NOW, at(NOW, LEASE))]);
    expect(await finish(ids[0]!, at(NOW, 500), OTHER)).toBeNull();
    expect(await finish(ids[0]!, at(NOW, LEASE))).toBeNull(); // lapsed: the reconciler's to take
    expect((await unit(db, ids[0]!)).status).toBe('running');
    await setRunStatus(db, runId, 'cancelled', NOW);
    expect(await finish(ids[1]!, at(NOW, 500))).toBeNull();
    expect((await unit(db, ids[1]!)).status).toBe('running');
  });
});

describe('the resume checkpoint: stored by the deferral CAS, kept or cleared by every other way out of running', () => {
  const CP = { v: 1, after: 'cursor-3', pages: 3, counts: { work_items: 30 } };
  const defer = (unitId: string, a: Partial<RetryArgs> = {}) =>
    retryOwnUnit(db, {
      unitId,
      owner: OWNER,
      now: at(NOW, 500),
      availableAt: at(NOW, 60 * SEC),
      reason: 'rate_limit',
      error: 'RateLimitError: limited',
      checkpoint: JSON.stringify(CP),
      ...a,
    });
  const withCheckpoint = (expiresAt: Date = at(NOW, LEASE)): UnitSpec => ({
    set: { ...running(NOW, expiresAt).set, resume_checkpoint: CP },
  });

  it('the lease holder’s deferral stores it, and the next claim returns it', async () => {
    const { ids } = await runWith([running(NOW, at(NOW, LEASE))]);
    const row = await defer(ids[0]!);
    expect(row).toMatchObject({ status: 'retrying', lease_owner: null, resume_checkpoint: CP });
    await setUnit(db, ids[0]!, { status: 'dispatching' });
    const claimed = await claimUnit(db, claimArgs(ids[0]!, at(NOW, 61 * SEC), OTHER));
    expect(claimed).toMatchObject({ attempts: 2, resume_checkpoint: CP });
  });

  it('stores nothing for another owner, a lapsed lease or a terminal run', async () => {
    const { runId, ids } = await runWith([running(NOW, at(NOW, LEASE)), running(NOW, at(NOW, LEASE))]);
    expect(await defer(ids[0]!, { owner: OTHER })).toBeNull();
    expect(await defer(ids[0]!, { now: at(NOW, LEASE) })).toBeNull();
    expect(await unit(db, ids[0]!)).toMatchObject({ status: 'running', resume_checkpoint: null });
    await setRunStatus(db, runId, 'cancelled', NOW);
    expect(await defer(ids[1]!)).toBeNull();
    expect((await unit(db, ids[1]!)).resume_checkpoint).toBeNull();
  });

  it('a deferral without one clears it; a soft timeout keeps it', async () => {
    const { ids } = await runWith([withCheckpoint(), withCheckpoint()]);
    expect((await defer(ids[0]!, { checkpoint: null }))!.resume_checkpoint).toBeNull();
    const soft = await defer(ids[1]!, { reason: 'soft_timeout', checkpoint: null });
    expect(soft).toMatchObject({ expired_lease_retry_count: 1, resume_checkpoint: CP });
  });

  it('an expired lease that retries keeps it; one that fails clears it', async () => {
    const { ids } = await runWith([withCheckpoint(at(NOW, 1)), withCheckpoint(at(NOW, 1))]);
    const now = at(NOW, 5 * SEC);
    const retried = await expireToRetrying(db, { unitId: ids[0]!, owner: OWNER, now, availableAt: now });
    expect(retried).toMatchObject({ status: 'retrying', resume_checkpoint: CP });
    const failed = await expireToFailed(db, { unitId: ids[1]!, owner: OWNER, now, category: 'worker_lost' });
    expect(failed).toMatchObject({ status: 'failed', resume_checkpoint: null });
  });

  it('success and failure clear it, and so do cancellation and denial', async () => {
    const { ids } = await runWith([withCheckpoint(), withCheckpoint()]);
    const end = (unitId: string, status: 'success' | 'failed') =>
      finishUnit(db, { unitId, owner: OWNER, now: at(NOW, 500), status, result: {}, error: null, touchedSurfaces: [] });
    expect(await end(ids[0]!, 'success')).not.toBeNull();
    expect(await end(ids[1]!, 'failed')).not.toBeNull();
    for (const id of ids) expect((await unit(db, id)).resume_checkpoint).toBeNull();

    const retrying: UnitSpec = { set: { status: 'retrying', resume_checkpoint: CP } };
    const cancelled = await runWith([retrying, withCheckpoint()]);
    await cancelOpenUnits(db, cancelled.runId, NOW);
    const denied = await runWith([retrying]);
    await denyUnits(db, denied.runId, NOW, STALE_BEFORE);
    for (const id of [...cancelled.ids, ...denied.ids]) {
      expect(await unit(db, id), id).toMatchObject({ resume_checkpoint: null });
    }
  });
});

describe('finishUnits: the terminal CAS arms what the ends wake, in the same statement', () => {
  const outboxOf = async (runId: string) =>
    (
      await db.query<{ kind: string; status: string; available_at: Date; trace_context: unknown }>(
        'SELECT kind, status, available_at, trace_context FROM syncrelay.sync_dispatch_outbox ' +
          'WHERE sync_run_id = $1 ORDER BY kind',
        [runId],
      )
    ).rows;
  const end = (unitId: string, trace: Record<string, string> | null = null) => ({
    unitId,
    owner: OWNER,
    status: 'success' as const,
    result: {},
    error: null,
    touchedSurfaces: [],
    trace,
  });
  const now = at(NOW, 500);

  const lastUnitArmsFinalize =
    "the run's last open unit arms its finalize row (with the unit's trace); one that sees another open arms nothing";
  it(lastUnitArmsFinalize, async () => {
    const i = await seedIntegration(db, 'org-finish-last');
    const runId = await seedRun(db, i, { status: 'dispatching' });
    const ids = await seedUnits(db, i, runId, [running(NOW, at(NOW, LEASE)), running(NOW, at(NOW, LEASE))]);
    expect(await finishUnits(db, [end(ids[0]!)], now)).toMatchObject([{ id: ids[0], others_open: true, armed: 0 }]);
    expect(await outboxOf(runId)).toEqual([]);
    const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    expect(await finishUnits(db, [end(ids[1]!, trace)], now)).toMatchObject([
      { id: ids[1], others_open: false, armed: 1 },
    ]);
    expect(await outboxOf(runId)).toEqual([
      { kind: 'finalize_sync_run', status: 'pending', available_at: now, trace_context: trace },
    ]);
  });

  const wakesBucketOldest =
    'wakes the oldest live run with a planned unit in its bucket, its own run only after a reference unit; ' +
    "a batch's duplicate wake-ups arm each row once";
  it(wakesBucketOldest, async () => {
    const i = await seedIntegration(db, 'org-finish-wake');
    const done = await seedRun(db, i, { status: 'success' });
    await seedUnits(db, i, done, [{}]);
    const older = await seedRun(db, i, { status: 'dispatching' });
    await seedUnits(db, i, older, [{}, { set: { status: 'success' } }]);
    const own = await seedRun(db, i, { status: 'dispatching' });
    const live = () => running(NOW, at(NOW, LEASE));
    const ids = await seedUnits(db, i, own, [live(), live(), { tier: 'reference', ...live() }, {}]);
    const rows = await finishUnits(db, [end(ids[0]!), end(ids[1]!)], now);
    // Two work items: one wake-up each, of the older run only (a terminal run's planned unit is
    // not waiting); each saw the other units open.
    expect(rows.map((r) => [r.others_open, r.armed])).toEqual([
      [true, 1],
      [true, 1],
    ]);
    expect(await outboxOf(own)).toEqual([]);
    // The reference unit's end lets the run's work items go: its own run is woken too.
    await db.query('DELETE FROM syncrelay.sync_dispatch_outbox WHERE sync_run_id = $1', [older]);
    expect((await finishUnits(db, [end(ids[2]!)], now)).map((r) => [r.others_open, r.armed])).toEqual([[true, 2]]);
    for (const runId of [older, own]) {
      expect(await outboxOf(runId)).toEqual([
        { kind: 'dispatch_sync_run', status: 'pending', available_at: now, trace_context: null },
      ]);
    }
    expect(await outboxOf(done)).toEqual([]);
  });

  it('a lost lease writes and arms nothing', async () => {
    const i = await seedIntegration(db, 'org-finish-lost');
    const runId = await seedRun(db, i, { status: 'dispatching' });
    const ids = await seedUnits(db, i, runId, [running(NOW, at(NOW, LEASE), OTHER)]);
    expect(await finishUnits(db, [end(ids[0]!)], now)).toEqual([]);
    expect((await unit(db, ids[0]!)).status).toBe('running');
    expect(await outboxOf(runId)).toEqual([]);
  });
});

describe('lockLeaseIfHeld (the fence)', () => {
  it('holds only for the owner of a running unit with a live lease in a live run', async () => {
    const { runId, ids } = await runWith([
      running(NOW, at(NOW, LEASE)),
      { set: { status: 'success', lease_owner: OWNER, started_at: NOW, lease_expires_at: at(NOW, LEASE) } },
    ]);
    const now = at(NOW, 500);
    expect(await lockLeaseIfHeld(db, ids[0]!, OWNER, now)).toBe(true);
    expect(await lockLeaseIfHeld(db, ids[0]!, OTHER, now)).toBe(false);
    expect(await lockLeaseIfHeld(db, ids[0]!, OWNER, at(NOW, LEASE))).toBe(false);
    expect(await lockLeaseIfHeld(db, ids[1]!, OWNER, now)).toBe(false);
    await setRunStatus(db, runId, 'cancelled', NOW);
    expect(await lockLeaseIfHeld(db, ids[0]!, OWNER, now)).toBe(false);
  });

  const keepsRowForShare =
    'keeps the unit row FOR SHARE until its transaction ends: terminal CAS waits, another fence does not';
  it(keepsRowForShare, async () => {
    const { ids } = await runWith([running(NOW, at(NOW, LEASE))]);
    const id = ids[0]!;
    const now = at(NOW, 500);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: (ok: boolean) => void;
    const lockedNow = new Promise<boolean>((r) => (locked = r));
    const writer = db.transaction(async (tx) => {
      locked(await lockLeaseIfHeld(tx, id, OWNER, now));
      await held;
    });
    try {
      expect(await lockedNow).toBe(true);
      // A second fence shares the lock.
      const shared = await db.transaction(async (tx) => {
        await tx.query("SET LOCAL lock_timeout = '300ms'");
        return lockLeaseIfHeld(tx, id, OWNER, now);
      });
      expect(shared).toBe(true);
      // The terminal CAS (an UPDATE of the row) must wait for the sink write to commit.
      const blocked = db.transaction(async (tx) => {
        await tx.query("SET LOCAL lock_timeout = '300ms'");
        return finishUnit(tx, {
          unitId: id,
          owner: OWNER,
          now,
          status: 'success',
          result: {},
          error: null,
          touchedSurfaces: [],
        });
      });
      await expect(blocked).rejects.toMatchObject({ code: '55P03' });
    } finally {
      release();
      await writer;
    }
    const done = await finishUnit(db, {
      unitId: id,
      owner: OWNER,
      now,
      status: 'success',
      result: {},
      error: null,
      touchedSurfaces: [],
    });
    expect(done?.status).toBe('success');
    expect(await lockLeaseIfHeld(db, id, OWNER, now)).toBe(false);
  });
});

describe('dispatch statements', () => {
  /** Each test uses its own org, so buckets never see another test's units. */
  let org = 0;
  function bucketOf(orgId: string, provider = 'linear', costClass = 'standard'): Bucket {
    return { org_id: orgId, provider, cost_class: costClass };
  }
  async function scoped(): Promise<{
    orgId: string;
    runIn: (specs: UnitSpec[]) => Promise<{ runId: string; ids: string[] }>;
  }> {
    const orgId = `org-d${++org}`;
    const i = await seedIntegration(db, orgId);
    return {
      orgId,
      runIn: async (specs) => {
        const runId = await seedRun(db, i, { status: 'dispatching' });
        return {
          runId,
          ids: await seedUnits(
            db,
            i,
            runId,
            specs.map((s) => ({ provider: 'linear', ...s })),
          ),
        };
      },
    };
  }
  const fresh = { status: 'dispatching', dispatched_at: NOW, updated_at: NOW };

  const countActiveTitle =
    'countActiveInBucket: fresh dispatching and running with a live or NULL lease, across runs, this bucket only';
  it(countActiveTitle, async () => {
    const { orgId, runIn } = await scoped();
    await runIn([
      { set: fresh }, // ✓
      { set: { status: 'dispatching', dispatched_at: at(NOW, -STALE_MS), updated_at: at(NOW, -STALE_MS) } }, // stale
      { set: { status: 'dispatching', dispatched_at: null, updated_at: NOW } }, // publish failed: unpublished
      running(NOW, at(NOW, LEASE)), // ✓
      running(NOW, null), // ✓ (NULL lease counts as active)
      running(at(NOW, -LEASE), NOW), // lapsed
      { set: { status: 'planned' } },
      { set: { status: 'retrying', available_at: NOW } },
      { set: { status: 'success' } },
      { costClass: 'light', set: { ...fresh } }, // another bucket
      { provider: 'synthetic', set: { ...fresh } }, // another bucket
    ]);
    await runIn([running(NOW, at(NOW, LEASE))]); // ✓ another run, same bucket
    expect(await countActiveInBucket(db, bucketOf(orgId), NOW, STALE_BEFORE)).toBe(4);
    expect(await countActiveInBucket(db, bucketOf(orgId, 'linear', 'light'), NOW, STALE_BEFORE)).toBe(1);
  });

  const claimCandidatesTitle =
    'claimDispatchCandidates: planned, stale or unpublished dispatching and due retrying; ' +
    'never fresh dispatching or running';
  it(claimCandidatesTitle, async () => {
    const { orgId, runIn } = await scoped();
    const stale = at(NOW, -STALE_MS);
    const { runId, ids } = await runIn([
      { set: { status: 'planned' } }, // 0 ✓
      { set: { status: 'dispatching', dispatched_at: stale, updated_at: stale } }, // 1 ✓ stale
      { set: fresh }, // 2 fresh
      { set: { status: 'dispatching', dispatched_at: null, updated_at: NOW } }, // 3 ✓ unpublished
      running(at(NOW, -LEASE), NOW), // 4 running, lease lapsed: only lease expiry takes it
      running(NOW, at(NOW, LEASE)), // 5 running
      { set: { status: 'retrying', available_at: NOW } }, // 6 ✓ due
      { set: { status: 'retrying', available_at: at(NOW, 1) } }, // 7 not yet due
      { set: { status: 'success' } }, // 8
      { costClass: 'light', set: { status: 'planned' } }, // 9 another bucket
    ]);
    const claimed = await claimDispatchCandidates(db, {
      runId,
      bucket: bucketOf(orgId),
      limit: 100,
      now: NOW,
      staleBefore: STALE_BEFORE,
      includeWorkItems: true,
    });
    const want = [0, 1, 3, 6].map((i) => ids[i]!).sort();
    expect(claimed.map((u) => u.id)).toEqual(want);
    for (const u of claimed) expect(u).toMatchObject({ status: 'dispatching', dispatched_at: NOW, updated_at: NOW });
    const after = await Promise.all(ids.map((id) => unit(db, id)));
    expect(after.map((u) => u.status)).toEqual([
      'dispatching',
      'dispatching',
      'dispatching',
      'dispatching',
      'running',
      'running',
      'dispatching',
      'retrying',
      'success',
      'planned',
    ]);
    expect(after[4]!.lease_owner).toBe(OWNER);
  });

  it('claimDispatchCandidates: reference tier first, then by id; work items wait when told to', async () => {
    const { orgId, runIn } = await scoped();
    const { runId, ids } = await runIn([
      { set: { status: 'planned' } },
      { set: { status: 'planned' } },
      { tier: 'reference', set: { status: 'planned' } },
      { set: { status: 'planned' } },
      { tier: 'reference', set: { status: 'planned' } },
    ]);
    const args = { runId, bucket: bucketOf(orgId), now: NOW, staleBefore: STALE_BEFORE };
    const refsOnly = await claimDispatchCandidates(db, { ...args, limit: 10, includeWorkItems: false });
    expect(refsOnly.map((u) => u.id).sort()).toEqual([ids[2]!, ids[4]!].sort());
    await db.query("UPDATE syncrelay.sync_run_units SET status = 'planned' WHERE id = ANY($1::uuid[])", [
      [ids[2], ids[4]],
    ]);

    const firstTwo = await claimDispatchCandidates(db, { ...args, limit: 2, includeWorkItems: true });
    expect(firstTwo.map((u) => u.tier)).toEqual(['reference', 'reference']);
    const next = await claimDispatchCandidates(db, { ...args, limit: 2, includeWorkItems: true });
    const workItems = [ids[0]!, ids[1]!, ids[3]!].sort();
    expect(next.map((u) => u.id).sort()).toEqual(workItems.slice(0, 2));
  });

  const plannedCountTitle =
    "keeps the run's planned count: a claim takes off the planned units it moved (not stale or retrying " +
    'ones), denial and cancellation leave none; a run not counted stays so';
  it(plannedCountTitle, async () => {
    const { orgId, runIn } = await scoped();
    const stale = at(NOW, -STALE_MS);
    const planned = { set: { status: 'planned' } } as const;
    const specs = [
      planned,
      planned,
      planned,
      { set: { status: 'dispatching', dispatched_at: stale, updated_at: stale } },
      { set: { status: 'retrying', available_at: NOW } },
      { costClass: 'light', set: { status: 'planned' } },
    ];
    const counted = async (runId: string) => (await getRun(db, runId))!.planned_units;
    const args = (runId: string, limit: number) => ({
      runId,
      bucket: bucketOf(orgId),
      limit,
      now: NOW,
      staleBefore: STALE_BEFORE,
      includeWorkItems: true,
    });

    const { runId } = await runIn(specs);
    await setPlannedUnits(db, runId, 4);
    expect(await claimDispatchCandidates(db, args(runId, 2))).toHaveLength(2);
    expect(await counted(runId)).toBe(2);
    expect(await claimDispatchCandidates(db, args(runId, 10))).toHaveLength(3); // 1 planned, stale, retrying
    expect(await counted(runId)).toBe(1); // the other bucket's
    await denyUnits(db, runId, NOW, STALE_BEFORE);
    expect(await counted(runId)).toBe(0);

    const cancelled = (await runIn(specs)).runId;
    await setPlannedUnits(db, cancelled, 4);
    await cancelOpenUnits(db, cancelled, NOW);
    expect(await counted(cancelled)).toBe(0);

    const uncounted = (await runIn(specs)).runId;
    await claimDispatchCandidates(db, args(uncounted, 10));
    await cancelOpenUnits(db, uncounted, NOW);
    expect(await counted(uncounted)).toBeNull();
  });

  /** What dispatch_sync_run does per bucket inside its transaction: lock, count, claim cap − active. */
  function dispatchWithinCap(runId: string, bucket: Bucket, cap: number, hold?: Promise<void>): Promise<number> {
    return db.transaction(async (tx) => {
      await lockBuckets(tx, [bucket]);
      const active = await countActiveInBucket(tx, bucket, NOW, STALE_BEFORE);
      await hold;
      const claimed = await claimDispatchCandidates(tx, {
        runId,
        bucket,
        limit: cap - active,
        now: NOW,
        staleBefore: STALE_BEFORE,
        includeWorkItems: true,
      });
      return claimed.length;
    });
  }

  it('the cap holds across runs: active units of other runs count, overflow stays planned', async () => {
    const { orgId, runIn } = await scoped();
    const cap = 5;
    await runIn([running(NOW, at(NOW, LEASE)), running(NOW, at(NOW, LEASE)), { set: fresh }]);
    const second = await runIn(Array.from({ length: 4 }, () => ({ set: { status: 'planned' } })));
    expect(await dispatchWithinCap(second.runId, bucketOf(orgId), cap)).toBe(2);
    expect(await countActiveInBucket(db, bucketOf(orgId), NOW, STALE_BEFORE)).toBe(cap);
    expect(await dispatchWithinCap(second.runId, bucketOf(orgId), cap)).toBe(0);
    const { rows } = await db.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM syncrelay.sync_run_units ' +
        'WHERE sync_run_id = $1 GROUP BY status ORDER BY status',
      [second.runId],
    );
    expect(rows).toEqual([
      { status: 'dispatching', n: 2 },
      { status: 'planned', n: 2 },
    ]);
  });

  it('two runs dispatching at once into one bucket never exceed the cap together (bucket lock)', async () => {
    const { orgId, runIn } = await scoped();
    const cap = 5;
    await runIn([running(NOW, at(NOW, LEASE)), running(NOW, at(NOW, LEASE)), running(NOW, at(NOW, LEASE))]);
    const a = await runIn(Array.from({ length: 4 }, () => ({ set: { status: 'planned' } })));
    const b = await runIn(Array.from({ length: 4 }, () => ({ set: { status: 'planned' } })));
    // The first holds its count open for a moment: without the bucket lock both would see 3 active.
    const pause = new Promise<void>((r) => setTimeout(r, 200));
    const [na, nb] = await Promise.all([
      dispatchWithinCap(a.runId, bucketOf(orgId), cap, pause),
      dispatchWithinCap(b.runId, bucketOf(orgId), cap),
    ]);
    expect(na + nb).toBe(2);
    expect(await countActiveInBucket(db, bucketOf(orgId), NOW, STALE_BEFORE)).toBe(cap);
  });
});
