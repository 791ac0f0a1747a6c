import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock, type Clock } from '../../src/clock.js';
import type { Tx } from '../../src/db/types.js';
import { LeaseLostError, RateLimitError, SyncRelayError, ValidationError } from '../../src/errors.js';
import { defaultRegistry, ProviderRegistry, UnknownProviderError } from '../../src/providers/registry.js';
import {
  createSyntheticProvider,
  decideUnit,
  generateItems,
  metricsRollupHandler,
  parseSyntheticConfig,
  syntheticSink,
  SYNTHETIC_DEFAULTS,
} from '../../src/providers/synthetic.js';
import type { IntegrationInfo, LeaseGuard, Sink, UnitContext, UnitInfo } from '../../src/sdk/types.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const ORG = 'org-synth';
const T0 = Date.UTC(2026, 0, 10, 12);
const logger = pino({ level: 'silent' });

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

describe('synthetic provider config', () => {
  const provider = createSyntheticProvider();

  it('fills defaults', () => {
    expect(parseSyntheticConfig({})).toEqual({
      itemsPerDay: 5,
      latencyMs: 20,
      failRate: 0,
      rateLimitRate: 0,
      hangRate: 0,
      seed: 1,
      hangMs: 10_000,
      rateLimitRetryAfterMs: 1000,
    });
    expect(parseSyntheticConfig({ impersonate: 'linear', seed: -3 })).toMatchObject({
      impersonate: 'linear',
      seed: -3,
    });
  });

  it.each([
    [{ itemsPerDay: -1 }, 'config.itemsPerDay'],
    [{ itemsPerDay: 2.5 }, 'config.itemsPerDay'],
    [{ latencyMs: -5 }, 'config.latencyMs'],
    [{ failRate: 1.5 }, 'config.failRate'],
    [{ rateLimitRate: '0.1' }, 'config.rateLimitRate'],
    [{ hangRate: -0.1 }, 'config.hangRate'],
    [{ seed: 1.5 }, 'config.seed'],
    [{ impersonate: '' }, 'config.impersonate'],
    [{ hangMs: Number.NaN }, 'config.hangMs'],
    [{ rateLimitRetryAfterMs: -1 }, 'config.rateLimitRetryAfterMs'],
    [{ itemsPerDya: 3 }, 'config.itemsPerDya'],
  ])('rejects %j naming %s', (config, field) => {
    const err = (() => {
      try {
        provider.validateConfig!(config);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe(field);
    expect((err as Error).message).toContain(field);
  });

  it('rejects a config that is not an object', () => {
    expect(() => provider.validateConfig!([] as unknown as Record<string, unknown>)).toThrow(ValidationError);
  });
});

describe('synthetic provider datasets', () => {
  const provider = createSyntheticProvider();
  const integ = (config: Record<string, unknown>): IntegrationInfo => ({
    id: 'i',
    orgId: ORG,
    provider: 'synthetic',
    name: 'n',
    config,
  });

  it('declares reference and work-item datasets writing synthetic_items', () => {
    expect(provider.name).toBe('synthetic');
    expect(provider.initialDepthDays).toBe(30);
    const byKey = Object.fromEntries(provider.datasets.map((d) => [d.key, d]));
    for (const key of ['teams', 'members', 'projects']) {
      expect(byKey[key]).toMatchObject({
        tier: 'reference',
        costClass: 'light',
        keepsWatermark: false,
        surfaces: ['synthetic_items'],
      });
    }
    for (const key of ['work-items', 'work-item-comments', 'work-item-labels', 'work-item-history']) {
      expect(byKey[key]).toMatchObject({
        tier: 'work_item',
        costClass: 'standard',
        keepsWatermark: true,
        surfaces: ['synthetic_items'],
      });
    }
    expect(provider.datasets).toHaveLength(7);
  });

  it('impersonates a provider name and uses Linear window sizes as linear', () => {
    expect(provider.unitProvider!(integ({}))).toBe('synthetic');
    expect(provider.unitProvider!(integ({ impersonate: 'linear' }))).toBe('linear');
    expect(new Set(provider.datasetsFor!(integ({ impersonate: 'linear' })).map((d) => d.windowDays))).toEqual(
      new Set([14]),
    );
    expect(new Set(provider.datasetsFor!(integ({ impersonate: 'jira' })).map((d) => d.windowDays))).toEqual(
      new Set([7]),
    );
    expect(new Set(provider.datasetsFor!(integ({})).map((d) => d.windowDays))).toEqual(new Set([7]));
  });
});

describe('synthetic determinism', () => {
  const config = { ...SYNTHETIC_DEFAULTS, itemsPerDay: 4, seed: 7 };
  const scope = (since: number | null, before: number | null, datasetKey = 'work-items') => ({
    sourceKey: 'TEAM-1',
    datasetKey,
    tier: 'work_item' as const,
    since: since === null ? null : new Date(since),
    before: before === null ? null : new Date(before),
  });
  const now = new Date(T0);

  it('generates itemsPerDay per whole or partial UTC day, with keys stable across windows', () => {
    const jan1noon = Date.UTC(2026, 0, 1, 12);
    const items = generateItems(config, scope(jan1noon, Date.UTC(2026, 0, 3, 6)), now);
    expect(items).toHaveLength(12);
    expect(new Set(items.map((i) => i.itemDay))).toEqual(new Set(['2026-01-01', '2026-01-02', '2026-01-03']));
    expect(new Set(items.map((i) => i.itemKey)).size).toBe(12);
    // A differently chunked window produces the same item for the same day.
    const again = generateItems(config, scope(Date.UTC(2026, 0, 2), Date.UTC(2026, 0, 3)), now);
    expect(again).toEqual(items.filter((i) => i.itemDay === '2026-01-02'));
    expect(generateItems(config, scope(jan1noon, jan1noon), now)).toEqual([]);
  });

  it('treats an unbounded window as one day and reference datasets as a fixed few', () => {
    expect(generateItems(config, scope(null, Date.UTC(2026, 0, 5)), now).map((i) => i.itemDay)).toEqual(
      Array(4).fill('2026-01-04'),
    );
    expect(generateItems(config, scope(Date.UTC(2026, 0, 5, 3), null), now).map((i) => i.itemDay)).toEqual(
      Array(4).fill('2026-01-05'),
    );
    expect(generateItems(config, scope(null, null), now).map((i) => i.itemDay)).toEqual(Array(4).fill('2026-01-10'));
    const teams = generateItems(config, { ...scope(null, null, 'teams'), tier: 'reference', sourceKey: null }, now);
    expect(teams.map((i) => [i.sourceKey, i.itemKey])).toEqual([
      ['*', 'teams-1'],
      ['*', 'teams-2'],
      ['*', 'teams-3'],
    ]);
  });

  it('is a function of the seed: same seed same items, another seed other payloads', () => {
    const w = scope(Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 8));
    expect(generateItems(config, w, now)).toEqual(generateItems({ ...config }, w, now));
    const other = generateItems({ ...config, seed: 8 }, w, now);
    expect(other.map((i) => i.itemKey)).toEqual(generateItems(config, w, now).map((i) => i.itemKey));
    expect(other.map((i) => i.payload)).not.toEqual(generateItems(config, w, now).map((i) => i.payload));
  });

  it('decides faults from (seed, unit, attempt) alone, at about the configured rates', () => {
    const half = { ...config, failRate: 0.5, rateLimitRate: 0.5, hangRate: 0.5 };
    const ids = Array.from({ length: 400 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    const first = ids.map((id) => decideUnit(half, id, 1));
    expect(ids.map((id) => decideUnit(half, id, 1))).toEqual(first);
    for (const key of ['fail', 'rateLimit', 'hang'] as const) {
      const hits = first.filter((d) => d[key]).length;
      expect(hits).toBeGreaterThan(140);
      expect(hits).toBeLessThan(260);
    }
    expect(ids.map((id) => decideUnit(half, id, 2))).not.toEqual(first);
    expect(ids.map((id) => decideUnit({ ...half, seed: 99 }, id, 1))).not.toEqual(first);
    expect(ids.every((id) => !Object.values(decideUnit(config, id, 1)).some(Boolean))).toBe(true);
    const always = { ...config, failRate: 1, rateLimitRate: 1, hangRate: 1 };
    expect(ids.every((id) => Object.values(decideUnit(always, id, 3)).every(Boolean))).toBe(true);
  });
});

describe('synthetic provider runUnit (PostgreSQL)', () => {
  let t: TestDatabase;
  let sink: Sink;
  let runId: string;
  const provider = createSyntheticProvider();

  beforeAll(async () => {
    t = await createTestDatabase();
    sink = syntheticSink(t.db);
  });
  afterAll(async () => {
    await t.drop();
  });

  interface Fixture {
    integration: IntegrationInfo;
    unit: UnitInfo;
  }

  async function fixture(
    config: Record<string, unknown>,
    opts: {
      id?: string;
      dataset?: string;
      tier?: 'reference' | 'work_item';
      since?: number | null;
      before?: number | null;
    } = {},
  ): Promise<Fixture> {
    const integ = await t.db.query<{ id: string }>(
      `INSERT INTO syncrelay.integrations (org_id, provider, name, config)
       VALUES ($1, 'synthetic', 'synth', $2) RETURNING id`,
      [ORG, JSON.stringify(config)],
    );
    const integrationId = integ.rows[0]!.id;
    const run = await t.db.query<{ id: string }>(
      `INSERT INTO syncrelay.sync_runs (org_id, integration_id, triggered_by, mode, status)
       VALUES ($1, $2, 'manual', 'backfill', 'dispatching') RETURNING id`,
      [ORG, integrationId],
    );
    runId = run.rows[0]!.id;
    const since = opts.since === undefined ? Date.UTC(2026, 0, 1) : opts.since;
    const before = opts.before === undefined ? Date.UTC(2026, 0, 3) : opts.before;
    const tier = opts.tier ?? 'work_item';
    const unit = await t.db.query<{ id: string }>(
      `INSERT INTO syncrelay.sync_run_units (id, org_id, sync_run_id, integration_id, provider, dataset_key, tier,
                                   cost_class, mode, status, attempts, since_at, before_at)
       VALUES (COALESCE($8::uuid, gen_random_uuid()), $1, $2, $3, 'synthetic', $4, $5, 'standard', 'backfill',
               'dispatching', 0, $6, $7) RETURNING id`,
      [
        ORG,
        runId,
        integrationId,
        opts.dataset ?? 'work-items',
        tier,
        since === null ? null : new Date(since),
        before === null ? null : new Date(before),
        opts.id ?? null,
      ],
    );
    return {
      integration: { id: integrationId, orgId: ORG, provider: 'synthetic', name: 'synth', config },
      unit: {
        id: unit.rows[0]!.id,
        orgId: ORG,
        runId,
        integrationId,
        sourceId: null,
        sourceKey: tier === 'reference' ? null : 'TEAM-1',
        provider: 'synthetic',
        datasetKey: opts.dataset ?? 'work-items',
        datasets: [opts.dataset ?? 'work-items'],
        tier,
        mode: 'backfill',
        since: since === null ? null : new Date(since),
        before: before === null ? null : new Date(before),
        attempt: 0,
      },
    };
  }

  /** Claims the unit for `owner` (attempt + 1) with a lease until `leaseUntil`. */
  async function claim(f: Fixture, owner: string, leaseUntil: number): Promise<UnitInfo> {
    const res = await t.db.query<{ attempts: number }>(
      `UPDATE syncrelay.sync_run_units
          SET status = 'running', lease_owner = $2, lease_expires_at = $3, attempts = attempts + 1
        WHERE id = $1 RETURNING attempts`,
      [f.unit.id, owner, new Date(leaseUntil)],
    );
    return { ...f.unit, attempt: res.rows[0]!.attempts };
  }

  function ctx(
    f: Fixture,
    unit: UnitInfo,
    owner: string,
    opts: { clock?: Clock; signal?: AbortSignal; sink?: Sink } = {},
  ): UnitContext {
    const clock = opts.clock ?? new ManualClock(T0);
    return {
      unit,
      integration: f.integration,
      signal: opts.signal ?? new AbortController().signal,
      lease: testGuard(t.db, unit.id, owner, clock),
      sink: opts.sink ?? sink,
      logger,
      clock,
      db: t.db,
      credential: null,
      checkpoint: null,
    };
  }

  async function items(integrationId: string) {
    const res = await t.db.query<{
      item_key: string;
      item_day: string;
      payload: unknown;
      lease_owner: string;
      dataset_key: string;
    }>(
      `SELECT item_key, to_char(item_day, 'YYYY-MM-DD') AS item_day, payload, lease_owner, dataset_key
         FROM syncrelay.synthetic_items WHERE integration_id = $1 ORDER BY item_key`,
      [integrationId],
    );
    return res.rows;
  }

  async function executions(unitId: string) {
    const res = await t.db.query<{ lease_owner: string; outcome: string; started_at: Date; ended_at: Date | null }>(
      'SELECT lease_owner, outcome, started_at, ended_at FROM syncrelay.synthetic_executions ' +
        'WHERE unit_id = $1 ORDER BY id',
      [unitId],
    );
    return res.rows;
  }

  it('writes deterministic items through the fenced sink and records a successful execution', async () => {
    const f = await fixture({ latencyMs: 0, itemsPerDay: 3, seed: 5 });
    const unit = await claim(f, 'w1', T0 + 60_000);
    const result = await provider.runUnit(ctx(f, unit, 'w1'));
    expect(result).toEqual({ items: 6, touchedSurfaces: ['synthetic_items'] });
    const rows = await items(f.integration.id);
    expect(rows).toHaveLength(6);
    expect(rows.map((r) => r.item_day)).toEqual([
      '2026-01-01',
      '2026-01-01',
      '2026-01-01',
      '2026-01-02',
      '2026-01-02',
      '2026-01-02',
    ]);
    expect(rows.every((r) => r.lease_owner === 'w1' && r.dataset_key === 'work-items')).toBe(true);
    expect(await executions(unit.id)).toEqual([
      { lease_owner: 'w1', outcome: 'success', started_at: new Date(T0), ended_at: new Date(T0) },
    ]);
  });

  it('a retry of the same unit upserts the same rows (same keys and payloads, new owner)', async () => {
    const f = await fixture({ latencyMs: 0, itemsPerDay: 2, seed: 11 });
    const first = await claim(f, 'w1', T0 + 60_000);
    await provider.runUnit(ctx(f, first, 'w1'));
    const before = await items(f.integration.id);
    const second = await claim(f, 'w2', T0 + 60_000);
    expect(second.attempt).toBe(2);
    await provider.runUnit(ctx(f, second, 'w2'));
    const after = await items(f.integration.id);
    expect(after.map(({ item_key, item_day, payload }) => ({ item_key, item_day, payload }))).toEqual(
      before.map(({ item_key, item_day, payload }) => ({ item_key, item_day, payload })),
    );
    expect(after.every((r) => r.lease_owner === 'w2')).toBe(true);
    expect((await executions(f.unit.id)).map((e) => [e.lease_owner, e.outcome])).toEqual([
      ['w1', 'success'],
      ['w2', 'success'],
    ]);
  });

  it('writes a fixed few items for a reference dataset', async () => {
    const f = await fixture({ latencyMs: 0 }, { dataset: 'members', tier: 'reference', since: null, before: null });
    const unit = await claim(f, 'w1', T0 + 60_000);
    expect(await provider.runUnit(ctx(f, unit, 'w1'))).toMatchObject({ items: 3 });
    expect((await items(f.integration.id)).map((r) => r.item_key)).toEqual(['members-1', 'members-2', 'members-3']);
  });

  it('throws RateLimitError with the configured retry-after, records rate_limited, writes nothing', async () => {
    const f = await fixture({ latencyMs: 0, rateLimitRate: 1, rateLimitRetryAfterMs: 4321 });
    const unit = await claim(f, 'w1', T0 + 60_000);
    const err = await provider.runUnit(ctx(f, unit, 'w1')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfterMs).toBe(4321);
    expect((await executions(unit.id)).map((e) => e.outcome)).toEqual(['rate_limited']);
    expect(await items(f.integration.id)).toEqual([]);
  });

  it('throws a plain provider failure at failRate 1 and records failed', async () => {
    const f = await fixture({ latencyMs: 0, failRate: 1 });
    const unit = await claim(f, 'w1', T0 + 60_000);
    await expect(provider.runUnit(ctx(f, unit, 'w1'))).rejects.toThrow('synthetic provider failure');
    expect((await executions(unit.id)).map((e) => e.outcome)).toEqual(['failed']);
    expect(await items(f.integration.id)).toEqual([]);
  });

  it('is fenced out by an expired lease: LeaseLostError, lease_lost recorded, nothing written', async () => {
    const f = await fixture({ latencyMs: 0 });
    const unit = await claim(f, 'w1', T0);
    await expect(provider.runUnit(ctx(f, unit, 'w1'))).rejects.toBeInstanceOf(LeaseLostError);
    expect((await executions(unit.id)).map((e) => e.outcome)).toEqual(['lease_lost']);
    expect(await items(f.integration.id)).toEqual([]);
  });

  it('honours abort during its latency: rejects with the signal reason, records aborted', async () => {
    const f = await fixture({ latencyMs: 600_000 });
    const unit = await claim(f, 'w1', T0 + 60_000);
    const ac = new AbortController();
    const running = provider.runUnit(ctx(f, unit, 'w1', { signal: ac.signal })).catch((e: unknown) => e);
    await until(async () => (await executions(unit.id)).length === 1);
    const reason = new Error('shutting down');
    ac.abort(reason);
    expect(await running).toBe(reason);
    expect((await executions(unit.id)).map((e) => e.outcome)).toEqual(['aborted']);
    expect(await items(f.integration.id)).toEqual([]);
  });

  it('records lease_lost when aborted because the heartbeat lost the lease', async () => {
    const f = await fixture({ latencyMs: 600_000 });
    const unit = await claim(f, 'w1', T0 + 60_000);
    const ac = new AbortController();
    const running = provider.runUnit(ctx(f, unit, 'w1', { signal: ac.signal })).catch((e: unknown) => e);
    await until(async () => (await executions(unit.id)).length === 1);
    ac.abort(new LeaseLostError(unit.id));
    expect(await running).toBeInstanceOf(LeaseLostError);
    expect((await executions(unit.id)).map((e) => e.outcome)).toEqual(['lease_lost']);
  });

  it('checks the signal between chunks of 500 rows', async () => {
    const f = await fixture(
      { latencyMs: 0, itemsPerDay: 600 },
      { since: Date.UTC(2026, 0, 1), before: Date.UTC(2026, 0, 2) },
    );
    const unit = await claim(f, 'w1', T0 + 60_000);
    const ac = new AbortController();
    const sizes: number[] = [];
    const abortingSink: Sink = {
      ...sink,
      name: sink.name,
      surfaces: sink.surfaces,
      retrySafeSurfaces: sink.retrySafeSurfaces,
      async write(guard, surface, rows) {
        sizes.push(rows.length);
        const n = await sink.write(guard, surface, rows);
        ac.abort(new Error('stop'));
        return n;
      },
    };
    await expect(provider.runUnit(ctx(f, unit, 'w1', { signal: ac.signal, sink: abortingSink }))).rejects.toThrow(
      'stop',
    );
    expect(sizes).toEqual([500]);
    expect(await items(f.integration.id)).toHaveLength(500);
    expect((await executions(unit.id)).map((e) => e.outcome)).toEqual(['aborted']);
  });

  it('hangs without blocking: the event loop turns, the lease runs out, the late write is fenced out', async () => {
    const f = await fixture({ latencyMs: 0, hangRate: 1, hangMs: 600 });
    const unit = await claim(f, 'w1', Date.now() + 100);
    let last = performance.now();
    let maxGap = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
    }, 5);
    const started = performance.now();
    try {
      const err = await provider.runUnit(ctx(f, unit, 'w1', { clock: systemClock })).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LeaseLostError);
    } finally {
      clearInterval(ticker);
    }
    expect(performance.now() - started).toBeGreaterThanOrEqual(590);
    expect(maxGap).toBeLessThan(300);
    expect((await executions(unit.id)).map((e) => e.outcome)).toEqual(['lease_lost']);
    expect(await items(f.integration.id)).toEqual([]);
  });

  it('an abort ends a hang at once', async () => {
    const f = await fixture({ latencyMs: 0, hangRate: 1, hangMs: 600_000 });
    const unit = await claim(f, 'w1', T0 + 60_000);
    const ac = new AbortController();
    const running = provider.runUnit(ctx(f, unit, 'w1', { signal: ac.signal })).catch((e: unknown) => e);
    await until(async () => (await executions(unit.id)).length === 1);
    const reason = new Error('soft timeout');
    ac.abort(reason);
    expect(await running).toBe(reason);
    expect((await executions(unit.id)).map((e) => e.outcome)).toEqual(['aborted']);
  });

  it('the same seed and unit give the same decisions and items on every run', async () => {
    const config = { latencyMs: 0, seed: 3, failRate: 0.5, itemsPerDay: 2 };
    const parsed = parseSyntheticConfig(config);
    // A fixed unit id fixes the decision sequence: attempts 1–6 of this unit both fail and succeed.
    const f = await fixture(config, { id: '5eed0000-0000-4000-8000-000000000001' });
    const observed: boolean[] = [];
    for (const owner of ['a', 'b', 'c', 'd', 'e', 'f']) {
      const unit = await claim(f, owner, T0 + 60_000);
      const failed = await provider.runUnit(ctx(f, unit, owner)).then(
        () => false,
        () => true,
      );
      observed.push(failed);
      expect(failed).toBe(decideUnit(parsed, unit.id, unit.attempt).fail);
    }
    expect(observed).toContain(true);
    expect(observed).toContain(false);
    // Another integration with the same seed and window writes identical items.
    const g = await fixture(config);
    let attempt = 0;
    let unit = g.unit;
    do {
      unit = await claim(g, 'z', T0 + 60_000);
      attempt = unit.attempt;
    } while (decideUnit(parsed, unit.id, attempt).fail);
    await provider.runUnit(ctx(g, unit, 'z'));
    const strip = (rows: Awaited<ReturnType<typeof items>>) =>
      rows.map(({ item_key, item_day, payload, dataset_key }) => ({ item_key, item_day, payload, dataset_key }));
    expect(strip(await items(g.integration.id))).toEqual(strip(await items(f.integration.id)));
    expect(await items(g.integration.id)).toHaveLength(4);
  });
});

describe('metrics-rollup post-sync handler (PostgreSQL)', () => {
  let t: TestDatabase;
  let integrationId: string;
  const clock = new ManualClock(T0);

  beforeAll(async () => {
    t = await createTestDatabase();
    const integ = await t.db.query<{ id: string }>(
      `INSERT INTO syncrelay.integrations (org_id, provider, name) VALUES ($1, 'synthetic', 'm') RETURNING id`,
      [ORG],
    );
    integrationId = integ.rows[0]!.id;
    const other = await t.db.query<{ id: string }>(
      `INSERT INTO syncrelay.integrations (org_id, provider, name) VALUES ($1, 'synthetic', 'other') RETURNING id`,
      [ORG],
    );
    const put = (integ: string, day: string, n: number) =>
      t.db.query(
        `INSERT INTO syncrelay.synthetic_items (org_id, integration_id, source_key, dataset_key, item_key, item_day,
                                      payload, unit_id, lease_owner, written_at)
         SELECT $1, $2, 'S', 'work-items', $3 || '#' || g, $3::date, '{}', gen_random_uuid(), 'w', now()
           FROM generate_series(1, $4::int) AS g`,
        [ORG, integ, day, n],
      );
    await put(integrationId, '2026-01-01', 3);
    await put(integrationId, '2026-01-02', 5);
    await put(integrationId, '2026-01-04', 1);
    await put(other.rows[0]!.id, '2026-01-01', 7);
  });
  afterAll(async () => {
    await t.drop();
  });

  const payload = (runId: string, from: string | null, to: string | null) => ({
    orgId: ORG,
    runId,
    integrationId,
    provider: 'synthetic',
    datasets: ['work-items'],
    window: { from, to },
  });

  async function deliver(p: ReturnType<typeof payload>): Promise<void> {
    await t.db.transaction((tx) =>
      metricsRollupHandler.run(p, { tx, idempotencyKey: `${p.runId}:metrics-rollup`, clock, logger }),
    );
  }

  async function metrics(runId: string) {
    const res = await t.db.query<{ day: string; items: number; computed_at: Date }>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, items, computed_at FROM syncrelay.synthetic_metrics_daily
        WHERE sync_run_id = $1 ORDER BY computed_at, day`,
      [runId],
    );
    return res.rows;
  }

  it('applies to synthetic integrations only', () => {
    const info = (provider: string): IntegrationInfo => ({ id: 'i', orgId: ORG, provider, name: 'n', config: {} });
    expect(metricsRollupHandler.name).toBe('metrics-rollup');
    expect(metricsRollupHandler.appliesTo!(info('synthetic'))).toBe(true);
    expect(metricsRollupHandler.appliesTo!(info('linear'))).toBe(false);
  });

  it('inserts one row per (partial) day of the window with one computed_at per delivery', async () => {
    const runId = '11111111-1111-4111-8111-111111111111';
    await deliver(payload(runId, '2026-01-01T12:00:00.000Z', '2026-01-03T06:00:00.000Z'));
    clock.advance(5000);
    await deliver(payload(runId, '2026-01-01T12:00:00.000Z', '2026-01-03T06:00:00.000Z'));
    const rows = await metrics(runId);
    expect(rows.map((r) => [r.day, r.items])).toEqual([
      ['2026-01-01', 3],
      ['2026-01-02', 5],
      ['2026-01-03', 0],
      ['2026-01-01', 3],
      ['2026-01-02', 5],
      ['2026-01-03', 0],
    ]);
    const generations = [...new Set(rows.map((r) => r.computed_at.getTime()))];
    expect(generations).toEqual([T0, T0 + 5000]);
  });

  it('an exact-day window ends before its end day', async () => {
    const runId = '33333333-3333-4333-8333-333333333333';
    await deliver(payload(runId, '2026-01-02T00:00:00.000Z', '2026-01-04T00:00:00.000Z'));
    expect((await metrics(runId)).map((r) => [r.day, r.items])).toEqual([
      ['2026-01-02', 5],
      ['2026-01-03', 0],
    ]);
  });

  it('uses the days present in synthetic_items for a NULL window', async () => {
    const runId = '22222222-2222-4222-8222-222222222222';
    await deliver(payload(runId, null, null));
    const rows = await metrics(runId);
    expect(rows.map((r) => [r.day, r.items])).toEqual([
      ['2026-01-01', 3],
      ['2026-01-02', 5],
      ['2026-01-04', 1],
    ]);
    expect(new Set(rows.map((r) => r.computed_at.getTime())).size).toBe(1);
  });
});

describe('ProviderRegistry', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 1 });
  });
  afterAll(async () => {
    await t.drop();
  });

  const info = (provider: string): IntegrationInfo => ({ id: 'i', orgId: ORG, provider, name: 'n', config: {} });

  it('holds synthetic, GitHub, Linear and Jira, each with its retry-safe sink and handler, by default', () => {
    const registry = defaultRegistry(t.db);
    expect(registry.list().map((p) => p.name)).toEqual(['synthetic', 'github', 'linear', 'jira']);
    expect(registry.get('synthetic').name).toBe('synthetic');
    const sink = registry.sinkFor('synthetic');
    expect(sink.surfaces).toEqual(['synthetic_items']);
    expect(sink.retrySafeSurfaces).toEqual(['synthetic_items']);
    expect(registry.postSyncHandlersFor(info('synthetic')).map((h) => h.name)).toEqual(['metrics-rollup']);
    expect(registry.postSyncHandlersFor(info('github')).map((h) => h.name)).toEqual(['work-item-metrics']);
    expect(registry.postSyncHandlersFor(info('linear')).map((h) => h.name)).toEqual(['work-item-metrics']);
    expect(registry.sinkFor('linear')).toBe(registry.sinkFor('github'));
    expect(registry.sinkFor('jira')).toBe(registry.sinkFor('github'));
    const github = registry.sinkFor('github');
    expect(github.surfaces).toEqual(expect.arrayContaining(['work_items', 'pull_requests', 'commits']));
    expect(github.retrySafeSurfaces).toEqual(github.surfaces);
  });

  it('throws unknown_provider for a name it does not hold, and refuses duplicates', () => {
    const registry = defaultRegistry(t.db);
    const err = (() => {
      try {
        registry.get('asana');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(UnknownProviderError);
    expect((err as SyncRelayError).code).toBe('unknown_provider');
    expect(() => registry.sinkFor('asana')).toThrow(UnknownProviderError);
    expect(() => registry.register(createSyntheticProvider())).toThrow(SyncRelayError);
  });

  it('adds registry-wide post-sync handlers filtered by appliesTo', () => {
    const registry = new ProviderRegistry().register(createSyntheticProvider());
    expect(() => registry.sinkFor('synthetic')).toThrow(/no sink/);
    registry.registerPostSyncHandler({ name: 'audit', run: async () => undefined });
    registry.registerPostSyncHandler({
      name: 'gh-only',
      appliesTo: (i) => i.provider === 'github',
      run: async () => undefined,
    });
    expect(registry.postSyncHandlersFor(info('synthetic')).map((h) => h.name)).toEqual(['metrics-rollup', 'audit']);
    expect(registry.postSyncHandlersFor(info('github')).map((h) => h.name)).toEqual(['audit', 'gh-only']);
    expect(() => registry.registerPostSyncHandler({ name: 'metrics-rollup', run: async () => undefined })).toThrow(
      SyncRelayError,
    );
  });
});

/** Polls `check` (bounded) until it holds — waits on an observable state, never a guessed delay. */
async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('condition never held');
}
