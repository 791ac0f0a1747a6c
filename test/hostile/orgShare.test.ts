/**
 * One org must not stall everyone: a worker shares its slots between orgs (SYNC_WORKER_ORG_SHARE),
 * and a cancelled run's units stop within the worker's watch interval, not at the next heartbeat.
 * Org A's provider calls go to a server on 127.0.0.1 that accepts and never answers.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { heartbeatIntervalMs, loadSettings } from '../../src/config.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Provider, UnitContext } from '../../src/sdk/types.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const CONCURRENCY = 4;
const SHARE = 0.5;
const WATCH_MS = 250;
const RECONCILE_MS = 1000;
/** Long enough that the heartbeat (a minute) cannot be what stops anything here. */
const LEASE_MS = 300_000;
const DAY = 86_400_000;

/** Accepts connections and never answers; counts the ones still open. */
class SilentServer {
  readonly open = new Set<Socket>();
  accepted = 0;
  private readonly server: Server = createServer((socket) => {
    this.accepted++;
    this.open.add(socket);
    socket.on('close', () => this.open.delete(socket));
    socket.on('error', () => undefined);
    socket.resume(); // read (and drop) the request, so a client's close is seen
  });

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as { port: number }).port;
  }

  async close(): Promise<void> {
    for (const s of this.open) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Why each hanging call ended (the abort reason's code), by unit. */
type AbortLog = Map<string, string>;

/** A provider whose `hang: true` integrations call the silent server and wait for its answer. */
function hangingProvider(port: number, aborts: AbortLog): Provider {
  return {
    name: 'hangtest',
    datasets: [
      { key: 'work-items', tier: 'work_item', costClass: 'api', keepsWatermark: false, surfaces: ['work_items'] },
    ],
    async runUnit(ctx: UnitContext) {
      if (ctx.integration.config.hang !== true) return { items: 0 };
      await callSilentServer(port, ctx.signal).catch((err: unknown) => {
        const reason: unknown = ctx.signal.reason;
        aborts.set(ctx.unit.id, (reason as { code?: string } | undefined)?.code ?? 'none');
        throw err;
      });
      return { items: 0 };
    },
  };
}

function callSilentServer(port: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', signal }, (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    req.end();
  });
}

interface Harness {
  engine: Engine;
  t: TestDatabase;
  server: SilentServer;
  aborts: AbortLog;
  close(): Promise<void>;
}

async function open(): Promise<Harness> {
  const server = new SilentServer();
  const port = await server.listen();
  const aborts: AbortLog = new Map();
  const t = await createTestDatabase();
  const broker = new InProcessBroker();
  const engine = await Engine.open({
    settings: testSettings({
      leaseMs: LEASE_MS,
      reconcileIntervalMs: RECONCILE_MS,
      unitsPerMessage: 1,
      workerOrgShare: SHARE,
    }),
    db: t.db,
    broker,
    registry: new ProviderRegistry().register(hangingProvider(port, aborts), normalizedSink(t.db)),
    logger: silentLogger(),
    migrate: false,
  });
  engine.startWorker({ concurrency: CONCURRENCY, watchIntervalMs: WATCH_MS, graceMs: 50 });
  await engine.startReconciler({ scheduler: false });
  return {
    engine,
    t,
    server,
    aborts,
    async close() {
      await engine.close();
      await broker.close();
      await server.close();
      await t.drop();
    },
  };
}

/** A one-day backfill of an integration with `sources` sources: one unit per source. */
async function backfill(h: Harness, orgId: string, sources: number, hang: boolean): Promise<string> {
  const integ = await h.engine.createIntegration({
    orgId,
    provider: 'hangtest',
    name: `${orgId}-${Math.random().toString(36).slice(2, 8)}`,
    sources: Array.from({ length: sources }, (_, i) => `s${i}`),
    datasets: ['work-items'],
    config: { hang },
  });
  const since = new Date('2026-01-05T00:00:00Z');
  const { syncRunId } = await h.engine.trigger({
    orgId,
    integrationId: integ.id,
    mode: 'backfill',
    triggeredBy: 'backfill',
    since,
    before: new Date(since.getTime() + DAY),
  });
  return syncRunId;
}

