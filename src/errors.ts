/**
 * The error hierarchy. Every error carries a stable `code`; wrapping always sets `cause`.
 * `classifyError` maps anything thrown by a provider or adapter to an error category.
 */
import type { UnitCheckpoint } from './domain/checkpoint.js';

export type ErrorCategory =
  | 'rate_limit'
  | 'timeout'
  | 'network'
  | 'auth'
  | 'not_found'
  | 'provider_error'
  | 'adapter_error'
  | 'worker_lost'
  | 'worker_lost_retry_exhausted'
  | 'dispatch_denied'
  | 'cancelled';

export class SyncRelayError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A setting or argument failed validation; `field` names what is wrong. */
export class ValidationError extends SyncRelayError {
  constructor(
    readonly field: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('invalid_input', `${field}: ${message}`, options);
  }
}

export class NotFoundError extends SyncRelayError {
  constructor(
    readonly entity: string,
    readonly id: string,
  ) {
    super('not_found', `${entity} ${id} not found`);
  }
}

/** A non-terminal run of the same integration and mode already exists. */
export class RunConflictError extends SyncRelayError {
  constructor(
    readonly existingRunId: string,
    readonly mode: string,
  ) {
    super('run_conflict', `a ${mode} run is already in progress: ${existingRunId}`);
  }
}

/**
 * A trigger would plan more units than SYNC_RUN_MAX_UNITS; refused before anything is written.
 * `byDataset` is the planned count per dataset, `narrow` says how to make the request smaller.
 */
export class RunTooLargeError extends SyncRelayError {
  constructor(
    readonly units: number,
    readonly maxUnits: number,
    readonly byDataset: Readonly<Record<string, number>>,
    readonly narrow: string,
  ) {
    super(
      'run_too_large',
      `this run would plan ${units} units, over the cap of ${maxUnits} (SYNC_RUN_MAX_UNITS); ${narrow}`,
    );
  }
}

/** The integration already has as many live runs as SYNC_INTEGRATION_MAX_LIVE_RUNS allows, `force` or not. */
export class TooManyLiveRunsError extends SyncRelayError {
  constructor(
    readonly integrationId: string,
    readonly liveRuns: number,
    readonly maxLiveRuns: number,
  ) {
    super(
      'too_many_live_runs',
      `integration ${integrationId} has ${liveRuns} unfinished run${liveRuns === 1 ? '' : 's'}, ` +
        `the cap is ${maxLiveRuns} (SYNC_INTEGRATION_MAX_LIVE_RUNS); wait for one to finish or cancel one`,
    );
  }
}

/** The integration still has unfinished runs: it is not deleted until they end (or are cancelled). */
export class IntegrationBusyError extends SyncRelayError {
  constructor(
    readonly integrationId: string,
    readonly liveRuns: number,
  ) {
    super(
      'integration_busy',
      `integration ${integrationId} has ${liveRuns} unfinished run${liveRuns === 1 ? '' : 's'}; ` +
        'cancel them or wait for them to finish before deleting it',
    );
  }
}

/** The unit's lease is no longer ours: write nothing, end without a terminal write. */
export class LeaseLostError extends SyncRelayError {
  constructor(
    readonly unitId: string,
    options?: { cause?: unknown },
  ) {
    super('lease_lost', `lease lost for unit ${unitId}`, options);
  }
}

/**
 * The provider asks to be called again after `retryAfterMs`. `liftsAt`, when known, is the absolute
 * time the limit lifts (e.g. a rate-limit reset); the unit's deferral then counts from it.
 * `checkpoint`, when given, is where the unit stopped: its deferral stores it and the next attempt
 * finds it in `UnitContext.checkpoint` (rules and bounds: src/domain/checkpoint.ts).
 */
export class RateLimitError extends SyncRelayError {
  readonly liftsAt: Date | null;
  readonly checkpoint: UnitCheckpoint | null;
  /** The jitter its deferral may add after the lift, at most, when not the default 5 s. */
  readonly spreadMs: number | null;
  constructor(
    readonly retryAfterMs: number,
    message = 'rate limited',
    options?: { cause?: unknown; liftsAt?: Date | null; checkpoint?: UnitCheckpoint | null; spreadMs?: number | null },
  ) {
    super('rate_limit', message, options);
    this.liftsAt = options?.liftsAt ?? null;
    this.checkpoint = options?.checkpoint ?? null;
    this.spreadMs = options?.spreadMs ?? null;
  }

  /** The same limit (same wait, lift time, spread and message), carrying `checkpoint`; caused by this one. */
  withCheckpoint(checkpoint: UnitCheckpoint | null): RateLimitError {
    const { retryAfterMs, liftsAt, spreadMs } = this;
    return new RateLimitError(retryAfterMs, this.message, { cause: this, liftsAt, checkpoint, spreadMs });
  }
}

/** A failure that retrying cannot fix; `category` says which kind. */
export class NonRetryableError extends SyncRelayError {
  constructor(
    message: string,
    readonly category: ErrorCategory = 'provider_error',
    options?: { cause?: unknown },
  ) {
    super('non_retryable', message, options);
  }
}

export class ProviderTimeoutError extends SyncRelayError {
  constructor(message = 'provider timed out', options?: { cause?: unknown }) {
    super('timeout', message, options);
  }
}

export class BrokerError extends SyncRelayError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('broker_error', message, options);
  }
}

export class SchemaError extends SyncRelayError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('schema_error', message, options);
  }
}

/** Raised by an injected fault point: simulates a crash at an exact line. */
export class InjectedFault extends SyncRelayError {
  constructor(readonly point: string) {
    super('injected_fault', `injected fault at ${point}`);
  }
}

const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

/** Maps anything thrown to an error category stored on a failed unit. */
export function classifyError(err: unknown): ErrorCategory {
  if (err instanceof RateLimitError) return 'rate_limit';
  if (err instanceof NonRetryableError) return err.category;
  if (err instanceof ProviderTimeoutError) return 'timeout';
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return 'network';
  const status = (err as { status?: unknown } | null)?.status;
  if (status === 401 || status === 403) return 'auth';
  if (status === 404) return 'not_found';
  return 'provider_error';
}

/** A short, storable description of an error (≤ 2000 chars). */
export function describeError(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.length > 2000 ? text.slice(0, 2000) : text;
}
