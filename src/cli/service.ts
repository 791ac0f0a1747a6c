/** Long-running commands (start, worker, reconciler): run until a signal, then close gracefully. */
import {
  cliLogger,
  describeBroker,
  describeDatabase,
  openSession,
  type Session,
  type SessionOptions,
} from './session.js';
import { Shutdown } from './signals.js';

/**
 * Opens a session, lets `begin` start the worker / reconciler, and waits for SIGTERM or SIGINT;
 * then `engine.close()` stops the workers taking work (in-flight units finish or are abandoned with
 * their leases ended), stops the reconciler loop and closes the connections. A second signal
 * exits at once. Resolves when the service has stopped.
 */
export async function runService(
  name: string,
  opts: Omit<SessionOptions, 'longRunning' | 'logger'>,
  begin: (s: Session) => Promise<Record<string, unknown>>,
): Promise<void> {
  const logger = cliLogger(true);
  const shutdown = new Shutdown(logger);
  const session = await openSession({ ...opts, logger, longRunning: true });
  try {
    if (!shutdown.signal.aborted) {
      const details = await begin(session);
      logger.info(
        {
          ...details,
          database: describeDatabase(session.settings),
          broker: describeBroker(session.settings),
          pid: process.pid,
        },
        `${name} started`,
      );
      await shutdown.wait();
    }
  } finally {
    await session.close();
  }
  logger.info(`${name} stopped`);
  logger.flush();
}
