/**
 * The outbox statements (SPEC §4) against real PostgreSQL, on virtual time (every statement takes
 * `now`): the wake-up upsert, the batch claim, the token-guarded mark / publish-failed, pruning.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/types.js';
import { outboxBackoffMs } from '../../src/domain/backoff.js';
import type { OutboxKind } from '../../src/domain/statuses.js';
import {
  armOutbox,
  claimDueOutboxRows,
  getOutboxRow,
  hasParkedOutboxRows,
  markOutboxDispatched,
  markOutboxPublishFailed,
  pruneDispatchedOutbox,
  recordOutboxError,
} from '../../src/store/outbox.js';
import type { OutboxRow } from '../../src/store/rows.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { at, SEC, seedIntegration, seedRun, T0 } from './seed.js';

const CLAIM_MS = 300 * SEC;
const KINDS: readonly OutboxKind[] = ['dispatch_sync_run', 'finalize_sync_run', 'post_sync'];

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
// The claim scans the whole table: every test starts from an empty outbox.
beforeEach(async () => {
  await db.query('DELETE FROM syncrelay.sync_dispatch_outbox');
});

async function newRun(): Promise<{ orgId: string; runId: string }> {
  return { orgId: integ.orgId, runId: await seedRun(db, integ) };
}

function arm(
  target: { orgId: string; runId: string },
  kind: OutboxKind,
  availableAt: Date,
  now: Date,
): Promise<string[]> {
  return db.transaction((tx) => armOutbox(tx, kind, [target], availableAt, now));
}

function claim(now: Date, batch = 10): Promise<OutboxRow[]> {
  return db.transaction((tx) => claimDueOutboxRows(tx, now, at(now, CLAIM_MS), batch));
}

async function row(runId: string, kind: OutboxKind): Promise<OutboxRow> {
  const r = await getOutboxRow(db, runId, kind);
  if (!r) throw new Error(`no ${kind} row for ${runId}`);
  return r;
}

describe('wake-up upsert', () => {
  it('keeps one row per (run, kind), re-armed in place', async () => {
    const run = await newRun();
    const [id] = await arm(run, 'dispatch_sync_run', T0, T0);
    expect(await arm(run, 'dispatch_sync_run', at(T0, 5 * SEC), T0)).toEqual([id]);
    const other = await arm(run, 'finalize_sync_run', T0, T0);
    expect(other).not.toEqual([id]);
    const { rows } = await db.query(
      'SELECT kind FROM syncrelay.sync_dispatch_outbox WHERE sync_run_id = $1 ORDER BY kind',
      [run.runId],
    );
    expect(rows).toEqual([{ kind: 'dispatch_sync_run' }, { kind: 'finalize_sync_run' }]);
  });

  it('earliest wins on a pending, unclaimed row', async () => {
    const run = await newRun();
    await arm(run, 'dispatch_sync_run', at(T0, 10 * SEC), T0);
    await arm(run, 'dispatch_sync_run', at(T0, 60 * SEC), at(T0, SEC));
    expect((await row(run.runId, 'dispatch_sync_run')).available_at).toEqual(at(T0, 10 * SEC));
    await arm(run, 'dispatch_sync_run', at(T0, 5 * SEC), at(T0, 2 * SEC));
    const r = await row(run.runId, 'dispatch_sync_run');
    expect({ status: r.status, available_at: r.available_at, attempts: r.attempts }).toEqual({
      status: 'pending',
      available_at: at(T0, 5 * SEC),
      attempts: 0,
    });
  });

  it('leaves a pending, unclaimed row due no later as it is, but locked until the caller commits', async () => {
    const run = await newRun();
    const [id] = await arm(run, 'dispatch_sync_run', T0, T0);
    const version = async () =>
      (
        await db.query<{ v: string; arm_seq: number; updated_at: Date }>(
          'SELECT xmin::text AS v, arm_seq, updated_at FROM syncrelay.sync_dispatch_outbox WHERE id = $1',
          [id],
        )
      ).rows[0]!;
    const first = await version();
    // Asked for again at the same time or later, without a trace: no new row version.
    expect(await arm(run, 'dispatch_sync_run', T0, at(T0, SEC))).toEqual([id]);
    expect(await arm(run, 'dispatch_sync_run', at(T0, 30 * SEC), at(T0, 2 * SEC))).toEqual([id]);
    expect(await version()).toEqual(first);

    // Held by a caller that has not committed, the row is not claimable: the relay's dispatch
    // cannot run before the caller's end is visible.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let armed!: () => void;
    const isArmed = new Promise<void>((r) => (armed = r));
    const caller = db.transaction(async (tx) => {
      await armOutbox(tx, 'dispatch_sync_run', [run], at(T0, 5 * SEC), at(T0, 3 * SEC));
      armed();
      await held;
    });
    await isArmed;
    expect(await claim(at(T0, 4 * SEC))).toEqual([]);
    release();
    await caller;
    expect((await claim(at(T0, 4 * SEC))).map((r) => r.id)).toEqual([id]);

    // An earlier time still moves it; a trace is still taken.
    const run2 = await newRun();
    await arm(run2, 'dispatch_sync_run', at(T0, 60 * SEC), T0);
    await arm(run2, 'dispatch_sync_run', at(T0, 10 * SEC), T0);
    expect((await row(run2.runId, 'dispatch_sync_run')).available_at).toEqual(at(T0, 10 * SEC));
    await db.transaction((tx) =>
      armOutbox(tx, 'dispatch_sync_run', [run2], at(T0, 20 * SEC), T0, { traceparent: 'x' }),
    );
    expect((await row(run2.runId, 'dispatch_sync_run')).trace_context).toEqual({ traceparent: 'x' });
  });

  it('a dispatched row takes the new time, back to pending, attempts kept', async () => {
    const run = await newRun();
    await arm(run, 'finalize_sync_run', T0, T0);
    const [claimed] = await claim(T0);
    expect(
      await db.transaction((tx) =>
        markOutboxDispatched(tx, [{ id: claimed!.id, claimToken: claimed!.claim_token! }], at(T0, SEC)),
      ),
    ).toEqual([claimed!.id]);
    expect((await row(run.runId, 'finalize_sync_run')).status).toBe('dispatched');

    await arm(run, 'finalize_sync_run', at(T0, 600 * SEC), at(T0, 500 * SEC));
    const r = await row(run.runId, 'finalize_sync_run');
    expect(r).toMatchObject({
      status: 'pending',
      available_at: at(T0, 600 * SEC),
      dispatched_at: null,
      attempts: 1,
      claim_token: null,
    });
  });

  it('keeps a live claim (taking the new time), and a mark under that claim leaves the row pending', async () => {
    const run = await newRun();
    await arm(run, 'dispatch_sync_run', T0, T0);
    const [c] = await claim(T0);
    await arm(run, 'dispatch_sync_run', at(T0, 20 * SEC), at(T0, 10 * SEC));
    expect(await row(run.runId, 'dispatch_sync_run')).toMatchObject({
      status: 'pending',
      claim_token: c!.claim_token,
      claim_expires_at: at(T0, CLAIM_MS),
      available_at: at(T0, 20 * SEC),
      attempts: 1,
    });
    // The relay finishes publishing the old arm: the mark takes effect, but the new arm stays due.
    const ref = { id: c!.id, claimToken: c!.claim_token! };
    expect(await db.transaction((tx) => markOutboxDispatched(tx, [ref], at(T0, 11 * SEC)))).toEqual([c!.id]);
    expect(await row(run.runId, 'dispatch_sync_run')).toMatchObject({
      status: 'pending',
      dispatched_at: null,
      claim_token: null,
      claim_expires_at: null,
      available_at: at(T0, 20 * SEC),
    });
    const again = await claim(at(T0, 20 * SEC));
    expect(again.map((r) => [r.id, r.attempts])).toEqual([[c!.id, 2]]);
  });

  it('clears an expired claim (earliest wins again); the stale relay’s mark then changes nothing', async () => {
    const run = await newRun();
    await arm(run, 'dispatch_sync_run', T0, T0);
    const [c] = await claim(T0);
    const later = at(T0, CLAIM_MS + 100 * SEC);
    await arm(run, 'dispatch_sync_run', at(later, 100 * SEC), later);
    const r = await row(run.runId, 'dispatch_sync_run');
    expect(r).toMatchObject({
      status: 'pending',
      claim_token: null,
      claim_expires_at: null,
      available_at: T0,
      attempts: 1,
    });
    const ref = { id: c!.id, claimToken: c!.claim_token! };
    expect(await db.transaction((tx) => markOutboxDispatched(tx, [ref], at(later, SEC)))).toEqual([]);
    expect(await row(run.runId, 'dispatch_sync_run')).toEqual(r);
  });
});

describe('NOTIFY on arm', () => {
  let inbox: string[];
  let unlisten: () => Promise<void>;
  beforeAll(async () => {
    unlisten = await db.listen(db.schema.channel, (payload) => inbox.push(payload));
  });
  afterAll(async () => {
    await unlisten?.();
  });
  beforeEach(() => {
    inbox = [];
  });

  /**
   * Commits a due post_sync arm as a sentinel and waits for it: notifications arrive in commit
   * order, so whatever the step before notified has arrived by then. Returns what arrived.
   */
  async function deliveredBeforeSentinel(): Promise<string[]> {
    await arm(await newRun(), 'post_sync', T0, T0);
    const deadline = Date.now() + 10_000;
    while (!inbox.includes('post_sync')) {
      if (Date.now() > deadline) throw new Error('sentinel NOTIFY never arrived');
      await new Promise((r) => setTimeout(r, 10));
    }
    return inbox.slice(0, inbox.indexOf('post_sync'));
  }

  it('is delivered when the producer’s transaction commits a due row', async () => {
    await arm(await newRun(), 'finalize_sync_run', T0, T0);
    expect(await deliveredBeforeSentinel()).toEqual(['finalize_sync_run']);
  });

  it('is not delivered when the producer’s transaction rolls back', async () => {
    const run = await newRun();
    await expect(
      db.transaction(async (tx) => {
        await armOutbox(tx, 'finalize_sync_run', [run], T0, T0);
        throw new Error('producer failed');
      }),
    ).rejects.toThrow('producer failed');
    expect(await deliveredBeforeSentinel()).toEqual([]);
    expect(await getOutboxRow(db, run.runId, 'finalize_sync_run')).toBeNull();
  });

  it('is not sent for a row that is not yet due', async () => {
    await arm(await newRun(), 'dispatch_sync_run', at(T0, 60 * SEC), T0);
    expect(await deliveredBeforeSentinel()).toEqual([]);
  });

  it('is sent when a wake-up makes a future row due now (earliest wins)', async () => {
    const run = await newRun();
    await arm(run, 'dispatch_sync_run', at(T0, 60 * SEC), T0);
    await arm(run, 'dispatch_sync_run', T0, T0);
    expect(await deliveredBeforeSentinel()).toEqual(['dispatch_sync_run']);
  });
});

