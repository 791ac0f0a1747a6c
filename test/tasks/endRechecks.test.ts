/**
 * When a later end batch stands in for a unit's finalize re-check: only a batch that started after
 * the unit's commit, holds an end of the same run, committed, and finished a unit of that run.
 */
import { describe, expect, it } from 'vitest';
import { EndRechecks, type RunRef } from '../../src/tasks/endRechecks.js';

const R1: RunRef = { orgId: 'o', runId: 'r1', trace: null };
const R2: RunRef = { orgId: 'o', runId: 'r2', trace: null };

function setup() {
  const made: string[] = [];
  const rechecks = new EndRechecks(async (ref) => {
    made.push(ref.runId);
  });
  return { made, rechecks };
}

/** Lets settled promises run their callbacks. */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

function tracked(p: Promise<void>) {
  const state = { done: false };
  void p.then(() => (state.done = true));
  return state;
}

/** A unit of `runId` ends alone: queued, batch, commit; returns the commit number. */
function endAlone(rechecks: EndRechecks, runId: string): number {
  rechecks.queuedEnd(runId);
  return rechecks.committed(rechecks.begin([runId]), new Set([runId]));
}

describe('EndRechecks', () => {
  it('makes the re-check at once when no later end of the run is running or queued', async () => {
    const { made, rechecks } = setup();
    const commit = endAlone(rechecks, 'r1');
    await rechecks.after(R1, commit);
    expect(made).toEqual(['r1']);
  });

  it('a queued end of the same run stands in once its batch commits having finished that unit', async () => {
    const { made, rechecks } = setup();
    const commit = endAlone(rechecks, 'r1');
    rechecks.queuedEnd('r1');
    const waiting = tracked(rechecks.after(R1, commit));
    await flush();
    expect(waiting.done).toBe(false);
    const later = rechecks.begin(['r1']);
    await flush();
    expect(waiting.done).toBe(false); // not before that batch has committed
    rechecks.committed(later, new Set(['r1']));
    await flush();
    expect(waiting.done).toBe(true);
    expect(made).toEqual([]);
  });

  it('a queued end of another run does not stand in', async () => {
    const { made, rechecks } = setup();
    const commit = endAlone(rechecks, 'r1');
    rechecks.queuedEnd('r2');
    await rechecks.after(R1, commit);
    expect(made).toEqual(['r1']);
    rechecks.committed(rechecks.begin(['r2']), new Set(['r2']));
    await rechecks.after(R2, 2);
    expect(made).toEqual(['r1', 'r2']);
  });

  it('a batch that started before the commit does not stand in, one that started after it does', async () => {
    const { made, rechecks } = setup();
    rechecks.queuedEnd('r1');
    rechecks.queuedEnd('r1');
    const first = rechecks.begin(['r1']);
    const early = rechecks.begin(['r1']); // in flight next to `first`, started before its commit
    const commit = rechecks.committed(first, new Set(['r1']));
    await rechecks.after(R1, commit);
    expect(made).toEqual(['r1']);

    rechecks.queuedEnd('r1');
    const late = rechecks.begin(['r1']); // started after `first` committed
    const waiting = tracked(rechecks.after(R1, commit));
    rechecks.committed(early, new Set(['r1']));
    await flush();
    expect(waiting.done).toBe(false);
    rechecks.committed(late, new Set(['r1']));
    await flush();
    expect(waiting.done).toBe(true);
    expect(made).toEqual(['r1']);
  });

  it('a batch that finished no unit of the run (its leases were lost) leaves the re-check to be made', async () => {
    const { made, rechecks } = setup();
    const commit = endAlone(rechecks, 'r1');
    rechecks.queuedEnd('r1');
    const waiting = rechecks.after(R1, commit);
    rechecks.committed(rechecks.begin(['r1']), new Set());
    await waiting;
    expect(made).toEqual(['r1']);
  });

  it('a batch that failed leaves the re-check to be made', async () => {
    const { made, rechecks } = setup();
    const commit = endAlone(rechecks, 'r1');
    rechecks.queuedEnd('r1');
    const waiting = rechecks.after(R1, commit);
    rechecks.failed(rechecks.begin(['r1']));
    await waiting;
    expect(made).toEqual(['r1']);
  });

  it('a failed re-check rejects the unit waiting on it', async () => {
    const rechecks = new EndRechecks(() => Promise.reject(new Error('db down')));
    const commit = endAlone(rechecks, 'r1');
    await expect(rechecks.after(R1, commit)).rejects.toThrow('db down');
  });
});
