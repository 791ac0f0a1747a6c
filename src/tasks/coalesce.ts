/**
 * Group commit for one engine's concurrent tasks: a call runs at once while fewer than
 * `maxInFlight` batches are running (no added latency on an idle worker, and two tasks can still
 * be in their transactions at the same time); calls made while that many are in flight queue up
 * and run together as the next batch, so under load N tasks cost one statement and one commit
 * instead of N.
 */
export class Coalescer<A, R> {
  private readonly queue: { arg: A; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private inFlight = 0;

  /**
   * @param run         handles a batch; returns one result per argument, in order
   * @param maxInFlight batches running at once
   * @param limit       most arguments in one batch
   */
  constructor(
    private readonly run: (batch: A[]) => Promise<R[]>,
    private readonly maxInFlight = 2,
    private readonly limit = 64,
  ) {}

  submit(arg: A): Promise<R> {
    return this.submitMany([arg]).then((r) => r[0]!);
  }

  /** Queues all of `args` before the next batch goes out, so they travel together (up to `limit`). */
  submitMany(args: readonly A[]): Promise<R[]> {
    const results = args.map((arg) => new Promise<R>((resolve, reject) => this.queue.push({ arg, resolve, reject })));
    this.pump();
    return Promise.all(results);
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.limit);
      this.inFlight += 1;
      void this.runBatch(batch).finally(() => {
        this.inFlight -= 1;
        this.pump();
      });
    }
  }

  private async runBatch(batch: { arg: A; resolve: (r: R) => void; reject: (e: unknown) => void }[]): Promise<void> {
    try {
      const results = await this.run(batch.map((b) => b.arg));
      batch.forEach((b, i) => b.resolve(results[i]!));
    } catch (err) {
      batch.forEach((b) => b.reject(err));
    }
  }
}
