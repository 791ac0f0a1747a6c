/**
 * The database gauges are read at most once per window however often the registry is scraped,
 * counted through a Db that records every statement and stepped with a manual clock.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { ManualClock } from '../../src/clock.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { EngineMetrics } from '../../src/observability/metrics.js';
import { startApiServer, type RunningApiServer } from '../../src/api/server.js';
import { countingDb, type CountingDb } from '../helpers/countingDb.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

/** One read of the gauges: outbox groups, open units, live runs, recently finished units. */
const ROUND = 4;

let t: TestDatabase;
let counting: CountingDb;
beforeAll(async () => {
  t = await createTestDatabase();
  counting = countingDb(t.db);
});
afterAll(async () => {
  await t?.drop();
});

describe('EngineMetrics', () => {
  it('reads the database once per window, however often it is scraped', async () => {
    const clock = new ManualClock(Date.UTC(2026, 4, 1));
    const metrics = new EngineMetrics({ db: counting.db, clock });
    const before = counting.statements.length;
    for (let i = 0; i < 10; i++) await metrics.metrics();
    await Promise.all(Array.from({ length: 10 }, () => metrics.metrics()));
    expect(counting.statements.length - before).toBe(ROUND);

    clock.advance(4999);
    await metrics.metrics();
    expect(counting.statements.length - before).toBe(ROUND);
    clock.advance(1);
    await metrics.metrics();
    await metrics.metrics();
    expect(counting.statements.length - before).toBe(2 * ROUND);
  });

  it("this engine's reconciler passes and relay batches make the next scrape read afresh", async () => {
    const clock = new ManualClock(Date.UTC(2026, 4, 1));
    const metrics = new EngineMetrics({ db: counting.db, clock });
    await metrics.metrics();
    const before = counting.statements.length;
    metrics.passEnded('ok', 0.01);
    await metrics.metrics();
    metrics.relayPublished('dispatch_sync_run', 2);
    await metrics.metrics();
    metrics.relayPublished('dispatch_sync_run', 0); // nothing happened
    metrics.unitEnded('synthetic', 'success', 0.1); // hot path: waits for the window
    await metrics.metrics();
    expect(counting.statements.length - before).toBe(2 * ROUND);
  });

  it('with snapshotMaxAgeMs 0, reads on every scrape', async () => {
    const clock = new ManualClock(Date.UTC(2026, 4, 1));
    const metrics = new EngineMetrics({ db: counting.db, clock }, { snapshotMaxAgeMs: 0 });
    const before = counting.statements.length;
    for (let i = 0; i < 3; i++) await metrics.metrics();
    expect(counting.statements.length - before).toBe(3 * ROUND);
  });
});

describe('GET /metrics on a server', () => {
  let engine: Engine | undefined;
  let server: RunningApiServer | undefined;
  afterEach(async () => {
    await server?.close();
    await engine?.close();
  });

  it('runs the aggregate queries once for many scrapes within the window', async () => {
    const clock = new ManualClock(Date.UTC(2026, 4, 1));
    engine = await Engine.open({
      settings: testSettings(),
      db: counting.db,
      broker: new InProcessBroker(),
      logger: silentLogger(),
      clock,
      migrate: false,
    });
    server = await startApiServer({ engine, host: '127.0.0.1', port: 0 });
    const aggregates = () => counting.count('GROUP BY');
    const before = aggregates();
    for (let i = 0; i < 25; i++) expect((await fetch(`${server.url}/metrics`)).status).toBe(200);
    await Promise.all(Array.from({ length: 25 }, () => fetch(`${server!.url}/metrics`).then((r) => r.text())));
    expect(aggregates() - before).toBe(ROUND);
    clock.advance(5000);
    await (await fetch(`${server.url}/metrics`)).text();
    expect(aggregates() - before).toBe(2 * ROUND);
  });
});
