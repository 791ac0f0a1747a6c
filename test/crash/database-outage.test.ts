/**
 * A worker meets a PostgreSQL outage (found by `syncrelay chaos --pg-bin`: run_sync_unit messages a
 * worker took while the server was down were dropped, and their units waited for the dispatch-stale
 * repair — 15 minutes by default). The broker never redelivers, so the worker handles such a task
 * again once PostgreSQL answers; an error that is not about reaching the database is not retried.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Db, Tx } from '../../src/db/types.js';
import { isDatabaseUnavailable } from '../../src/db/retry.js';
import { Worker } from '../../src/worker/worker.js';
import { Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A Db whose next `n` statements or transactions fail with `make()` before reaching the server. */
class OutageDb implements Db {
  readonly kind: Db['kind'];
  readonly schema: Db['schema'];
  failed = 0;
  private remaining = 0;
  private make: () => Error = refused;

  constructor(private readonly inner: Db) {
    this.kind = inner.kind;
    this.schema = inner.schema;
  }

  failNext(n: number, make: () => Error = refused): void {
    this.remaining = n;
    this.make = make;
  }

  private gate(): void {
    if (this.remaining <= 0) return;
    this.remaining -= 1;
    this.failed += 1;
    throw this.make();
  }

  async query<R>(text: string, values?: readonly unknown[]) {
    this.gate();
    return this.inner.query<R>(text, values);
  }

  async exec(script: string) {
    this.gate();
    return this.inner.exec(script);
  }

  async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    this.gate();
    return this.inner.transaction(fn);
  }

  listen(channel: string, onNotify: (payload: string) => void) {
    return this.inner.listen(channel, onNotify);
  }

  close() {
    return Promise.resolve();
  }
}

function refused(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
}

/** A run of one work-item unit, dispatched: its run_sync_unit message taken, the unit dispatching. */
async function dispatchedUnit(h: Harness) {
  const integ = await h.integration();
  const { syncRunId: runId } = await h.backfill(integ, 7);
  await h.pass();
  for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
  const messages = await h.take('run_sync_unit');
  const units = await h.units(runId);
  const msg = messages.find((m) => units.some((u) => u.id === m.payload.unitId && u.tier !== 'reference'))!;
  expect((await h.unit(msg.payload.unitId!)).status).toBe('dispatching');
  return { runId, msg, unitId: msg.payload.unitId! };
}

describe('a worker and a PostgreSQL outage', () => {
  it('handles a run_sync_unit again once PostgreSQL answers: the unit runs, the message is not dropped', async () => {
    h = await Harness.open();
    const { msg, unitId } = await dispatchedUnit(h);
    const db = new OutageDb(h.db);
    const ctx = h.worker({ db });
    const worker = new Worker(ctx, { databaseRetryPauseMs: 1 });
    db.failNext(3);

    await worker.handle(msg);
    await ctx.unitEnds.settle();

    expect(db.failed).toBe(3);
    const unit = await h.unit(unitId);
    expect({ status: unit.status, attempts: unit.attempts }).toEqual({ status: 'success', attempts: 1 });
  });

  it('gives a task up once the outage outlasts databaseWaitMs (the repair takes the unit then)', async () => {
    h = await Harness.open();
    const { msg, unitId } = await dispatchedUnit(h);
    const db = new OutageDb(h.db);
    const worker = new Worker(h.worker({ db }), { databaseRetryPauseMs: 1, databaseWaitMs: 0 });
    db.failNext(1);

    await worker.handle(msg);

    expect(db.failed).toBe(1);
    expect((await h.unit(unitId)).status).toBe('dispatching');
  });

  it('does not handle a task again for an error that is not about reaching the database', async () => {
    h = await Harness.open();
    const { msg, unitId } = await dispatchedUnit(h);
    const db = new OutageDb(h.db);
    const worker = new Worker(h.worker({ db }), { databaseRetryPauseMs: 1 });
    db.failNext(3, () => Object.assign(new Error('value too long'), { code: '22001' }));

    await worker.handle(msg);

    expect(db.failed).toBe(1);
    expect((await h.unit(unitId)).status).toBe('dispatching');
  });
});

describe('isDatabaseUnavailable', () => {
  it('is true for an unreachable or restarting server, false for what a statement did', () => {
    const e = (code: string | undefined, message = 'x') => Object.assign(new Error(message), code ? { code } : {});
    for (const yes of [
      e('ECONNREFUSED'),
      e('ECONNRESET'),
      e('57P01', 'terminating connection due to administrator command'),
      e('57P02'),
      e('57P03', 'the database system is starting up'),
      e('08006'),
      e(undefined, 'Connection terminated unexpectedly'),
      e(undefined, 'Client has encountered a connection error and is not queryable'),
    ])
      expect(isDatabaseUnavailable(yes), yes.message).toBe(true);
    for (const no of [e('40001'), e('23505'), e('22001'), e(undefined, 'boom'), null, 'text'])
      expect(isDatabaseUnavailable(no)).toBe(false);
  });
});
