/**
 * The chaos run's own database: created on DATABASE_URL's server, migrated, given an audit log of
 * every lease, run, JobRun and watermark change (triggers, so the invariants can be checked from
 * history and not only from the final state), and dropped at the end.
 */
import pg from 'pg';
import { PgDb } from '../db/pg.js';
import { migrate } from '../db/migrator.js';
import { quoteIdent, type DbSchema } from '../db/schema.js';
import type { Db } from '../db/types.js';
import { createSyntheticProvider } from '../providers/synthetic.js';

/** `url` pointing at `database`, with `application_name` set (it wins over the driver's default). */
export function databaseUrl(url: string, database: string, applicationName: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  u.searchParams.set('application_name', applicationName);
  return u.toString();
}

/** Where an engine process's connections go: the server, and the pooler in front of it if any (base URLs). */
export interface DbRoute {
  server: string;
  pooler: string | null;
}

/** What marks an engine process's direct connections (its LISTEN) apart from its pooled ones. */
export const DIRECT_SUFFIX = '-direct';

/**
 * The database settings of an engine process whose connections are named `applicationName`:
 * DATABASE_URL; behind the pooler DATABASE_URL is the pooler, SYNCRELAY_DB_POOLER is `transaction`
 * and DATABASE_DIRECT_URL is the server (its LISTEN connection, named `…-direct`).
 */
export function engineDbSettings(route: DbRoute, database: string, applicationName: string): Record<string, string> {
  if (!route.pooler) return { DATABASE_URL: databaseUrl(route.server, database, applicationName) };
  return {
    DATABASE_URL: databaseUrl(route.pooler, database, applicationName),
    SYNCRELAY_DB_POOLER: 'transaction',
    DATABASE_DIRECT_URL: databaseUrl(route.server, database, `${applicationName}${DIRECT_SUFFIX}`),
  };
}

/** One statement on the server's maintenance connection (the database DATABASE_URL names). */
async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'syncrelay-chaos-admin' });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function createDatabase(serverUrl: string, name: string): Promise<void> {
  await admin(serverUrl, `CREATE DATABASE ${quoteIdent(name)}`);
}

export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  await admin(serverUrl, `DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
}

/** The audit log's tables (and the lease table the checks build), in the install's schema. */
export interface AuditTables {
  unitEvents: string;
  runEvents: string;
  jobRunEvents: string;
  watermarkEvents: string;
  outboxEvents: string;
  /** Every row write of the synthetic sink, with the database's time of that write. */
  itemWrites: string;
  /** Every post_sync receipt, with the database's time of its insert. */
  receiptEvents: string;
  leases: string;
}

export function auditTables(s: DbSchema): AuditTables {
  return {
    unitEvents: s.table('chaos_unit_events'),
    runEvents: s.table('chaos_run_events'),
    jobRunEvents: s.table('chaos_job_run_events'),
    watermarkEvents: s.table('chaos_watermark_events'),
    outboxEvents: s.table('chaos_outbox_events'),
    itemWrites: s.table('chaos_item_writes'),
    receiptEvents: s.table('chaos_receipt_events'),
    leases: s.table('chaos_leases'),
  };
}

/** Migrates the new database into `schema` (core and built-in providers) and installs the audit tables and triggers. */
export async function prepareDatabase(url: string, schema: DbSchema): Promise<void> {
  const db = new PgDb({ connectionString: url, max: 1, schema });
  try {
    await migrate(db, { providers: [createSyntheticProvider()] });
    await installAudit(db);
  } finally {
    await db.close();
  }
}

/** Installs the audit tables and triggers in a migrated database (the checks read them). */
export async function installAudit(db: Db): Promise<void> {
  await db.exec(auditSql(db.schema));
  await db.exec(writeAuditSql(db.schema));
}

/**
 * `at` is clock_timestamp() when the row changed (before commit); `tx` is the transaction id, so
 * changes made in one transaction (a unit's success and its watermark) can be joined. The tables and
 * functions live in the install's schema, next to the tables they audit.
 */
function auditSql(s: DbSchema): string {
  const a = auditTables(s);
  const fn = (name: string) => s.table(name);
  return `
CREATE TABLE ${a.unitEvents} (
  id bigserial PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current(),
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  unit_id uuid NOT NULL, old_status text, new_status text NOT NULL, old_owner text, new_owner text,
  lease_expires_at timestamptz, mode text NOT NULL);
CREATE INDEX chaos_unit_events_unit_idx ON ${a.unitEvents} (unit_id, id);
CREATE INDEX chaos_unit_events_tx_idx ON ${a.unitEvents} (tx);
CREATE INDEX chaos_unit_events_at_idx ON ${a.unitEvents} (at);

CREATE TABLE ${a.runEvents} (
  id bigserial PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current(),
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  run_id uuid NOT NULL, old_status text, new_status text NOT NULL);

CREATE TABLE ${a.jobRunEvents} (
  id bigserial PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current(),
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  job_run_id uuid NOT NULL, old_status text, new_status text NOT NULL);

CREATE TABLE ${a.watermarkEvents} (
  id bigserial PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current(),
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  integration_id uuid NOT NULL, source_id uuid NOT NULL, dataset_key text NOT NULL,
  old_at timestamptz, new_at timestamptz NOT NULL);

CREATE TABLE ${a.outboxEvents} (
  id bigserial PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current(),
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  run_id uuid NOT NULL, kind text NOT NULL, status text NOT NULL, available_at timestamptz NOT NULL,
  attempts integer NOT NULL, claimed boolean NOT NULL, last_error text);
CREATE INDEX chaos_outbox_events_run_idx ON ${a.outboxEvents} (run_id, id);

CREATE FUNCTION ${fn('chaos_audit_outbox')}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${a.outboxEvents} (run_id, kind, status, available_at, attempts, claimed, last_error)
  VALUES (NEW.sync_run_id, NEW.kind, NEW.status, NEW.available_at, NEW.attempts, NEW.claim_token IS NOT NULL,
          left(NEW.last_error, 120));
  RETURN NULL;
END $$;
CREATE TRIGGER chaos_audit_outbox AFTER INSERT OR UPDATE ON ${s.sync_dispatch_outbox} FOR EACH ROW
  EXECUTE FUNCTION ${fn('chaos_audit_outbox')}();

CREATE FUNCTION ${fn('chaos_audit_unit')}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${a.unitEvents} (unit_id, old_status, new_status, old_owner, new_owner, lease_expires_at, mode)
  VALUES (NEW.id, OLD.status, NEW.status, OLD.lease_owner, NEW.lease_owner, NEW.lease_expires_at, NEW.mode);
  RETURN NULL;
END $$;
CREATE TRIGGER chaos_audit_unit AFTER UPDATE ON ${s.sync_run_units} FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.lease_owner IS DISTINCT FROM NEW.lease_owner
        OR OLD.lease_expires_at IS DISTINCT FROM NEW.lease_expires_at)
  EXECUTE FUNCTION ${fn('chaos_audit_unit')}();

