/** The plug-in SDK (SPEC §9): providers declare datasets and run units; sinks write surfaces. */
import type { Migration } from '../db/migrator.js';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Tx } from '../db/types.js';
import type { UnitCheckpoint } from '../domain/checkpoint.js';
import type { SyncMode, Tier } from '../domain/statuses.js';
import type { StoredEntry, SurfaceHookMap, VerifyScope } from './normalized.js';

export interface DatasetSpec {
  key: string;
  tier: Tier;
  /** Concurrency bucket part: units of one (org, provider, cost class) share a cap. */
  costClass: string;
  /** Backfill chunk size in days. @default provider's windowDays */
  windowDays?: number;
  /** Whether incremental runs start from a watermark. */
  keepsWatermark: boolean;
  /** Every surface a unit of this dataset may write (static, used by the retry policy). */
  surfaces: readonly string[];
  /**
   * The dataset whose unit fetches this one too: a family read together (Linear's issues with their
   * comments, history and labels in one query). When both are planned in a run, this dataset gets no
   * unit of its own; the anchor's unit carries it in `UnitInfo.datasets`.
   */
  fetchedWith?: string;
  /**
   * The provider can list this dataset's ids and update times for a verify run (SPEC §8): only
   * datasets that declare it are planned in one. @default false
   */
  verifies?: boolean;
}

export interface UnitInfo {
  id: string;
  orgId: string;
  runId: string;
  integrationId: string;
  sourceId: string | null;
  sourceKey: string | null;
  provider: string;
  datasetKey: string;
  /** Every dataset this unit fetches: `datasetKey` first, then those fetched with it. */
  datasets: readonly string[];
  tier: Tier;
  mode: SyncMode;
  since: Date | null;
  before: Date | null;
  attempt: number;
}

export interface IntegrationInfo {
  id: string;
  orgId: string;
  provider: string;
  name: string;
  config: Record<string, unknown>;
}

/** Proof of a live lease. `assertHeld` checks the database; `tx` variants lock the unit row. */
export interface LeaseGuard {
  readonly unitId: string;
  readonly owner: string;
  /** Throws `LeaseLostError` unless the unit is still running under this owner with a live lease. */
  assertHeld(): Promise<void>;
  /** Same check inside `tx`, locking the unit row FOR SHARE until `tx` ends. */
  assertHeldIn(tx: Tx): Promise<void>;
}

export interface Sink {
  readonly name: string;
  readonly surfaces: readonly string[];
  /** Surfaces written with idempotent upserts: safe to write again after a lost worker. */
  readonly retrySafeSurfaces: readonly string[];
  /** Writes rows to `surface`, fenced by `guard`; throws `LeaseLostError` and writes nothing if fenced out. */
  write(guard: LeaseGuard, surface: string, rows: readonly Record<string, unknown>[]): Promise<number>;
  /**
   * Takes a provider's `surfaceHooks` and runs them around the writes of the surfaces they name
   * from now on (the registry calls it when a provider that declares hooks is registered with this
   * sink; the same map given twice is run once). Sinks without hooks leave it out.
   */
  useSurfaceHooks?(hooks: SurfaceHookMap): void;
  /** The stored side of a verify (the normalized sink's tombstones); a sink without it cannot verify. */
  readonly tombstones?: SinkTombstones;
}

export interface UnitContext {
  unit: UnitInfo;
  integration: IntegrationInfo;
  signal: AbortSignal;
  lease: LeaseGuard;
  sink: Sink;
  logger: Logger;
  clock: Clock;
  /** The engine's database, for providers that keep their own records (not for sink writes). */
  db: Tx;
  /** The integration's stored credential, decrypted on demand; null when none is set. */
  credential: UnitCredential | null;
  /**
   * Where an earlier attempt of this unit stopped: the checkpoint it handed its last rate-limit
   * deferral (`RateLimitError.checkpoint`), to resume from. Null on a first attempt, when none was
   * handed or it was refused (over 4 KiB, or holding the credential). A unit that resumes hands a
   * deferral a checkpoint again (the one it started from, if it got no further): a deferral without
   * one starts the next attempt over. Rules: src/domain/checkpoint.ts.
   */
  checkpoint: UnitCheckpoint | null;
  /**
   * The work items of the unit's source that webhook deliveries named since they were last read
   * (absent for a unit without a source): a provider whose listing lags behind its edits (Jira's
   * search) reads them directly.
   */
  namedItems?: NamedItems;
}