describe('claim', () => {
  it('claims only due rows, by available_at then id, up to the batch, with a fresh token', async () => {
    const times = [-30, -20, -20, -10, 10].map((s) => at(T0, s * SEC));
    const ids: string[] = [];
    for (const time of times) ids.push(...(await arm(await newRun(), 'dispatch_sync_run', time, at(T0, -60 * SEC))));
    const expectedOrder = [ids[0]!, ...[ids[1]!, ids[2]!].sort(), ids[3]!];

    const first = await claim(T0, 2);
    expect(first.map((r) => r.id)).toEqual(expectedOrder.slice(0, 2));
    for (const r of first) {
      expect(r).toMatchObject({ attempts: 1, claim_expires_at: at(T0, CLAIM_MS), status: 'pending' });
      expect(r.claim_token).toMatch(/^[0-9a-f-]{36}$/);
    }
    const rest = await claim(T0, 10);
    expect(rest.map((r) => r.id)).toEqual(expectedOrder.slice(2));
    expect(await claim(at(T0, 9 * SEC))).toEqual([]);
    expect((await claim(at(T0, 10 * SEC))).map((r) => r.id)).toEqual([ids[4]]);
  });

  const liveClaimExclusive =
    'does not claim a row again while its claim is live; after expiry it is re-claimed under a new token';
  it(liveClaimExclusive, async () => {
    const run = await newRun();
    await arm(run, 'dispatch_sync_run', T0, T0);
    const [c] = await claim(T0);
    expect(await claim(at(T0, CLAIM_MS - 1))).toEqual([]);
    const [again] = await claim(at(T0, CLAIM_MS));
    expect(again).toMatchObject({ id: c!.id, attempts: 2 });
    expect(again!.claim_token).not.toBe(c!.claim_token);
    // The first relay comes back: both its mark and its failure report are refused.
    const stale = { id: c!.id, claimToken: c!.claim_token! };
    const now = at(T0, CLAIM_MS + SEC);
    expect(await db.transaction((tx) => markOutboxDispatched(tx, [stale], now))).toEqual([]);
    expect(
      await db.transaction((tx) => markOutboxPublishFailed(tx, [{ ...stale, retryAt: now, error: 'x' }], now)),
    ).toEqual([]);
    expect(await row(run.runId, 'dispatch_sync_run')).toMatchObject({
      claim_token: again!.claim_token,
      status: 'pending',
    });
  });

  it('never claims dispatched rows', async () => {
    const run = await newRun();
    await arm(run, 'post_sync', T0, T0);
    const [c] = await claim(T0);
    await db.transaction((tx) => markOutboxDispatched(tx, [{ id: c!.id, claimToken: c!.claim_token! }], T0));
    expect(await claim(at(T0, 3600 * SEC))).toEqual([]);
  });

  const skipLocked =
    'SKIP LOCKED: a claimer holding its transaction open neither blocks another nor shares a row with it';
  it(skipLocked, async () => {
    for (let i = 0; i < 6; i++) await arm(await newRun(), 'dispatch_sync_run', T0, T0);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let firstClaimed!: (rows: OutboxRow[]) => void;
    const firstRows = new Promise<OutboxRow[]>((r) => (firstClaimed = r));
    const first = db.transaction(async (tx) => {
      firstClaimed(await claimDueOutboxRows(tx, T0, at(T0, CLAIM_MS), 3));
      await held;
    });
    const a = await firstRows;
    const second = claim(T0, 10);
    const b = await Promise.race([second, new Promise<null>((r) => setTimeout(() => r(null), 3000))]);
    release();
    await Promise.all([first, second]);
    expect(b, 'the second claimer did not wait for the first').not.toBeNull();
    expect(a).toHaveLength(3);
    expect(b).toHaveLength(3);
    expect(new Set([...a, ...b!].map((r) => r.id)).size).toBe(6);
  });

  it('concurrent claimers never get the same row', async () => {
    for (let round = 0; round < 3; round++) {
      await db.query('DELETE FROM syncrelay.sync_dispatch_outbox');
      for (let i = 0; i < 24; i++) await arm(await newRun(), KINDS[i % 3]!, at(T0, -i * SEC), at(T0, -60 * SEC));
      const results = await Promise.all(Array.from({ length: 10 }, () => claim(T0, 3)));
      const ids = results.flat().map((r) => r.id);
      expect(ids).toHaveLength(24);
      expect(new Set(ids).size).toBe(24);
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM syncrelay.sync_dispatch_outbox WHERE attempts <> 1',
      );
      expect(rows[0]!.n).toBe(0);
    }
  });
});