CREATE FUNCTION ${fn('chaos_audit_run')}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${a.runEvents} (run_id, old_status, new_status) VALUES (NEW.id, OLD.status, NEW.status);
  RETURN NULL;
END $$;
CREATE TRIGGER chaos_audit_run AFTER UPDATE ON ${s.sync_runs} FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION ${fn('chaos_audit_run')}();

CREATE FUNCTION ${fn('chaos_audit_job_run')}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${a.jobRunEvents} (job_run_id, old_status, new_status) VALUES (NEW.id, OLD.status, NEW.status);
  RETURN NULL;
END $$;
CREATE TRIGGER chaos_audit_job_run AFTER UPDATE ON ${s.job_runs} FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION ${fn('chaos_audit_job_run')}();

CREATE FUNCTION ${fn('chaos_audit_watermark')}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE previous timestamptz;
BEGIN
  IF TG_OP = 'UPDATE' THEN previous := OLD.watermark_at; END IF;
  INSERT INTO ${a.watermarkEvents} (integration_id, source_id, dataset_key, old_at, new_at)
  VALUES (NEW.integration_id, NEW.source_id, NEW.dataset_key, previous, NEW.watermark_at);
  RETURN NULL;
END $$;
CREATE TRIGGER chaos_audit_watermark AFTER INSERT OR UPDATE ON ${s.sync_watermarks} FOR EACH ROW
  EXECUTE FUNCTION ${fn('chaos_audit_watermark')}();
`;
}

/**
 * The sink's writes and the post_sync receipts, as the database saw them: `at` is clock_timestamp()
 * of the row's INSERT or UPDATE (an upsert that rewrites a row is logged again), so a write is judged
 * by when it happened, not by a time its writer took. A fenced write holds its unit row FOR SHARE
 * until commit, so it always precedes the change that hands the lease over; an unfenced one need not.
 */
function writeAuditSql(s: DbSchema): string {
  const a = auditTables(s);
  const fn = (name: string) => s.table(name);
  return `
CREATE TABLE ${a.itemWrites} (
  id bigserial PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current(),
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  unit_id uuid NOT NULL, lease_owner text NOT NULL, item_key text NOT NULL);
CREATE INDEX chaos_item_writes_unit_idx ON ${a.itemWrites} (unit_id, lease_owner);

CREATE TABLE ${a.receiptEvents} (
  id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp(),
  run_id uuid NOT NULL, handler text NOT NULL, delivery text NOT NULL);

CREATE FUNCTION ${fn('chaos_audit_item_write')}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${a.itemWrites} (unit_id, lease_owner, item_key) VALUES (NEW.unit_id, NEW.lease_owner, NEW.item_key);
  RETURN NULL;
END $$;
CREATE TRIGGER chaos_audit_item_write AFTER INSERT OR UPDATE ON ${s.table('synthetic_items')} FOR EACH ROW
  EXECUTE FUNCTION ${fn('chaos_audit_item_write')}();

CREATE FUNCTION ${fn('chaos_audit_receipt')}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ${a.receiptEvents} (run_id, handler, delivery) VALUES (NEW.sync_run_id, NEW.handler, NEW.delivery);
  RETURN NULL;
END $$;
CREATE TRIGGER chaos_audit_receipt AFTER INSERT ON ${s.post_sync_receipts} FOR EACH ROW
  EXECUTE FUNCTION ${fn('chaos_audit_receipt')}();
`;
}
