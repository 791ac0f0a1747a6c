/** Engines in the bench process: real PostgreSQL + BullMQ on Redis, the bench providers, quiet logs. */
import { BullMqBroker } from '../../src/broker/bullmq.js';
import type { Broker } from '../../src/broker/types.js';
import { loadSettings, type ResolvedSettings } from '../../src/config.js';
import type { Db } from '../../src/db/types.js';
import { Engine } from '../../src/engine.js';
import type { Faults } from '../../src/faults.js';
import { createLogger } from '../../src/logger.js';
import type { PostSyncHandler } from '../../src/sdk/types.js';
import { SecretKey } from '../../src/secrets/key.js';
import { REDIS_URL } from './pg.js';
import { benchRegistry } from './providers.js';

/** SYNC_* settings from the bench's own environment (none in the documented runs). */
function syncEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(([k, v]) => k.startsWith('SYNC_') && v !== undefined),
  ) as Record<string, string>;
}

/**
 * Settings: the defaults (plus any SYNC_* of the environment), then the scenario's own `env`,
 * pointed at the bench database and queue prefix.
 */
export function benchSettings(url: string, prefix: string, env: Record<string, string> = {}): ResolvedSettings {
  return loadSettings({ ...syncEnv(), ...env, DATABASE_URL: url, REDIS_URL, SYNCRELAY_QUEUE_PREFIX: prefix });
}

/**
 * Settings of a provider bench against its emulator (plain http on 127.0.0.1, so the insecure opt-in):
 * a one-second reconcile and redispatch, room for large runs and many deferrals, a fresh secret key.
 */
export function providerBenchSettings(url: string, prefix: string): ResolvedSettings {
  return benchSettings(url, prefix, {
    SYNC_RECONCILE_INTERVAL_SECONDS: '1',
    SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '1',
    SYNC_RUN_MAX_UNITS: '5000',
    SYNC_RATE_LIMIT_MAX_DEFERRALS: '1000',
    SYNCRELAY_SECRET_KEY: SecretKey.generate().toBase64(),
    SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: 'true',
  });
}

/** The environment a bench worker process needs for the same settings. */
export function childEnv(url: string, prefix: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    ...syncEnv(),
    ...env,
    DATABASE_URL: url,
    REDIS_URL,
    SYNCRELAY_QUEUE_PREFIX: prefix,
    SYNCRELAY_LOG_LEVEL: process.env.SYNCRELAY_LOG_LEVEL ?? 'error',
  };
}

export function openBroker(prefix: string): BullMqBroker {
  return new BullMqBroker({ redisUrl: REDIS_URL, prefix });
}

export interface BenchEngineOptions {
  db: Db;
  settings: ResolvedSettings;
  broker?: Broker;
  faults?: Faults;
  handlers?: PostSyncHandler[];
}

/** An engine on an existing pool (not migrated again); the broker is the engine's unless given. */
export function openBenchEngine(o: BenchEngineOptions): Promise<Engine> {
  return Engine.open({
    settings: o.settings,
    db: o.db,
    broker: o.broker,
    faults: o.faults,
    migrate: false,
    registry: benchRegistry({ handlers: o.handlers }),
    logger: createLogger(process.env.SYNCRELAY_LOG_LEVEL ?? 'error', 'syncrelay-bench'),
  });
}
