-- The synthetic provider's tables, version 1: its execution log, its items (written through the
-- fenced sink) and the daily roll-up its post-sync handler writes.
--
-- `IF NOT EXISTS`: an install made before providers had migration tracks got these tables from the
-- core migration 0001 (moved into the schema by core 0007); this track adopts them as they are.

CREATE TABLE IF NOT EXISTS synthetic_executions (
  id           bigserial PRIMARY KEY,
  org_id       text NOT NULL,
  unit_id      uuid NOT NULL,
  lease_owner  text NOT NULL,
  started_at   timestamptz NOT NULL,
  ended_at     timestamptz,
  outcome      text NOT NULL DEFAULT 'running'
);
CREATE INDEX IF NOT EXISTS synthetic_executions_unit_idx ON synthetic_executions (unit_id);

CREATE TABLE IF NOT EXISTS synthetic_items (
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL,
  source_key      text NOT NULL,
  dataset_key     text NOT NULL,
  item_key        text NOT NULL,
  item_day        date NOT NULL,
  payload         jsonb NOT NULL,
  unit_id         uuid NOT NULL,
  lease_owner     text NOT NULL,
  written_at      timestamptz NOT NULL,
  PRIMARY KEY (integration_id, source_key, dataset_key, item_key)
);

CREATE TABLE IF NOT EXISTS synthetic_metrics_daily (
  id              bigserial PRIMARY KEY,
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL,
  sync_run_id     uuid NOT NULL,
  day             date NOT NULL,
  items           integer NOT NULL,
  computed_at     timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS synthetic_metrics_daily_run_idx ON synthetic_metrics_daily (sync_run_id);