describe('mark dispatched / publish failed', () => {
  it('mark requires the token, a pending row and a live claim; it clears the claim and last_error', async () => {
    const run = await newRun();
    await arm(run, 'dispatch_sync_run', T0, T0);
    const [c1] = await claim(T0);
    await db.transaction((tx) =>
      markOutboxPublishFailed(tx, [{ id: c1!.id, claimToken: c1!.claim_token!, retryAt: T0, error: 'boom' }], T0),
    );
    expect((await row(run.runId, 'dispatch_sync_run')).last_error).toBe('boom');
    const [c] = await claim(T0);
    // A claim clears the last attempt's error; what fails under it records its own.
    expect((await row(run.runId, 'dispatch_sync_run')).last_error).toBeNull();
    await db.query(`UPDATE syncrelay.sync_dispatch_outbox SET last_error = 'since the claim' WHERE id = $1`, [c!.id]);
    const ref = { id: c!.id, claimToken: c!.claim_token! };
    const wrong = { id: c!.id, claimToken: '00000000-0000-4000-8000-000000000000' };
    expect(await db.transaction((tx) => markOutboxDispatched(tx, [wrong], at(T0, SEC)))).toEqual([]);
    expect(await db.transaction((tx) => markOutboxDispatched(tx, [ref], at(T0, CLAIM_MS)))).toEqual([]);
    expect((await row(run.runId, 'dispatch_sync_run')).last_error).toBe('since the claim');
    expect(await db.transaction((tx) => markOutboxDispatched(tx, [ref], at(T0, CLAIM_MS - 1)))).toEqual([c!.id]);
    expect(await row(run.runId, 'dispatch_sync_run')).toMatchObject({
      status: 'dispatched',
      dispatched_at: at(T0, CLAIM_MS - 1),
      claim_token: null,
      claim_expires_at: null,
      last_error: null,
      attempts: 2,
    });
  });

  it('a mark of a row re-armed since its claim leaves it pending with the error recorded since the claim', async () => {
    const run = await newRun();
    await arm(run, 'dispatch_sync_run', T0, T0);
    const [c] = await claim(T0);
    // Under the live claim, a dispatch task whose own publish failed re-arms the row for its backoff
    // and records why (as publishUnits does).
    const retryAt = at(T0, 60 * SEC);
    await arm(run, 'dispatch_sync_run', retryAt, T0);
    await db.transaction((tx) => recordOutboxError(tx, run.runId, 'dispatch_sync_run', 'publish failed'));
    expect(
      await db.transaction((tx) => markOutboxDispatched(tx, [{ id: c!.id, claimToken: c!.claim_token! }], T0)),
    ).toEqual([c!.id]);
    expect(await row(run.runId, 'dispatch_sync_run')).toMatchObject({
      status: 'pending',
      available_at: retryAt,
      claim_token: null,
      last_error: 'publish failed',
    });
    // So a pass sees it parked and can wake it once the broker answers.
    expect(await db.transaction((tx) => hasParkedOutboxRows(tx, at(T0, SEC)))).toBe(true);
  });

  it('publish failed: pending without a claim, last_error cut to 2000 chars, due at the retry time', async () => {
    const run = await newRun();
    await arm(run, 'finalize_sync_run', T0, T0);
    const [c] = await claim(T0);
    const retryAt = at(T0, outboxBackoffMs(c!.attempts));
    const changed = await db.transaction((tx) =>
      markOutboxPublishFailed(
        tx,
        [{ id: c!.id, claimToken: c!.claim_token!, retryAt, error: 'e'.repeat(5000) }],
        at(T0, SEC),
      ),
    );
    expect(changed).toEqual([c!.id]);
    const r = await row(run.runId, 'finalize_sync_run');
    expect(r).toMatchObject({
      status: 'pending',
      claim_token: null,
      claim_expires_at: null,
      available_at: at(T0, 60 * SEC),
      attempts: 1,
    });
    expect(r.last_error).toHaveLength(2000);
    expect(await claim(at(T0, 59 * SEC))).toEqual([]);
    expect((await claim(at(T0, 60 * SEC))).map((x) => x.id)).toEqual([c!.id]);
  });
});

