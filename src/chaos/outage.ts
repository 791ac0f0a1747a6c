/**
 * Whether an injected PostgreSQL outage is going on: the chaos command's own requests (triggers,
 * cancels) wait it out, as a client retrying on a connection error would.
 */
export class PgOutage {
  private current: { over: Promise<void>; end: () => void } | null = null;
  private lastEndedAt = 0;

  begin(): void {
    if (this.current) return;
    let end!: () => void;
    const over = new Promise<void>((resolve) => (end = resolve));
    this.current = { over, end };
  }

  end(now: number = Date.now()): void {
    const c = this.current;
    if (!c) return;
    this.current = null;
    this.lastEndedAt = now;
    c.end();
  }

  get down(): boolean {
    return this.current !== null;
  }

  /** Resolves at once when PostgreSQL is up, else when the outage ends. */
  whenUp(): Promise<void> {
    return this.current?.over ?? Promise.resolve();
  }

  /** Whether an outage was going on at some moment since `since` (ms epoch), or still is. */
  overlapped(since: number): boolean {
    return this.current !== null || this.lastEndedAt >= since;
  }
}

const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * `attempt`, waiting out an injected outage first. One that fails while an outage went on may still
 * have committed: once PostgreSQL is back, `adopt` looks for what it made (null: nothing, try again).
 * An error with no outage about is passed on.
 */
export async function throughOutage<T>(
  outage: PgOutage,
  attempt: () => Promise<T>,
  adopt: () => Promise<T | null>,
): Promise<T> {
  for (;;) {
    await outage.whenUp();
    const since = Date.now();
    try {
      return await attempt();
    } catch (err) {
      if (!outage.overlapped(since)) throw err;
    }
    const found = await lookAfterOutage(outage, adopt);
    if (found !== null) return found;
  }
}

/** `adopt` once PostgreSQL answers again (a few tries: the first connections after a restart may fail). */
async function lookAfterOutage<T>(outage: PgOutage, adopt: () => Promise<T | null>): Promise<T | null> {
  for (let tries = 1; ; tries++) {
    await outage.whenUp();
    try {
      return await adopt();
    } catch (err) {
      if (tries >= 40) throw err;
      await pause(250);
    }
  }
}