/** Work items webhook deliveries named (their external ids), as a unit's attempt sees them. */
export interface NamedItems {
  /** Up to `limit` of them named before this attempt began, oldest naming first. */
  list(limit: number): Promise<string[]>;
  /** Forgets `ids` once read; any of them named again after this attempt began stays. */
  forget(ids: readonly string[]): Promise<void>;
}

/** A stored credential as a unit sees it: a stable non-secret id and the secret, revealed on demand. */
export interface UnitCredential {
  /** Stable, non-secret identifier of this credential (changes when the credential is replaced). */
  readonly id: string;
  /** The decrypted secret. Never log it, put it in an error, a message or a metric. */
  reveal(): string;
  /**
   * Runs `change` on the stored secret as it is now (which may be newer than `reveal()`'s: another
   * process may have rotated it) while holding the credential's row lock, and stores the secret it
   * hands back, encrypted, in that same transaction: one change of a credential at a time across
   * every process (a second caller waits, then sees the first one's result). For a secret the
   * provider rotates, e.g. an OAuth refresh token. Absent where the credential cannot be changed.
   */
  change?: <T>(change: (current: string) => Promise<CredentialChange<T>>) => Promise<T>;
}

/** What a credential change hands back: the secret to store in its place (none: keep it), and its result. */
export interface CredentialChange<T> {
  secret?: string;
  value: T;
}

export interface UnitResult {
  items?: number;
  touchedSurfaces?: string[];
  /** Where the watermark may move to (default: the unit's `before`). */
  watermark?: Date | null;
  [key: string]: unknown;
}

export interface PostSyncPayload {
  orgId: string;
  runId: string;
  integrationId: string;
  provider: string;
  datasets: string[];
  window: { from: string | null; to: string | null };
}

export interface PostSyncContext {
  /** The transaction the handler runs in (exactly-once mode: the receipt commits with it). */
  tx: Tx;
  /** `run_id:handler`, for handlers with external effects. */
  idempotencyKey: string;
  clock: Clock;
  logger: Logger;
}

export interface PostSyncHandler {
  name: string;
  /** Which integrations it serves. @default every integration */
  appliesTo?(integration: IntegrationInfo): boolean;
  run(payload: PostSyncPayload, ctx: PostSyncContext): Promise<void>;
}

/** What the server tells `validateConfig` about itself. */
export interface ConfigValidationContext {
  /**
   * Whether settings that inject faults (a synthetic provider's failure, rate-limit and hang knobs)
   * may be stored: `SYNCRELAY_ALLOW_FAULT_INJECTION`, for demos, chaos runs and tests only.
   */
  allowFaultInjection: boolean;
}

