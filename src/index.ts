/** syncrelay's public API: what a library user imports. Nothing internal is exported here. */
export { Engine, type EngineOptions } from './engine.js';
export { loadSettings, type ResolvedSettings, type PostSyncDelivery } from './config.js';
export { systemClock, type Clock } from './clock.js';
export type { Db, Tx } from './db/types.js';
export { callerTx, type Queryable } from './db/callerTx.js';
export { PgDb } from './db/pg.js';
export { PgliteDb } from './db/pglite.js';
export { openDb } from './db/open.js';
export { DbSchema, DEFAULT_SCHEMA } from './db/schema.js';
export { migrate, loadMigrations, type Migration, type MigrationTrack } from './db/migrator.js';
export type { Broker, TaskMessage, TaskName } from './broker/types.js';
export { BullMqBroker } from './broker/bullmq.js';
export { InProcessBroker } from './broker/inprocess.js';
export { openBroker } from './broker/open.js';
export { planSyncRun, type PlanArgs, type PlannedRun } from './planning/planner.js';
export { triggerSync, triggerInTx, type TriggerArgs, type Triggered } from './planning/triggers.js';
export {
  createIntegration,
  deleteIntegration,
  type IntegrationDeletion,
  type NewIntegration,
} from './planning/integrations.js';
export { cancelRun } from './planning/cancel.js';
export { armOutbox } from './store/outbox.js';
export { ProviderRegistry, defaultRegistry } from './providers/registry.js';
export { createSyntheticProvider, syntheticSink } from './providers/synthetic.js';
export { createGithubProvider, GITHUB_DATASETS, type GithubProviderOptions } from './providers/github/index.js';
export { createLinearProvider, LINEAR_DATASETS, type LinearProviderOptions } from './providers/linear/index.js';
export { createJiraProvider, JIRA_DATASETS, type JiraProviderOptions } from './providers/jira/index.js';
export { PostgresSink, type SurfaceSpec } from './sinks/postgres.js';
export {
  normalizedSink,
  NormalizedSink,
  workItemMetricsHandler,
  NORMALIZED_SURFACES,
  type NormalizedSinkOptions,
  type NormalizedSurface,
} from './sinks/normalized/index.js';
export { WORK_ITEM_STATUSES, type SurfaceHookMap, type SurfaceHooks, type WorkItemStatus } from './sdk/normalized.js';
export { normalizeStatus, type StatusInput } from './providers/status.js';
export { GITHUB_SURFACE_HOOKS } from './providers/github/starts.js';
export type {
  DatasetSpec,
  IntegrationInfo,
  LeaseGuard,
  PostSyncContext,
  PostSyncHandler,
  PostSyncPayload,
  Provider,
  Sink,
  UnitContext,
  UnitCredential,
  CredentialChange,
  UnitInfo,
  UnitResult,
  SourceDiscovery,
  SourceDiscoveryContext,
} from './sdk/types.js';
export { refreshDiscoveredSources, SourceDiscoveryError, type SourcesRefreshed } from './planning/sourceDiscovery.js';
export {
  linearBackfillEligibility,
  WORK_ITEM_FAMILY,
  type RetryEligibility,
  type ExpiredUnitFacts,
} from './domain/retryPolicy.js';
export * from './domain/statuses.js';
export { MAX_CHECKPOINT_BYTES, type JsonValue, type UnitCheckpoint } from './domain/checkpoint.js';
export {
  SyncRelayError,
  ValidationError,
  NotFoundError,
  RunConflictError,
  IntegrationBusyError,
  LeaseLostError,
  RateLimitError,
  RunTooLargeError,
  TooManyLiveRunsError,
  NonRetryableError,
  BrokerError,
  SchemaError,
  classifyError,
  type ErrorCategory,
} from './errors.js';
export { SecretError, type SecretErrorCode } from './secrets/errors.js';
export { SecretKey } from './secrets/key.js';
export { Keyring, type KeyringOptions } from './secrets/keyring.js';
export { rotateCredentialKeys, type RotationResult } from './secrets/credentials.js';
export {
  buildServer,
  startApiServer,
  type ApiServerOptions,
  type ApiPlugin,
  type RunningApiServer,
} from './api/server.js';
export { EngineMetrics } from './observability/index.js';
export { metricsPlugin } from './api/metrics.js';
export { createSchedule, updateSchedule, deleteSchedule, type NewSchedule } from './planning/schedules.js';
export { runSchedulerTick } from './planning/scheduler.js';
export { createApiToken } from './api/tokens.js';
