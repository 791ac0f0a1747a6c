import { pino, type Logger } from 'pino';

/** JSON logs on stderr (stdout stays for command output); level from SYNCRELAY_LOG_LEVEL. */
export function createLogger(level = process.env.SYNCRELAY_LOG_LEVEL ?? 'info', name = 'syncrelay'): Logger {
  return pino({ name, level }, pino.destination({ dest: 2, sync: false }));
}

/** A logger that writes nothing (tests, quiet commands). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
