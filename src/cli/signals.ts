/**
 * Shutdown on SIGTERM / SIGINT: the first signal asks for a graceful stop (the command closes its
 * engine and exits), a second one exits at once with 128 + the signal number (130 / 143).
 */
import type { Logger } from 'pino';

const EXIT_AT_ONCE: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

export class Shutdown {
  private readonly controller = new AbortController();
  private received: NodeJS.Signals | null = null;
  private readonly handler = (sig: NodeJS.Signals) => this.onSignal(sig);

  constructor(private readonly logger: Logger) {
    process.on('SIGINT', this.handler);
    process.on('SIGTERM', this.handler);
  }

  /** Aborted when the first signal arrives. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The first signal received, if any. */
  get signalName(): NodeJS.Signals | null {
    return this.received;
  }

  /** The exit status that reports the interruption (130 for SIGINT, 143 for SIGTERM). */
  get interruptedExitCode(): number {
    return EXIT_AT_ONCE[this.received ?? 'SIGINT'] ?? 130;
  }

  /** Resolves with the first signal. */
  wait(): Promise<NodeJS.Signals> {
    if (this.received) return Promise.resolve(this.received);
    return new Promise((resolve) =>
      this.controller.signal.addEventListener('abort', () => resolve(this.received!), { once: true }),
    );
  }

  private onSignal(sig: NodeJS.Signals): void {
    if (this.received) {
      this.logger.warn({ signal: sig }, 'second signal: exiting at once');
      this.logger.flush();
      process.exit(EXIT_AT_ONCE[sig] ?? 1);
    }
    this.received = sig;
    this.logger.info({ signal: sig }, 'shutting down gracefully (send the signal again to exit at once)');
    this.controller.abort();
  }
}

/** Sleeps `ms`, ending early (without error) when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