describe('retention', () => {
  it('prunes only dispatched rows of runs terminal before the cutoff, bounded by the batch', async () => {
    const old = at(T0, -40 * 86_400 * SEC);
    const cutoff = at(T0, -30 * 86_400 * SEC);
    const recent = at(T0, -86_400 * SEC);
    const dispatchAll = async (runId: string, kinds: readonly OutboxKind[], when: Date): Promise<string[]> => {
      const ids: string[] = [];
      for (const kind of kinds) ids.push(...(await arm({ orgId: integ.orgId, runId }, kind, when, when)));
      const claimed = await claim(when, 10);
      await db.transaction((tx) =>
        markOutboxDispatched(
          tx,
          claimed.map((c) => ({ id: c.id, claimToken: c.claim_token! })),
          when,
        ),
      );
      return ids;
    };
    const prunable = [
      ...(await dispatchAll(await seedRun(db, integ, { status: 'success', completedAt: old }), KINDS, old)),
      ...(await dispatchAll(
        await seedRun(db, integ, { status: 'cancelled', completedAt: old }),
        ['dispatch_sync_run', 'finalize_sync_run'],
        old,
      )),
    ];
    const recentRun = await seedRun(db, integ, { status: 'failed', completedAt: recent });
    const kept = [
      ...(await dispatchAll(recentRun, KINDS, old)), // dispatched long ago, but the run ended recently
      ...(await dispatchAll(await seedRun(db, integ), ['dispatch_sync_run'], old)), // the run is still live
    ];
    const pendingRun = await seedRun(db, integ, { status: 'partial_failed', completedAt: old });
    // pending
    kept.push(...(await arm({ orgId: integ.orgId, runId: pendingRun }, 'post_sync', at(T0, 3600 * SEC), old)));

    const remaining = async () =>
      (await db.query<{ id: string }>('SELECT id FROM syncrelay.sync_dispatch_outbox')).rows.map((r) => r.id).sort();
    expect(await remaining()).toEqual([...prunable, ...kept].sort());
    const counts: number[] = [];
    for (let i = 0; i < 5; i++) counts.push(await db.transaction((tx) => pruneDispatchedOutbox(tx, cutoff, 2)));
    expect(counts).toEqual([2, 2, 1, 0, 0]);
    expect(await remaining()).toEqual([...kept].sort());
  });
});

