/** Group commit: the first call runs at once, calls made while batches are in flight run together. */
import { describe, expect, it } from 'vitest';
import { Coalescer } from '../../src/tasks/coalesce.js';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('Coalescer', () => {
  it('runs the first call at once and batches the calls made while it is in flight', async () => {
    const gate = deferred();
    const batches: number[][] = [];
    const c = new Coalescer<number, number>(async (batch) => {
      batches.push(batch);
      if (batches.length === 1) await gate.promise;
      return batch.map((x) => x * 10);
    }, 1);
    const first = c.submit(1);
    expect(batches).toEqual([[1]]);
    const rest = [c.submit(2), c.submit(3), c.submit(4)];
    gate.resolve();
    expect(await Promise.all([first, ...rest])).toEqual([10, 20, 30, 40]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('keeps up to maxInFlight batches running at once', async () => {
    const gates = [deferred(), deferred()];
    let running = 0;
    let most = 0;
    const c = new Coalescer<number, number>(async (batch) => {
      running += 1;
      most = Math.max(most, running);
      await gates[Math.min(batch[0]!, 1)]!.promise;
      running -= 1;
      return batch;
    }, 2);
    const a = c.submit(0);
    const b = c.submit(1);
    expect(running).toBe(2);
    gates[0]!.resolve();
    gates[1]!.resolve();
    expect(await Promise.all([a, b])).toEqual([0, 1]);
    expect(most).toBe(2);
  });

  it('rejects every call of a failed batch, and later batches still run', async () => {
    let calls = 0;
    const c = new Coalescer<number, number>(async (batch) => {
      calls += 1;
      if (calls === 1) throw new Error('boom');
      return batch;
    }, 1);
    await expect(c.submit(1)).rejects.toThrow('boom');
    expect(await c.submit(2)).toBe(2);
  });

  it('splits a long queue into batches of at most `limit`', async () => {
    const gate = deferred();
    const sizes: number[] = [];
    const c = new Coalescer<number, number>(
      async (batch) => {
        sizes.push(batch.length);
        if (sizes.length === 1) await gate.promise;
        return batch;
      },
      1,
      3,
    );
    const all = [c.submit(0), ...Array.from({ length: 7 }, (_, i) => c.submit(i + 1))];
    gate.resolve();
    await Promise.all(all);
    expect(sizes).toEqual([1, 3, 3, 1]);
  });
});
