/** mapLimited: a fixed number of calls in flight, order kept, nothing started after a failure or an abort. */
import { describe, expect, it } from 'vitest';
import { mapLimited } from '../../../src/providers/kit/concurrency.js';

/** A call whose answers the test releases one by one, recording which started. */
function gatedCall() {
  const pending: { n: number; settle: (fail: boolean) => void }[] = [];
  const started: number[] = [];
  const call = (n: number) =>
    new Promise<string>((resolve, reject) => {
      started.push(n);
      pending.push({ n, settle: (fail) => (fail ? reject(new Error(`failed ${n}`)) : resolve(`d${n}`)) });
    });
  const release = async (n: number, fail = false) => {
    const i = pending.findIndex((p) => p.n === n);
    pending.splice(i, 1)[0]!.settle(fail);
    await new Promise((r) => setImmediate(r));
  };
  return { call, started, pending, release };
}

/** What a promise ended with: its value, or the error it was rejected with. */
function outcomeOf<T>(p: Promise<T>): Promise<T | Error> {
  return p.then(
    (v) => v,
    (e: unknown) => e as Error,
  );
}

const tick = () => new Promise((r) => setImmediate(r));

describe('mapLimited', () => {
  it('keeps n calls in flight (a slow one holds up only its slot) and returns answers in order', async () => {
    const g = gatedCall();
    const all = mapLimited([1, 2, 3, 4, 5, 6], 3, g.call);
    await tick();
    expect(g.started).toEqual([1, 2, 3]);
    await g.release(2);
    await g.release(3);
    expect(g.started).toEqual([1, 2, 3, 4, 5]); // 1 still pending: two more started
    expect(g.pending).toHaveLength(3);
    for (const n of [5, 4, 6, 1]) await g.release(n);
    expect(await all).toEqual(['d1', 'd2', 'd3', 'd4', 'd5', 'd6']);
  });

  it('starts nothing after a failure, and throws the first one once the others in flight ended', async () => {
    const g = gatedCall();
    let settled = false;
    const outcome = outcomeOf(mapLimited([1, 2, 3, 4, 5], 2, g.call)).finally(() => (settled = true));
    await tick();
    await g.release(1, true);
    expect(g.started).toEqual([1, 2]);
    expect(settled).toBe(false); // 2 is still in flight
    await g.release(2, true);
    expect(g.started).toEqual([1, 2]);
    expect(((await outcome) as Error).message).toBe('failed 1');
  });

  it('starts nothing once the signal aborts, and throws its reason after the calls in flight ended', async () => {
    const g = gatedCall();
    const abort = new AbortController();
    const outcome = outcomeOf(mapLimited([1, 2, 3, 4], 2, g.call, abort.signal));
    await tick();
    abort.abort(new Error('unit stopped'));
    await g.release(1);
    await g.release(2);
    expect(g.started).toEqual([1, 2]);
    expect(((await outcome) as Error).message).toBe('unit stopped');
  });

  it('runs one call at a time with a limit below 1, and none for no items', async () => {
    const g = gatedCall();
    const all = mapLimited([1, 2], 0, g.call);
    await tick();
    expect(g.started).toEqual([1]);
    await g.release(1);
    await g.release(2);
    expect(await all).toEqual(['d1', 'd2']);
    expect(await mapLimited([], 4, g.call)).toEqual([]);
  });
});
