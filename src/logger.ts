import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

/**
 * Fields that would hold a credential are censored wherever a log call puts them (a credential is
 * never logged on purpose; this catches an object passed whole by mistake).
 */
export const REDACTED_PATHS = ['credential', '*.credential', 'body.credential', 'req.body.credential'];

/** JSON logs on stderr (stdout stays for command output); level from SYNCRELAY_LOG_LEVEL. */
export function createLogger(
  level = process.env.SYNCRELAY_LOG_LEVEL ?? 'info',
  name = 'syncrelay',
  destination: DestinationStream = pino.destination({ dest: 2, sync: false }),
): Logger {
  const options: LoggerOptions = { name, level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  return pino(options, destination);
}

/** A logger that writes nothing (tests, quiet commands). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