export interface Provider {
  /** The integrations.provider value this provider implements. */
  name: string;
  datasets: readonly DatasetSpec[];
  /** Default backfill chunk in days. @default 7 */
  windowDays?: number;
  /** Incremental depth when no watermark exists. @default 30 */
  initialDepthDays?: number;
  /**
   * How far an incremental window reaches back before the watermark: the provider's read-after-write
   * lag (e.g. a search index behind its writes). `SYNC_INCREMENTAL_OVERLAP_SECONDS` overrides it for
   * every provider. @default 0
   */
  incrementalOverlapMs?: number;
  /** The provider name units carry (a synthetic provider may impersonate `linear`). */
  unitProvider?(integration: IntegrationInfo): string;
  /** Per-integration dataset specs (e.g. a window size that depends on config). */
  datasetsFor?(integration: IntegrationInfo): readonly DatasetSpec[];
  /**
   * Validates an integration's config before it is stored; throws `ValidationError` naming the field
   * (`config.<key>`). Bound every value: strings by length, numbers from above. Without `context`,
   * assume fault injection is not allowed.
   */
  validateConfig?(config: Record<string, unknown>, context?: ConfigValidationContext): void;
  /** Validates one source key before it is stored; throws `ValidationError` naming `field` (`sources.<n>`). */
  validateSource?(source: string, field: string): void;
  /**
   * Validates a credential (already through the generic checks) for an integration of `config`
   * before it is stored, e.g. that a GitHub App's is an RSA private key; throws `ValidationError`
   * naming `credential`, never quoting it. @default no further check
   */
  validateCredential?(credential: string, config: Record<string, unknown>): void;
  runUnit(ctx: UnitContext): Promise<UnitResult>;
  postSyncHandlers?: readonly PostSyncHandler[];
  /**
   * Sources the provider finds itself rather than being listed (a GitHub App installation's
   * repositories), for the integrations whose config asks for it. @default every source is listed
   */
  sourceDiscovery?: SourceDiscovery;
  /**
   * Statements the normalized sink runs around writes of the surfaces named, in the write's own
   * transaction (e.g. GitHub's: `work_items.started_at` derived from stored label events).
   * `ProviderRegistry.register` hands them to the provider's sink (`Sink.useSurfaceHooks`).
   */
  surfaceHooks?: SurfaceHookMap;
  /**
   * The provider's own tables: numbered migrations (e.g. `loadMigrations(dir)` of a folder of
   * `NNNN_name.sql` files, which name no schema), applied by `syncrelay migrate` and on start into
   * the install's schema after the core's, versioned in a track of the provider's name.
   */
  migrations?: () => Promise<readonly Migration[]>;
}

/** What `SourceDiscovery.discover` is handed: the integration, its credential and the call's bounds. */
export interface SourceDiscoveryContext {
  integration: IntegrationInfo;
  /** The integration's stored credential, decrypted on demand; null when none is set. */
  credential: UnitCredential | null;
  /** Aborting it ends the discovery's call in flight. */
  signal: AbortSignal;
  logger: Logger;
  clock: Clock;
}

/**
 * Sources a provider finds itself (`Provider.sourceDiscovery`). An integration opts in through its
 * config; before each of its runs is planned, the engine calls `discover` outside any transaction,
 * then, in one short transaction, enables the sources it lists (inserting new ones) and disables the
 * others (their rows stay).
 */
export interface SourceDiscovery {
  /** Whether an integration of `config` has its sources found by `discover` (a flag of its config). */
  enabled(config: Record<string, unknown>): boolean;
  /**
   * The config an integration is created with, given its sources: `'all'` (create's `sources: "all"`)
   * asks for them to be found, and the config returned says so; a list is checked against `config`.
   * Throws `ValidationError` naming the field (`sources`, `config.<key>`) when they do not go together.
   */
  configFor(config: Record<string, unknown>, sources: readonly string[] | 'all'): Record<string, unknown>;
  /**
   * The integration's source keys as the provider lists them now. Throws (a `NonRetryableError` of
   * category `auth` or `provider_error`, naming the integration, never the credential) when it cannot.
   */
  discover(ctx: SourceDiscoveryContext): Promise<string[]>;
}

/**
 * What a sink offers a verify (src/providers/kit/verify.ts): the stored side of the comparison,
 * each call that changes anything in one transaction fenced by the unit's lease (nothing done when
 * it is lost). A sink without it cannot verify.
 */
export interface SinkTombstones {
  /** The stored rows of `scope` among `ids` (deleted ones included), stamped listed at `at`. */
  compare(guard: LeaseGuard, scope: VerifyScope, ids: readonly string[], at: Date): Promise<StoredEntry[]>;
  /** A page of the live rows of `scope` neither listed nor written since `since`, id order after `after`. */
  unseen(scope: VerifyScope, since: Date, after: string | null, limit: number): Promise<string[]>;
  /** Marks these rows deleted at `at`, those still unseen since `unseenSince`; returns how many. */
  markDeleted(
    guard: LeaseGuard,
    scope: VerifyScope,
    ids: readonly string[],
    at: Date,
    unseenSince: Date,
  ): Promise<number>;
}
