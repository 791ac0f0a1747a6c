/** The detail helper: a fixed number of requests in flight, order kept, nothing started after a failure. */
import { describe, expect, it } from 'vitest';
import { details, type Job } from '../../../src/providers/github/pages.js';

const job = (detailConcurrency: number) => ({ detailConcurrency }) as Job;

/** A fetch whose answers the test releases one by one, recording how many were in flight. */
function gatedFetch() {
  const pending: { n: number; settle: (fail: boolean) => void }[] = [];
  const started: number[] = [];
  const fetch = (n: number) =>
    new Promise<string>((resolve, reject) => {
      started.push(n);
      pending.push({ n, settle: (fail) => (fail ? reject(new Error(`failed ${n}`)) : resolve(`d${n}`)) });
    });
  const release = async (n: number, fail = false) => {
    const i = pending.findIndex((p) => p.n === n);
    pending.splice(i, 1)[0]!.settle(fail);
    await new Promise((r) => setImmediate(r));
  };
  return { fetch, started, pending, release };
}

describe('details', () => {
  it('keeps n requests in flight (a slow one holds up only its slot) and returns answers in order', async () => {
    const g = gatedFetch();
    const all = details(job(3), [1, 2, 3, 4, 5, 6], g.fetch);
    await new Promise((r) => setImmediate(r));
    expect(g.started).toEqual([1, 2, 3]);
    await g.release(2);
    await g.release(3);
    expect(g.started).toEqual([1, 2, 3, 4, 5]); // 1 still pending: two more started
    expect(g.pending).toHaveLength(3);
    for (const n of [5, 4, 6, 1]) await g.release(n);
    expect(await all).toEqual(['d1', 'd2', 'd3', 'd4', 'd5', 'd6']);
  });

  it('starts nothing after a failure, and throws the first one once the others in flight ended', async () => {
    const g = gatedFetch();
    const all = details(job(2), [1, 2, 3, 4, 5], g.fetch);
    const outcome = all.then(
      () => null,
      (e: unknown) => e,
    );
    await new Promise((r) => setImmediate(r));
    await g.release(1, true);
    expect(g.started).toEqual([1, 2]);
    await g.release(2, true);
    expect(g.started).toEqual([1, 2]);
    expect(((await outcome) as Error).message).toBe('failed 1');
  });
});
