import { BullMqBroker, type BullMqBrokerOptions } from './bullmq.js';
import { InProcessBroker } from './inprocess.js';
import type { Broker } from './types.js';

/** Options shared by both brokers, plus BullMQ-only tuning (ignored in process). */
export type OpenBrokerOptions = Omit<BullMqBrokerOptions, 'redisUrl' | 'prefix'>;

/**
 * Opens BullMQ on Redis when `redisUrl` is set (keys prefixed with `queuePrefix`), otherwise the
 * in-process broker, which is only valid when one process runs every role.
 */
export function openBroker(
  settings: { redisUrl?: string | undefined; queuePrefix: string },
  opts: OpenBrokerOptions = {},
): Broker {
  if (settings.redisUrl) {
    return new BullMqBroker({ ...opts, redisUrl: settings.redisUrl, prefix: settings.queuePrefix });
  }
  return new InProcessBroker({ onError: opts.onError });
}
