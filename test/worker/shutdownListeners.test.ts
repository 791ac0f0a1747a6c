/**
 * A worker passes its one shutdown signal to every unit it runs. With a listener per unit lease,
 * a worker at concurrency 32 put more than 10 'abort' listeners on that signal and Node warned
 * (MaxListenersExceededWarning). The leases now share one listener (src/tasks/shutdownFanout.ts).
 */
import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import type { EngineContext } from '../../src/context.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Provider, UnitContext } from '../../src/sdk/types.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { UnitLease } from '../../src/tasks/lease.js';
import { runTerminal, testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const CONCURRENCY = 32;
const DAY = 86_400_000;

/** Every process warning emitted while a test runs. */
let warnings: Error[] = [];
const onWarning = (w: Error): void => void warnings.push(w);

beforeEach(() => {
  warnings = [];
  process.on('warning', onWarning);
});

afterEach(() => {
  process.off('warning', onWarning);
});

/** Lets Node deliver a pending 'warning' event (emitted on a later tick). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function leaseCtx(): EngineContext {
  const settings = testSettings({ leaseMs: 300_000 });
  return { settings, logger: silentLogger() } as unknown as EngineContext;
}

describe('one shutdown signal, many unit leases', () => {
  it('32 leases on one signal add one listener, end together on abort and leave none behind', async () => {
    const shutdown = new AbortController();
    const ctx = leaseCtx();
    const expires = new Date(Date.now() + 300_000);
    const leases = Array.from(
      { length: CONCURRENCY },
      (_, i) => new UnitLease(ctx, `unit-${i}`, `owner-${i}`, expires, shutdown.signal),
    );
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1);
    leases.slice(0, 16).forEach((l) => l.stop());
    shutdown.abort();
    await settle();
    expect(leases.slice(0, 16).map((l) => l.outcome)).toEqual(Array(16).fill('held'));
    expect(leases.slice(16).map((l) => l.outcome)).toEqual(Array(16).fill('shutdown'));
    expect(leases.slice(16).every((l) => l.signal.aborted)).toBe(true);
    leases.forEach((l) => l.stop());
    expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
  });

  it('a lease made after the abort ends at once', () => {
    const shutdown = new AbortController();
    shutdown.abort();
    const lease = new UnitLease(leaseCtx(), 'u', 'o', new Date(Date.now() + 300_000), shutdown.signal);
    expect(lease.outcome).toBe('shutdown');
  });
});

/** Units wait until the test opens the gate (or their lease aborts them). */
function gatedProvider(running: Set<string>, gate: Promise<void>): Provider {
  return {
    name: 'gated',
    datasets: [{ key: 'items', tier: 'work_item', costClass: 'api', keepsWatermark: false, surfaces: ['work_items'] }],
    async runUnit(ctx: UnitContext) {
      running.add(ctx.unit.id);
      await Promise.race([
        gate,
        new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('unit aborted')))),
      ]);
      return { items: 0 };
    },
  };
}

describe(`a worker at concurrency ${CONCURRENCY}`, () => {
  let t: TestDatabase | undefined;
  let engine: Engine | undefined;
  afterEach(async () => {
    await engine?.close();
    await t?.drop();
    engine = t = undefined;
  });

  it('runs 40 units side by side without a MaxListenersExceededWarning', async () => {
    t = await createTestDatabase();
    const running = new Set<string>();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    engine = await Engine.open({
      settings: testSettings({ leaseMs: 300_000, unitsPerMessage: 1, workerOrgShare: 1, concurrencyPerBucket: 64 }),
      db: t.db,
      broker: new InProcessBroker(),
      registry: new ProviderRegistry().register(gatedProvider(running, gate), normalizedSink(t.db)),
      logger: silentLogger(),
      migrate: false,
    });
    engine.startWorker({ concurrency: CONCURRENCY });
    await engine.startReconciler({ scheduler: false });
    const integ = await engine.createIntegration({
      orgId: 'org-listeners',
      provider: 'gated',
      name: 'many-sources',
      sources: Array.from({ length: 40 }, (_, i) => `s${i}`),
      datasets: ['items'],
    });
    const since = new Date('2026-01-05T00:00:00Z');
    const { syncRunId } = await engine.trigger({
      orgId: 'org-listeners',
      integrationId: integ.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since,
      before: new Date(since.getTime() + DAY),
    });
    await waitFor(() => Promise.resolve(running.size >= CONCURRENCY), 30_000);
    await settle();
    open();
    expect(await runTerminal(t.db, syncRunId)).toBe('success');
    await settle();
    expect(warnings.map((w) => `${w.name}: ${w.message}`).filter((w) => w.includes('MaxListeners'))).toEqual([]);
  });
});
