/**
 * What every ioredis client of syncrelay connects with: the REDIS_URL (host, port, ACL user and
 * password, database) and, for `rediss://`, the same TLS options (CA, server name). The broker's
 * producer, its workers' connections (and BullMQ's copies of them) and the API's rate limiter all
 * take their options from here, and all scrub credentials out of the errors ioredis raises.
 */
import type { Redis, RedisOptions } from 'ioredis';

/** TLS settings of `rediss://` connections (REDIS_TLS_CA_FILE, REDIS_TLS_SERVERNAME). */
export interface RedisTls {
  /** PEM text of the CA certificate(s) the server's certificate must chain to. @default Node's bundled CAs */
  ca?: string | undefined;
  /** The name the server's certificate must carry (SNI too). @default the URL's host */
  servername?: string | undefined;
}

/** Commands whose arguments hold a password (ioredis' handshake sends AUTH, or HELLO … AUTH). */
const SECRET_COMMANDS = new Set(['auth', 'hello', 'migrate']);

/**
 * Options for `new Redis(url, options)`: `extra` plus, for a `rediss://` URL, the TLS options.
 * ioredis reads host, port, user, password and database from the URL itself; options given here
 * win over its `tls: true` default for `rediss://`. A copy made with `{ ...redis.options }` keeps all of it.
 */
export function redisOptions(url: string, tls: RedisTls = {}, extra: RedisOptions = {}): RedisOptions {
  if (!isTlsUrl(url)) return { ...extra };
  const tlsOptions = {
    ...(tls.ca ? { ca: tls.ca } : {}),
    ...(tls.servername ? { servername: tls.servername } : {}),
  };
  return { ...extra, tls: tlsOptions };
}

export function isTlsUrl(url: string): boolean {
  return url.toLowerCase().startsWith('rediss:');
}

/**
 * The URL for people: its password replaced by `***`. Text that is not a URL keeps only what
 * precedes `//` and follows the last `@`, so a password never shows.
 */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return raw.replace(/\/\/.*@/s, '//***@');
  }
}

/**
 * ioredis attaches the failed command and its arguments to a reply error (`err.command.args`): for
 * a refused AUTH / HELLO those are the user and the password. They are replaced in place, on the
 * error and on its causes, before anything logs or wraps it.
 */
export function scrubRedisError<T>(err: T): T {
  let current: unknown = err;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    const command = (current as { command?: { name?: unknown; args?: unknown } }).command;
    if (command && typeof command === 'object' && SECRET_COMMANDS.has(String(command.name).toLowerCase())) {
      command.args = ['[redacted]'];
    }
    current = current.cause;
  }
  return err;
}

/** Scrubs every error of `redis` before any other 'error' listener (BullMQ's, ours) sees it. */
export function guardRedisErrors<T extends Redis>(redis: T): T {
  redis.prependListener('error', scrubRedisError);
  return redis;
}
