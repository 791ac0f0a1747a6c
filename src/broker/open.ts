import type { Logger } from 'pino';
import { describeError } from '../errors.js';
import { BullMqBroker, type BullMqBrokerOptions } from './bullmq.js';
import { InProcessBroker } from './inprocess.js';
import type { Broker } from './types.js';

/** Options shared by both brokers, plus BullMQ-only tuning (ignored in process). */
export type OpenBrokerOptions = Omit<BullMqBrokerOptions, 'redisUrl' | 'prefix' | 'tls'>;

/** The settings a broker is opened from (see ResolvedSettings). */
export interface BrokerSettings {
  redisUrl?: string | undefined;
  /** PEM text of REDIS_TLS_CA_FILE. */
  redisTlsCa?: string | undefined;
  /** REDIS_TLS_SERVERNAME. */
  redisTlsServername?: string | undefined;
  queuePrefix: string;
}

/**
 * Opens BullMQ on Redis when `redisUrl` is set (keys prefixed with `queuePrefix`; every connection
 * with the same TLS options), otherwise the in-process broker, which is only valid when one
 * process runs every role.
 */
export function openBroker(settings: BrokerSettings, opts: OpenBrokerOptions = {}): Broker {
  if (settings.redisUrl) {
    return new BullMqBroker({
      ...opts,
      redisUrl: settings.redisUrl,
      tls: { ca: settings.redisTlsCa, servername: settings.redisTlsServername },
      prefix: settings.queuePrefix,
    });
  }
  return new InProcessBroker({ onError: opts.onError });
}

/**
 * Logs a Redis connection error (unreachable, TLS refused, ACL refused) at warn: each distinct
 * message once, then again only after `everyMs`, so an outage shows without flooding the log.
 * Only the error's name and message are logged; they carry no password (see ./redisOptions.ts).
 */
export function redisErrorLog(logger: Logger, everyMs = 60_000): (err: Error) => void {
  const logged = new Map<string, number>();
  return (err) => {
    const text = describeError(err);
    const now = Date.now();
    if (now - (logged.get(text) ?? -Infinity) < everyMs) return;
    if (logged.size >= 100) logged.clear();
    logged.set(text, now);
    logger.warn({ err: text }, 'redis connection error');
  };
}
