/**
 * Start-up work that needs the database (migrations, the credential-key check) waits out an
 * outage instead of ending the process: a worker or reconciler restarted while PostgreSQL is
 * down or in crash recovery starts once it answers, within a bound.
 */
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from './retry.js';

export interface StartupWait {
  /** How long to keep trying while the database is unreachable. @default 60 s */
  maxWaitMs?: number;
  /** First pause between attempts; it doubles up to 2 s. @default 250 ms */
  pauseMs?: number;
}

/**
 * Runs `work` until it succeeds, retrying it (from the start) while it fails because the database
 * is unavailable and `maxWaitMs` has not passed; any other error, or the last one past the bound,
 * is thrown. `work` must be safe to run again (migrations are: each runs in its own transaction
 * under the migrator's lock).
 */
export async function whenDatabaseAnswers<T>(
  work: () => Promise<T>,
  logger: Logger,
  opts: StartupWait = {},
): Promise<T> {
  const maxWaitMs = opts.maxWaitMs ?? 60_000;
  let pause = opts.pauseMs ?? 250;
  const deadline = Date.now() + maxWaitMs;
  let warned = false;
  for (;;) {
    try {
      return await work();
    } catch (err) {
      if (!isDatabaseUnavailable(err) || Date.now() + pause > deadline) throw err;
      if (!warned) logger.warn({ err: (err as Error).message, maxWaitMs }, 'database unavailable at start; waiting');
      warned = true;
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 2000);
    }
  }
}
