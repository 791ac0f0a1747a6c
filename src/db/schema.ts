/**
 * The PostgreSQL schema syncrelay lives in, and the one helper that names its objects in SQL.
 *
 * Every statement names its tables through a `DbSchema` (`${s.sync_runs}` is `"syncrelay"."sync_runs"`),
 * never through `search_path`: a library user's own connection does not have ours. The NOTIFY
 * channel carries the schema, so two installs in one database never wake each other.
 */
import { ValidationError } from '../errors.js';

export const DEFAULT_SCHEMA = 'syncrelay';

/**
 * Lower-case letters, digits and `_`, starting with a letter or `_`. At most 48 characters, so the
 * NOTIFY channel built from it stays inside PostgreSQL's 63-byte identifiers (no two schemas'
 * channels are truncated to the same name). `pg_…` and `information_schema` are PostgreSQL's own.
 */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

/** The tables (and the one function) of the core schema: the names every statement may use. */
export const CORE_OBJECTS = [
  'integrations',
  'integration_credentials',
  'integration_sources',
  'integration_datasets',
  'sync_watermarks',
  'sync_runs',
  'sync_run_units',
  'sync_dispatch_outbox',
  'sync_run_post_dispatches',
  'post_sync_receipts',
  'scheduled_jobs',
  'job_runs',
  'reconciler_passes',
  'api_tokens',
  'idempotency_keys',
  'rate_budgets',
  'provider_etags',
  'webhook_secrets',
  'webhook_deliveries',
  'webhook_pending_runs',
  'webhook_named_items',
  'syncrelay_migrations',
  'provider_migrations',
  'syncrelay_uuid7',
] as const;

export type CoreObject = (typeof CORE_OBJECTS)[number];

/** Quotes an identifier (a schema, table or channel name) for SQL text. Values are always bound. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Checks a schema name; a bad one throws a ValidationError naming `setting`. */
export function validateSchemaName(name: string, setting = 'SYNCRELAY_SCHEMA'): string {
  if (!SCHEMA_NAME.test(name) || name.startsWith('pg_') || name === 'information_schema') {
    throw new ValidationError(
      setting,
      'must be a PostgreSQL identifier of lower-case letters, digits and _ ' +
        `(at most 48, not pg_… or information_schema), got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

type QualifiedNames = { readonly [K in CoreObject]: string };

/** One install's schema: its quoted, schema-qualified object names, its NOTIFY channel. */
export class DbSchema implements QualifiedNames {
  /** The quoted schema name, e.g. `"syncrelay"`. */
  readonly quoted: string;
  /** The outbox's NOTIFY channel: `<schema>_outbox` (the default schema keeps its old channel name). */
  readonly channel: string;
  /** The schedules' NOTIFY channel: `<schema>_schedules`. */
  readonly schedulesChannel: string;

  declare readonly integrations: string;
  declare readonly integration_credentials: string;
  declare readonly integration_sources: string;
  declare readonly integration_datasets: string;
  declare readonly sync_watermarks: string;
  declare readonly sync_runs: string;
  declare readonly sync_run_units: string;
  declare readonly sync_dispatch_outbox: string;
  declare readonly sync_run_post_dispatches: string;
  declare readonly post_sync_receipts: string;
  declare readonly scheduled_jobs: string;
  declare readonly job_runs: string;
  declare readonly reconciler_passes: string;
  declare readonly api_tokens: string;
  declare readonly idempotency_keys: string;
  declare readonly rate_budgets: string;
  declare readonly provider_etags: string;
  declare readonly webhook_secrets: string;
  declare readonly webhook_deliveries: string;
  declare readonly webhook_pending_runs: string;
  declare readonly webhook_named_items: string;
  declare readonly syncrelay_migrations: string;
  declare readonly provider_migrations: string;
  declare readonly syncrelay_uuid7: string;

  constructor(readonly name: string = DEFAULT_SCHEMA) {
    validateSchemaName(name);
    this.quoted = quoteIdent(name);
    this.channel = `${name}_outbox`;
    this.schedulesChannel = `${name}_schedules`;
    for (const o of CORE_OBJECTS) Object.defineProperty(this, o, { value: this.table(o), enumerable: true });
    Object.freeze(this);
  }

  /** An advisory-lock key of this install: `<schema>.<what>` (two installs never share a lock). */
  lockKey(what: string): string {
    return `${this.name}.${what}`;
  }

  /** Any object of this schema by name (a provider's own tables), quoted and qualified. */
  table(name: string): string {
    return `${this.quoted}.${quoteIdent(name)}`;
  }
}

/** The default schema (`syncrelay`): what a Db opened without a schema uses. */
export const defaultSchema = new DbSchema();