async function runStatus(h: Harness, runId: string): Promise<string> {
  const { rows } = await h.t.db.query<{ status: string }>(
    `SELECT status FROM ${h.t.db.schema.sync_runs} WHERE id = $1`,
    [runId],
  );
  return rows[0]!.status;
}

async function unitStatuses(h: Harness, runId: string): Promise<string[]> {
  const { rows } = await h.t.db.query<{ status: string }>(
    `SELECT status FROM ${h.t.db.schema.sync_run_units} WHERE sync_run_id = $1 ORDER BY id`,
    [runId],
  );
  return rows.map((r) => r.status);
}

describe('fair share between orgs on one worker', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("serves a second org's run while the first org's units hang in every slot", async () => {
    h = await open();
    const cap = Math.max(1, Math.floor(SHARE * CONCURRENCY));
    // Org A alone: six hanging units over three integrations take every slot (work-conserving).
    const aRuns = [await backfill(h, 'org-a', 2, true), await backfill(h, 'org-a', 2, true)];
    aRuns.push(await backfill(h, 'org-a', 2, true));
    await waitFor(() => Promise.resolve(h!.server.open.size === CONCURRENCY), 20_000);

    const bRun = await backfill(h, 'org-b', 2, false);
    // B's work is seen after one watch interval, A gives slots back at the next tick, then B's
    // dispatch and units run: a few intervals and relay passes, nowhere near any lease or timeout.
    const bound = 20 * WATCH_MS + 5 * RECONCILE_MS;
    const started = Date.now();
    await waitFor(async () => (await runStatus(h!, bRun)) === 'success', bound);
    expect(Date.now() - started).toBeLessThan(bound);

    // A is still hanging: its runs are open and it keeps at least its share of the slots.
    for (const run of aRuns) expect(['planned', 'dispatching']).toContain(await runStatus(h, run));
    expect(h.server.open.size).toBeGreaterThanOrEqual(cap);
    // What A gave back was put back for later, not lost: every A unit is still open.
    const aUnits = (await Promise.all(aRuns.map((r) => unitStatuses(h!, r)))).flat();
    expect(aUnits).toHaveLength(6);
    for (const s of aUnits) expect(['dispatching', 'running', 'retrying']).toContain(s);
    // The units that yielded were stopped by the worker, not by a heartbeat or a timeout.
    expect([...h.aborts.values()].every((code) => code === 'unit_yielded')).toBe(true);
  }, 60_000);

  it("stops a cancelled run's hanging units well before the next heartbeat", async () => {
    h = await open();
    const runId = await backfill(h, 'org-a', CONCURRENCY, true);
    // Alone, the org uses every slot.
    await waitFor(() => Promise.resolve(h!.server.open.size === CONCURRENCY), 20_000);
    const held = (await unitStatuses(h, runId)).filter((s) => s === 'running');
    expect(held).toHaveLength(CONCURRENCY);

    const bound = heartbeatIntervalMs(LEASE_MS) / 6; // 10 s against a 60 s heartbeat
    const started = Date.now();
    expect(await h.engine.cancel(runId)).toBe('cancelled');
    await waitFor(() => Promise.resolve(h!.server.open.size === 0 && h!.aborts.size === CONCURRENCY), bound);
    expect(Date.now() - started).toBeLessThan(bound);

    expect([...h.aborts.values()]).toEqual(Array(CONCURRENCY).fill('unit_cancelled'));
    expect(await unitStatuses(h, runId)).toEqual(Array(CONCURRENCY).fill('cancelled'));
    expect(await runStatus(h, runId)).toBe('cancelled');
  }, 60_000);
});

describe('SYNC_WORKER_ORG_SHARE', () => {
  it('defaults to half the slots and takes a fraction 0 < x ≤ 1', () => {
    expect(loadSettings({}).workerOrgShare).toBe(0.5);
    expect(loadSettings({ SYNC_WORKER_ORG_SHARE: '1' }).workerOrgShare).toBe(1);
    expect(loadSettings({ SYNC_WORKER_ORG_SHARE: '0.25' }).workerOrgShare).toBe(0.25);
    for (const bad of ['0', '-0.5', '1.5', 'half', 'NaN']) {
      expect(() => loadSettings({ SYNC_WORKER_ORG_SHARE: bad })).toThrow(/SYNC_WORKER_ORG_SHARE/);
    }
  });
});
