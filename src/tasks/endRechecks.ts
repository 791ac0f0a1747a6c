/**
 * The finalize re-check after a unit's end, made only when it can still matter.
 *
 * A unit that saw other open units of its run re-checks after its commit, with a fresh snapshot,
 * whether the run became finalizable (of two "last" units racing, the later one arms finalize). A
 * later end batch of the same engine that finishes a unit of the same run, and that STARTED AFTER
 * that commit, has taken such a snapshot already: its unit either saw no other open unit and armed
 * finalize in its own transaction, or saw others and re-checks in turn. So a re-check waits for
 * such a batch when one is running or queued, and is made only when none is (the run's ends paused
 * here), when that batch failed, or when it finished no unit of the run (its leases were lost).
 * Under load that is one re-check per run per lull instead of one per batch. A crash before the
 * re-check is covered, as before, by the materializer's finalizable scan.
 */

export interface RunRef {
  orgId: string;
  runId: string;
  trace: Record<string, string> | null | undefined;
}

interface Waiter {
  ref: RunRef;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** One end batch: the commits that preceded its start, its runs, the re-checks it stands in for. */
export interface EndBatch {
  readonly startedAfter: number;
  readonly runs: ReadonlySet<string>;
  readonly covered: Waiter[];
}

export class EndRechecks {
  /** End batches committed so far (the order of commits and batch starts). */
  private commits = 0;
  private readonly queued = new Map<string, number>();
  private readonly running = new Set<EndBatch>();
  /** Re-checks waiting for a queued end of their run to start in a batch. */
  private readonly waiting = new Map<string, Waiter[]>();

  /** @param recheck makes the re-check (a fresh read, and finalize armed if the run is finalizable) */
  constructor(private readonly recheck: (ref: RunRef) => Promise<void>) {}

  /** An end of a unit of `runId` was queued for a batch. */
  queuedEnd(runId: string): void {
    this.queued.set(runId, (this.queued.get(runId) ?? 0) + 1);
  }

  /** A batch with the ends of units of these runs starts (before its transaction begins). */
  begin(runIds: readonly string[]): EndBatch {
    for (const id of runIds) {
      const left = (this.queued.get(id) ?? 1) - 1;
      if (left > 0) this.queued.set(id, left);
      else this.queued.delete(id);
    }
    const batch: EndBatch = { startedAfter: this.commits, runs: new Set(runIds), covered: [] };
    for (const id of batch.runs) {
      const waiters = this.waiting.get(id);
      if (!waiters) continue;
      this.waiting.delete(id);
      batch.covered.push(...waiters);
    }
    this.running.add(batch);
    return batch;
  }

  /**
   * The batch committed, finishing units of `finishedRuns`: the re-checks it stands in for are
   * done; the others are made now. Returns the commit's sequence number (for `after`).
   */
  committed(batch: EndBatch, finishedRuns: ReadonlySet<string>): number {
    this.commits += 1;
    this.running.delete(batch);
    for (const w of batch.covered) {
      if (finishedRuns.has(w.ref.runId)) w.resolve();
      else this.make(w);
    }
    return this.commits;
  }

  /** The batch failed: the re-checks it stood in for are made now. */
  failed(batch: EndBatch): void {
    this.running.delete(batch);
    for (const w of batch.covered) this.make(w);
  }

  /**
   * The re-check for `ref` after the end that committed as number `commit`: resolves once a later
   * batch stood in for it or once it was made.
   */
  after(ref: RunRef, commit: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { ref, resolve, reject };
      for (const b of this.running) {
        if (b.startedAfter >= commit && b.runs.has(ref.runId)) {
          b.covered.push(w);
          return;
        }
      }
      if ((this.queued.get(ref.runId) ?? 0) > 0) {
        const list = this.waiting.get(ref.runId) ?? [];
        list.push(w);
        this.waiting.set(ref.runId, list);
        return;
      }
      this.make(w);
    });
  }

  private make(w: Waiter): void {
    this.recheck(w.ref).then(w.resolve, w.reject);
  }
}
