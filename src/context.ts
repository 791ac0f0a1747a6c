/** Everything a task needs, passed explicitly (no process-wide singletons). */
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Broker } from './broker/types.js';
import type { Clock } from './clock.js';
import type { ResolvedSettings } from './config.js';
import type { Db } from './db/types.js';
import type { RetryEligibility } from './domain/retryPolicy.js';
import type { Faults } from './faults.js';
import type { EngineMetrics } from './observability/metrics.js';
import type { ProviderRegistry } from './providers/registry.js';
import type { Keyring } from './secrets/keyring.js';
import type { UnitEnds } from './tasks/unitEnds.js';

export interface EngineContext {
  db: Db;
  broker: Broker;
  clock: Clock;
  settings: ResolvedSettings;
  registry: ProviderRegistry;
  logger: Logger;
  /** Internal: named fault points for crash tests. */
  faults: Faults;
  /** Which expired / soft-timed-out units are retried instead of failed. */
  retryEligibility: RetryEligibility;
  /** Source of randomness for jitter (tests pin it). */
  random: () => number;
  /** Prometheus metrics in the engine's own registry; absent, nothing is recorded. */
  metrics?: EngineMetrics;
  /** Where spans come from. @default the global tracer provider's `syncrelay` tracer */
  tracer?: Tracer;
  /** The owner of this engine's unit ends (group commit, finalize re-checks, retries). */
  unitEnds: UnitEnds;
  /** The keys integration credentials are encrypted and decrypted with. */
  secrets: Keyring;
}
