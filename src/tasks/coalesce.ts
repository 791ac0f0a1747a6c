/**
 * Group commit for one engine's concurrent tasks: the first call runs at once (no added latency on
 * an idle worker); calls made while a batch is in flight queue up and run together as the next
 * batch, so under load N tasks cost one statement and one commit instead of N.
 */
export class Coalescer<A, R> {
  private queue: { arg: A; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private running = false;

  /**
   * @param run   handles a batch; returns one result per argument, in order
   * @param limit most arguments in one batch
   */
  constructor(
    private readonly run: (batch: A[]) => Promise<R[]>,
    private readonly limit = 64,
  ) {}

  submit(arg: A): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ arg, resolve, reject });
      if (!this.running) void this.pump();
    });
  }

  private async pump(): Promise<void> {
    this.running = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.limit);
      try {
        const results = await this.run(batch.map((b) => b.arg));
        batch.forEach((b, i) => b.resolve(results[i]!));
      } catch (err) {
        batch.forEach((b) => b.reject(err));
      }
    }
    this.running = false;
  }
}
