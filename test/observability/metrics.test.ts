/**
 * Prometheus metrics: `/metrics` scraped from a real server (127.0.0.1, cloned PostgreSQL, BullMQ on
 * Redis) after a run; scrape-time gauges and expire counters stepped with a manual clock; rate-limit
 * retries; and two engines in one process with registries of their own.
 */
import { register as globalRegistry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { ManualClock } from '../../src/clock.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { claimUnit } from '../../src/store/units.js';
import { dispatchSyncRun } from '../../src/tasks/dispatchSyncRun.js';
import { call, openApiHarness, SYNTHETIC, type ApiHarness } from '../api/helpers.js';
import { openTestEngine, testSettings, waitFor, type TestEngine } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { metricNames, parseMetrics, valueOf, type Sample } from './prom.js';

const NAMES = [
  'syncrelay_outbox_rows',
  'syncrelay_outbox_oldest_pending_age_seconds',
  'syncrelay_relay_publishes_total',
  'syncrelay_relay_publish_failures_total',
  'syncrelay_relay_skipped_total',
  'syncrelay_units',
  'syncrelay_units_finished_recently',
  'syncrelay_runs',
  'syncrelay_unit_duration_seconds',
  'syncrelay_lease_expiries_total',
  'syncrelay_unit_retries_total',
  'syncrelay_reconciler_pass_duration_seconds',
  'syncrelay_trigger_requests_total',
  'syncrelay_metrics_collect_errors_total',
];
const KINDS = ['dispatch_sync_run', 'finalize_sync_run', 'post_sync'];

async function scrape(engine: Engine): Promise<Sample[]> {
  return parseMetrics(await engine.metrics.metrics());
}

describe('GET /metrics on a real server', () => {
  let h: ApiHarness;
  afterEach(async () => {
    await h?.close();
  });

  it('is public and exposes every series with the values of a finished run', async () => {
    h = await openApiHarness();
    const created = await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body: SYNTHETIC });
    const path = `/api/v1/integrations/${created.body.id}/backfill`;
    const body = { since: '2026-01-01T00:00:00Z', before: '2026-01-15T00:00:00Z' };
    const first = await call(h.url, 'POST', path, { token: h.tokens.trigger, body });
    expect(first.status).toBe(202);
    expect((await call(h.url, 'POST', path, { token: h.tokens.trigger, body })).status).toBe(409);
    expect((await call(h.url, 'POST', path, { token: h.tokens.trigger, body: { since: 'x' } })).status).toBe(400);
    expect((await call(h.url, 'POST', path, { body })).status).toBe(401);
    expect(
      (
        await call(h.url, 'POST', `/api/v1/integrations/${created.body.id}/sync`, {
          token: h.tokens.trigger,
          body: { mode: 'incremental' },
        })
      ).status,
    ).toBe(202);

    // Before any worker: the planned units and the due dispatch rows are visible.
    const before = parseMetrics((await call(h.url, 'GET', '/metrics')).body);
    expect(valueOf(before, 'syncrelay_outbox_rows', { kind: 'dispatch_sync_run', status: 'pending' })).toBe(2);
    expect(valueOf(before, 'syncrelay_units', { status: 'planned' })).toBeGreaterThan(0);
    expect(valueOf(before, 'syncrelay_runs', { status: 'planned' })).toBe(2);

    h.engine.startWorker({ concurrency: 4 });
    await h.engine.startReconciler();
    // at-most-once post_sync is marked before it is published: wait for both publishes too. A
    // dispatch row may still be pending after its run ended (a dispatch task that found the run
    // held re-arms itself 0.5 s later, and the relay then marks it): wait until none is.
    await waitFor(async () => {
      const { rows } = await h.db.query<{ n: number; pending: number }>(
        "SELECT count(*) FILTER (WHERE kind = 'post_sync' AND status = 'dispatched')::int AS n, " +
          "count(*) FILTER (WHERE status = 'pending')::int AS pending FROM syncrelay.sync_dispatch_outbox",
      );
      return (
        rows[0]!.n === 2 &&
        rows[0]!.pending === 0 &&
        valueOf(await scrape(h.engine), 'syncrelay_relay_publishes_total', { kind: 'post_sync' }) === 2
      );
    }, 60_000);

    const res = await fetch(`${h.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    for (const name of NAMES) expect(metricNames(text), name).toContain(name);
    const s = parseMetrics(text);

    const { rows: units } = await h.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM syncrelay.sync_run_units WHERE status = 'success'",
    );
    const total = units[0]!.n;
    expect(total).toBeGreaterThan(2);
    for (const kind of KINDS) {
      expect(valueOf(s, 'syncrelay_outbox_rows', { kind, status: 'dispatched' }), kind).toBe(2);
      expect(valueOf(s, 'syncrelay_outbox_rows', { kind, status: 'pending' }), kind).toBe(0);
      expect(valueOf(s, 'syncrelay_outbox_oldest_pending_age_seconds', { kind }), kind).toBe(0);
      expect(valueOf(s, 'syncrelay_relay_publishes_total', { kind }), kind).toBeGreaterThanOrEqual(2);
      expect(valueOf(s, 'syncrelay_relay_publish_failures_total', { kind }), kind).toBe(0);
    }
    for (const status of ['planned', 'dispatching', 'running', 'retrying'])
      expect(valueOf(s, 'syncrelay_units', { status }), status).toBe(0);
    expect(valueOf(s, 'syncrelay_units_finished_recently', { status: 'success' })).toBe(total);
    expect(valueOf(s, 'syncrelay_units_finished_recently', { status: 'failed' })).toBe(0);
    expect(valueOf(s, 'syncrelay_runs')).toBe(0);
    expect(valueOf(s, 'syncrelay_unit_duration_seconds_count', { outcome: 'success', provider: 'synthetic' })).toBe(
      total,
    );
    expect(valueOf(s, 'syncrelay_unit_duration_seconds_sum')).toBeGreaterThan(0);
    expect(valueOf(s, 'syncrelay_unit_duration_seconds_bucket', { outcome: 'success', le: '+Inf' })).toBe(total);
    expect(valueOf(s, 'syncrelay_reconciler_pass_duration_seconds_count', { result: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(s, 'syncrelay_reconciler_pass_duration_seconds_count', { result: 'error' })).toBe(0);
    expect(valueOf(s, 'syncrelay_lease_expiries_total')).toBe(0);
    expect(valueOf(s, 'syncrelay_unit_retries_total')).toBe(0);
    expect(valueOf(s, 'syncrelay_trigger_requests_total', { operation: 'backfill', code: '202' })).toBe(1);
    expect(valueOf(s, 'syncrelay_trigger_requests_total', { operation: 'backfill', code: '409' })).toBe(1);
    expect(valueOf(s, 'syncrelay_trigger_requests_total', { operation: 'backfill', code: '400' })).toBe(1);
    expect(valueOf(s, 'syncrelay_trigger_requests_total', { operation: 'backfill', code: '401' })).toBe(1);
    expect(valueOf(s, 'syncrelay_trigger_requests_total', { operation: 'sync', code: '202' })).toBe(1);
    expect(valueOf(s, 'syncrelay_metrics_collect_errors_total')).toBe(0);
  });
});

describe('scrape-time gauges and the expire phase (manual clock)', () => {
  let te: TestEngine;
  afterEach(async () => {
    await te?.close();
  });

  it('counts pending age, units by status and an expired lease by decision', async () => {
    const clock = new ManualClock(Date.UTC(2026, 2, 2));
    te = await openTestEngine({ clock });
    const { engine } = te;
    const integ = await engine.createIntegration({
      orgId: 'org-m',
      provider: 'synthetic',
      name: 'm',
      sources: ['s1'],
      datasets: ['teams', 'work-items'],
      config: {},
    });
    const { syncRunId, units } = await engine.trigger({
      orgId: 'org-m',
      integrationId: integ.id,
      mode: 'full_resync',
      triggeredBy: 'manual',
    });
    clock.advance(30_000);
    let s = await scrape(engine);
    expect(valueOf(s, 'syncrelay_outbox_oldest_pending_age_seconds', { kind: 'dispatch_sync_run' })).toBe(30);
    expect(valueOf(s, 'syncrelay_units', { status: 'planned' })).toBe(units);
    expect(valueOf(s, 'syncrelay_runs', { status: 'planned' })).toBe(1);

    await engine.reconcileOnce(); // relays the dispatch row (nobody consumes it)
    await dispatchSyncRun(engine.ctx, syncRunId); // the reference unit first
    const { rows } = await engine.db.query<{ id: string }>(
      "SELECT id FROM syncrelay.sync_run_units WHERE sync_run_id = $1 AND status = 'dispatching'",
      [syncRunId],
    );
    expect(rows).toHaveLength(1);
    const { settings } = engine.ctx;
    await claimUnit(engine.db, {
      unitId: rows[0]!.id,
      owner: 'gone',
      now: clock.now(),
      leaseMs: settings.leaseMs,
      maxLifetimeMs: settings.maxLifetimeMs,
    });
    s = await scrape(engine);
    expect(valueOf(s, 'syncrelay_units', { status: 'running' })).toBe(1);
    expect(valueOf(s, 'syncrelay_runs', { status: 'dispatching' })).toBe(1);
    expect(valueOf(s, 'syncrelay_relay_publishes_total', { kind: 'dispatch_sync_run' })).toBe(1);

    clock.advance(settings.leaseMs + 1000);
    await engine.reconcileOnce();
    s = await scrape(engine);
    expect(valueOf(s, 'syncrelay_lease_expiries_total', { decision: 'worker_lost' })).toBe(1);
    expect(valueOf(s, 'syncrelay_lease_expiries_total')).toBe(1);
    expect(valueOf(s, 'syncrelay_units', { status: 'running' })).toBe(0);
    expect(valueOf(s, 'syncrelay_units_finished_recently', { status: 'failed' })).toBe(1);
    expect(valueOf(s, 'syncrelay_reconciler_pass_duration_seconds_count', { result: 'ok' })).toBe(2);
  });

  it('counts rate-limit deferrals as retries, and each attempt in the duration histogram', async () => {
    te = await openTestEngine();
    const { engine } = te;
    const integ = await engine.createIntegration({
      orgId: 'org-r',
      provider: 'synthetic',
      name: 'limited',
      sources: ['s1'],
      datasets: ['teams'],
      config: { rateLimitRate: 1, rateLimitRetryAfterMs: 0, latencyMs: 0 },
    });
    engine.startWorker({ concurrency: 2 });
    await engine.startReconciler();
    const { syncRunId } = await engine.trigger({
      orgId: 'org-r',
      integrationId: integ.id,
      mode: 'full_resync',
      triggeredBy: 'manual',
    });
    const unit = await waitFor(async () => {
      const { rows } = await engine.db.query<{ status: string; rate_limit_deferrals: number }>(
        'SELECT u.status, u.rate_limit_deferrals FROM syncrelay.sync_run_units u ' +
          "JOIN syncrelay.sync_runs r ON r.id = u.sync_run_id WHERE r.id = $1 AND r.status = 'failed'",
        [syncRunId],
      );
      return rows[0];
    }, 60_000);
    expect(unit.status).toBe('failed');
    const s = await scrape(engine);
    expect(unit.rate_limit_deferrals).toBeGreaterThan(0);
    expect(valueOf(s, 'syncrelay_unit_retries_total', { reason: 'rate_limit' })).toBe(unit.rate_limit_deferrals);
    expect(valueOf(s, 'syncrelay_unit_duration_seconds_count', { outcome: 'retrying' })).toBe(
      unit.rate_limit_deferrals,
    );
    expect(valueOf(s, 'syncrelay_unit_duration_seconds_count', { outcome: 'failed' })).toBe(1);
  });
});

describe('two engines in one process', () => {
  let t: TestDatabase;
  const engines: Engine[] = [];
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
    await t?.drop();
  });

  it('each has a registry of its own; nothing lands in prom-client’s global registry', async () => {
    t = await createTestDatabase();
    const open = async () => {
      const e = await Engine.open({
        settings: testSettings(),
        db: t.db,
        broker: new InProcessBroker(),
        logger: silentLogger(),
        migrate: false,
      });
      engines.push(e);
      return e;
    };
    const a = await open();
    const b = await open();
    expect(a.metrics.registry).not.toBe(b.metrics.registry);

    const integ = await a.createIntegration({
      orgId: 'org-2',
      provider: 'synthetic',
      name: 'two',
      sources: ['s1'],
      datasets: ['teams'],
      config: {},
    });
    await a.trigger({ orgId: 'org-2', integrationId: integ.id, mode: 'full_resync', triggeredBy: 'manual' });
    await a.reconcileOnce();
    const [sa, sb] = [await scrape(a), await scrape(b)];
    expect(valueOf(sa, 'syncrelay_relay_publishes_total', { kind: 'dispatch_sync_run' })).toBe(1);
    expect(valueOf(sb, 'syncrelay_relay_publishes_total', { kind: 'dispatch_sync_run' })).toBe(0);
    expect(valueOf(sa, 'syncrelay_reconciler_pass_duration_seconds_count')).toBe(1);
    expect(valueOf(sb, 'syncrelay_reconciler_pass_duration_seconds_count')).toBe(0);
    // Database gauges read the same (shared) database.
    expect(valueOf(sa, 'syncrelay_outbox_rows', { kind: 'dispatch_sync_run', status: 'dispatched' })).toBe(1);
    expect(valueOf(sb, 'syncrelay_outbox_rows', { kind: 'dispatch_sync_run', status: 'dispatched' })).toBe(1);
    expect(globalRegistry.getMetricsAsArray().filter((m) => m.name.startsWith('syncrelay_'))).toEqual([]);
  });
});