describe('model-based: random arm / claim / mark / fail / time sequences', () => {
  type Op =
    | { t: 'arm'; run: number; kind: number; offsetS: number }
    | { t: 'claim'; batch: number }
    | { t: 'mark'; pick: number }
    | { t: 'fail'; pick: number }
    | { t: 'tick'; s: number };

  const opArb: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        t: fc.constant('arm' as const),
        run: fc.nat(1),
        kind: fc.nat(2),
        offsetS: fc.integer({ min: -100, max: 1200 }),
      }),
    },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('claim' as const), batch: fc.integer({ min: 1, max: 4 }) }) },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('mark' as const), pick: fc.nat() }) },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('fail' as const), pick: fc.nat() }) },
    {
      weight: 3,
      arbitrary: fc.record({
        t: fc.constant('tick' as const),
        // Around the claim timeout (300 s) and the backoff steps, plus anything up to 1000 s.
        s: fc.oneof(fc.constantFrom(1, 59, 60, 61, 299, 300, 301, 480, 900), fc.integer({ min: 0, max: 1000 })),
      }),
    },
  );

  interface ModelRow {
    id: string;
    runId: string;
    kind: OutboxKind;
    status: 'pending' | 'dispatched';
    availableAt: number;
    attempts: number;
    token: string | null;
    claimExpiresAt: number | null;
    armSeq: number;
    claimedArmSeq: number | null;
    lastError: string | null;
    dispatchedAt: number | null;
  }

  /** The spec's backoff, written out independently of src: 60·2^min(attempts−1, 4) s, capped at 900 s. */
  const specBackoffMs = (attempts: number): number =>
    Math.min(60 * 2 ** Math.min(Math.max(attempts, 1) - 1, 4), 900) * SEC;

  const live = (r: ModelRow, now: number): boolean => r.claimExpiresAt !== null && r.claimExpiresAt > now;

  it('the statements behave like the model, one row per (run, kind), no double claim', async () => {
    const runs = [await newRun(), await newRun()];
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 40, size: 'max' }), async (ops) => {
        await db.query('DELETE FROM syncrelay.sync_dispatch_outbox');
        const model = new Map<string, ModelRow>();
        const claims: { id: string; token: string; attempts: number }[] = [];
        let now = T0.getTime();
        for (const op of ops) {
          await step(op);
          await compare();
        }

        async function step(op: Op): Promise<void> {
          const nowDate = new Date(now);
          switch (op.t) {
            case 'tick':
              now += op.s * SEC;
              return;
            case 'arm': {
              const target = runs[op.run]!;
              const kind = KINDS[op.kind]!;
              const availableAt = now + op.offsetS * SEC;
              const [id] = await arm(target, kind, new Date(availableAt), nowDate);
              const existing = model.get(id!);
              if (!existing) {
                model.set(id!, {
                  id: id!,
                  runId: target.runId,
                  kind,
                  status: 'pending',
                  availableAt,
                  attempts: 0,
                  token: null,
                  claimExpiresAt: null,
                  armSeq: 1,
                  claimedArmSeq: null,
                  lastError: null,
                  dispatchedAt: null,
                });
                return;
              }
              const keepClaim = live(existing, now);
              existing.availableAt =
                existing.status === 'pending' && !keepClaim ? Math.min(existing.availableAt, availableAt) : availableAt;
              existing.status = 'pending';
              existing.dispatchedAt = null;
              if (!keepClaim) {
                existing.token = null;
                existing.claimExpiresAt = null;
              }
              existing.armSeq += 1;
              return;
            }
            case 'claim': {
              const due = [...model.values()]
                .filter((r) => r.status === 'pending' && r.availableAt <= now && !live(r, now))
                .sort((a, b) => a.availableAt - b.availableAt || (a.id < b.id ? -1 : 1))
                .slice(0, op.batch);
              const got = await claim(nowDate, op.batch);
              expect(got.map((r) => r.id)).toEqual(due.map((r) => r.id));
              for (const g of got) {
                const m = model.get(g.id)!;
                expect(live(m, now), 'a live claim is never claimed again').toBe(false);
                expect(g.claim_token).not.toBe(m.token);
                m.attempts += 1;
                m.token = g.claim_token;
                m.claimExpiresAt = now + CLAIM_MS;
                m.claimedArmSeq = m.armSeq;
                m.lastError = null;
                claims.push({ id: g.id, token: g.claim_token!, attempts: g.attempts });
              }
              return;
            }
            case 'mark':
            case 'fail': {
              if (claims.length === 0) return;
              const c = claims[op.pick % claims.length]!;
              const m = model.get(c.id)!;
              const effective = m.token === c.token && m.status === 'pending' && live(m, now);
              const ref = { id: c.id, claimToken: c.token };
              const changed =
                op.t === 'mark'
                  ? await db.transaction((tx) => markOutboxDispatched(tx, [ref], nowDate))
                  : await db.transaction((tx) =>
                      markOutboxPublishFailed(
                        tx,
                        [
                          {
                            ...ref,
                            retryAt: new Date(now + outboxBackoffMs(c.attempts)),
                            error: `failed ${c.attempts}`,
                          },
                        ],
                        nowDate,
                      ),
                    );
              expect(changed).toEqual(effective ? [c.id] : []);
              if (!effective) return;
              m.token = null;
              m.claimExpiresAt = null;
              if (op.t === 'mark') {
                const current = m.armSeq === m.claimedArmSeq;
                m.status = current ? 'dispatched' : 'pending';
                m.dispatchedAt = current ? now : null;
                if (current) m.lastError = null;
              } else {
                m.availableAt = now + specBackoffMs(m.attempts);
                m.lastError = `failed ${c.attempts}`;
              }
              return;
            }
          }
        }

        async function compare(): Promise<void> {
          const { rows } = await db.query<OutboxRow>('SELECT * FROM syncrelay.sync_dispatch_outbox ORDER BY id');
          const actual = rows.map((r) => ({
            id: r.id,
            key: `${r.sync_run_id}/${r.kind}`,
            status: r.status,
            availableAt: r.available_at.getTime(),
            attempts: r.attempts,
            token: r.claim_token,
            claimExpiresAt: r.claim_expires_at?.getTime() ?? null,
            lastError: r.last_error,
            dispatchedAt: r.dispatched_at?.getTime() ?? null,
          }));
          const expected = [...model.values()]
            .sort((a, b) => (a.id < b.id ? -1 : 1))
            .map((m) => ({
              id: m.id,
              key: `${m.runId}/${m.kind}`,
              status: m.status,
              availableAt: m.availableAt,
              attempts: m.attempts,
              token: m.token,
              claimExpiresAt: m.claimExpiresAt,
              lastError: m.lastError,
              dispatchedAt: m.dispatchedAt,
            }));
          expect(actual).toEqual(expected);
          expect(new Set(actual.map((a) => a.key)).size, 'one row per (run, kind)').toBe(actual.length);
        }
      }),
      { numRuns: 100 },
    );
  });
});
