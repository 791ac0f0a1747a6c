/**
 * run_sync_unit messages that carry several units of one run (SYNC_UNITS_PER_MESSAGE): one claim
 * statement for the batch, each unit still claimed by its own CAS under its own owner and ended by
 * its own terminal CAS; a unit of the batch that is not dispatchable any more does not hold the
 * others back; the same batch delivered twice (in turn or at once) runs each unit once; a worker
 * that dies holding one unit of a batch loses that unit's lease only.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskMessage } from '../../src/broker/types.js';
import { MIN_UNIT_MESSAGES } from '../../src/broker/messages.js';
import { runSyncUnit } from '../../src/tasks/runSyncUnit.js';
import { countingDb } from '../helpers/countingDb.js';
import { Harness, SECOND, within } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const PER_MESSAGE = 8;

async function dispatched(weeks: number): Promise<{ h: Harness; runId: string; msgs: TaskMessage[] }> {
  h = await Harness.open({ settings: { unitsPerMessage: PER_MESSAGE, concurrencyPerBucket: 100 } });
  const integ = await h.integration({ datasets: ['work-items'] });
  const { syncRunId: runId } = await h.backfill(integ, weeks * 7);
  await h.pass();
  for (const m of await h.take('dispatch_sync_run')) await h.deliver(m);
  return { h, runId, msgs: await h.take('run_sync_unit') };
}

const idsOf = (m: TaskMessage) => m.payload.unitIds ?? [m.payload.unitId!];

describe('run_sync_unit batches', () => {
  it('spreads a dispatch over messages of at most SYNC_UNITS_PER_MESSAGE units, each unit in one', async () => {
    const { h, runId, msgs } = await dispatched(40); // 40 weekly units
    const units = await h.units(runId);
    expect(units).toHaveLength(40);
    expect(msgs.length).toBeGreaterThanOrEqual(MIN_UNIT_MESSAGES);
    for (const m of msgs) expect(idsOf(m).length).toBeLessThanOrEqual(PER_MESSAGE);
    expect(msgs.flatMap(idsOf).sort()).toEqual(units.map((u) => u.id).sort());
    expect(new Set(msgs.map((m) => m.jobId)).size).toBe(msgs.length);
  });

  it('claims a batch in one statement, each unit under its own owner, and ends each by its own CAS', async () => {
    const { h, runId, msgs } = await dispatched(8);
    const batch = msgs.find((m) => idsOf(m).length > 1)!;
    const counting = countingDb(h.db);
    const ctx = h.worker({ db: counting.db });
    const outcomes = (await h.deliver(batch, ctx)) as string[];
    expect(outcomes).toEqual(idsOf(batch).map(() => 'success'));
    expect(counting.count("SET status = 'running'")).toBe(1);
    const ended = (await h.units(runId)).filter((u) => idsOf(batch).includes(u.id));
    expect(ended.every((u) => u.status === 'success' && u.attempts === 1)).toBe(true);
    expect(new Set(ended.map((u) => u.lease_owner)).size).toBe(ended.length);
  });

  it('runs the rest of a batch when one of its units is no longer dispatchable', async () => {
    const { h, msgs } = await dispatched(8);
    const batch = msgs.find((m) => idsOf(m).length > 1)!;
    const [first, ...rest] = idsOf(batch);
    expect(await runSyncUnit(h.ctx, first!)).toBe('success');
    expect(await h.deliver(batch)).toEqual(['not_dispatchable', ...rest.map(() => 'success')]);
  });

  it('runs each unit once when the same batch is delivered twice, in turn or at once', async () => {
    const { h, runId, msgs } = await dispatched(16);
    const [a, b, ...others] = msgs;
    h.requeue(others);
    await h.deliver(a!);
    expect(await h.deliver(a!)).toEqual(idsOf(a!).map(() => 'not_dispatchable'));
    const both = (await Promise.all([h.deliver(b!), h.deliver(b!)])) as string[][];
    const perUnit = idsOf(b!).map((_, i) => [both[0]![i], both[1]![i]].sort());
    for (const o of perUnit) expect(o).toEqual(['not_dispatchable', 'success']);
    for (const id of [...idsOf(a!), ...idsOf(b!)]) {
      expect((await h.executions(id)).map((e) => e.outcome)).toEqual(['success']);
    }
    expect((await h.settle(runId)).status).toBe('success');
  });

  it('a worker that dies holding one unit of a batch loses that unit only; the run still ends', async () => {
    const { h, runId, msgs } = await dispatched(8);
    const batch = msgs.find((m) => idsOf(m).length > 1)!;
    h.requeue(msgs.filter((m) => m !== batch));
    const [stuck, ...rest] = idsOf(batch);
    const hold = h.provider.holdAtWrite(stuck!, 0, { abortable: false });
    const done = h.deliver(batch);
    await within(hold.reached, 5000, 'the held unit');
    for (const id of rest) await within(waitStatus(h, id, 'success'), 5000, `unit ${id} of the batch`);
    expect((await h.unit(stuck!)).status).toBe('running');
    h.advance(2 * SECOND + 1);
    expect(await h.pass()).toMatchObject({ expired_units: 1 });
    expect(await h.unit(stuck!)).toMatchObject({ status: 'failed' });
    hold.release();
    const outcomes = (await within(done, 5000, 'the thawed batch')) as string[];
    expect(outcomes[0]).toBe('lease_lost');
    expect(outcomes.slice(1)).toEqual(rest.map(() => 'success'));
    const run = await h.settle(runId);
    expect(run.status).toBe('partial_failed');
  });
});

async function waitStatus(h: Harness, unitId: string, status: string): Promise<void> {
  for (;;) {
    if ((await h.unit(unitId)).status === status) return;
    await new Promise((r) => setImmediate(r));
  }
}
