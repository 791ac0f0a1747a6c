-- syncrelay schema, version 1: the tables of SPEC §2 plus the reconciler's pass log and
-- post-sync receipts. (The synthetic provider's tables, first created here, are its own migration
-- track's now: src/providers/synthetic/migrations/. A database this file built with them keeps them.)

CREATE TABLE integrations (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id      text NOT NULL,
  provider    text NOT NULL,
  name        text NOT NULL,
  config      jsonb NOT NULL DEFAULT '{}'::jsonb,
  enabled     boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX integrations_org_idx ON integrations (org_id, created_at);

CREATE TABLE integration_sources (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
  external_key    text NOT NULL,
  name            text NOT NULL,
  enabled         boolean NOT NULL DEFAULT true,
  UNIQUE (integration_id, external_key)
);

CREATE TABLE integration_datasets (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
  dataset_key     text NOT NULL,
  enabled         boolean NOT NULL DEFAULT true,
  UNIQUE (integration_id, dataset_key)
);

CREATE TABLE sync_watermarks (
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL,
  source_id       uuid NOT NULL,
  dataset_key     text NOT NULL,
  watermark_at    timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, integration_id, source_id, dataset_key)
);

CREATE TABLE sync_runs (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id           text NOT NULL,
  integration_id   uuid NOT NULL REFERENCES integrations (id),
  triggered_by     text NOT NULL,
  mode             text NOT NULL CHECK (mode IN ('incremental', 'backfill', 'full_resync')),
  status           text NOT NULL DEFAULT 'planned'
                   CHECK (status IN ('planned', 'dispatching', 'success', 'partial_failed', 'failed', 'cancelled')),
  total_units      integer NOT NULL DEFAULT 0,
  completed_units  integer NOT NULL DEFAULT 0,
  failed_units     integer NOT NULL DEFAULT 0,
  started_at       timestamptz,
  completed_at     timestamptz,
  result           jsonb NOT NULL DEFAULT '{}'::jsonb,
  error            text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
-- Live runs only: the materializer and conflict checks scan this, never history.
CREATE INDEX sync_runs_live_idx ON sync_runs (integration_id, mode)
  WHERE status IN ('planned', 'dispatching');
CREATE INDEX sync_runs_org_idx ON sync_runs (org_id, created_at DESC);
CREATE INDEX sync_runs_completed_idx ON sync_runs (completed_at) WHERE completed_at IS NOT NULL;

CREATE TABLE sync_run_units (
  id                         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id                     text NOT NULL,
  sync_run_id                uuid NOT NULL REFERENCES sync_runs (id),
  integration_id             uuid NOT NULL,
  source_id                  uuid,
  provider                   text NOT NULL,
  dataset_key                text NOT NULL,
  tier                       text NOT NULL CHECK (tier IN ('reference', 'work_item')),
  cost_class                 text NOT NULL,
  mode                       text NOT NULL,
  since_at                   timestamptz,
  before_at                  timestamptz,
  status                     text NOT NULL DEFAULT 'planned'
                             CHECK (status IN ('planned', 'dispatching', 'running', 'retrying', 'success', 'failed', 'cancelled')),
  attempts                   integer NOT NULL DEFAULT 0,
  available_at               timestamptz,
  lease_owner                text,
  lease_expires_at           timestamptz,
  last_heartbeat_at          timestamptz,
  started_at                 timestamptz,
  rate_limit_deferrals       integer NOT NULL DEFAULT 0,
  rate_limit_first_seen_at   timestamptz,
  expired_lease_retry_count  integer NOT NULL DEFAULT 0,
  last_retry_reason          text,
  retry_exhausted_at         timestamptz,
  touched_surfaces           text[] NOT NULL DEFAULT '{}',
  duration_ms                integer,
  error                      text,
  result                     jsonb,
  dispatched_at              timestamptz,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sync_run_units_run_status_idx ON sync_run_units (sync_run_id, status);
-- Active units per concurrency bucket (only non-terminal rows are indexed).
CREATE INDEX sync_run_units_bucket_idx ON sync_run_units (org_id, provider, cost_class, status)
  WHERE status IN ('planned', 'dispatching', 'running', 'retrying');
-- The expired-lease scan.
CREATE INDEX sync_run_units_lease_idx ON sync_run_units (lease_expires_at) WHERE status = 'running';
-- Open units by run: the materializer's dispatch scan.
CREATE INDEX sync_run_units_open_idx ON sync_run_units (sync_run_id, updated_at)
  WHERE status IN ('planned', 'dispatching', 'retrying');

CREATE TABLE sync_dispatch_outbox (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id            text NOT NULL,
  sync_run_id       uuid NOT NULL REFERENCES sync_runs (id),
  kind              text NOT NULL CHECK (kind IN ('dispatch_sync_run', 'finalize_sync_run', 'post_sync')),
  status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'dispatched')),
  available_at      timestamptz NOT NULL,
  attempts          integer NOT NULL DEFAULT 0,
  last_error        text,
  dispatched_at     timestamptz,
  claim_token       uuid,
  claim_expires_at  timestamptz,
  -- bumped by every wake-up; a mark made under an older arm leaves the row pending
  arm_seq           bigint NOT NULL DEFAULT 1,
  claimed_arm_seq   bigint,
  trace_context     jsonb,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (sync_run_id, kind)
);
-- The claim scan reads only pending rows, so its cost does not grow with history.
CREATE INDEX sync_dispatch_outbox_due_idx ON sync_dispatch_outbox (available_at, id) WHERE status = 'pending';
CREATE INDEX sync_dispatch_outbox_dispatched_idx ON sync_dispatch_outbox (dispatched_at) WHERE status = 'dispatched';

CREATE TABLE sync_run_post_dispatches (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id         text NOT NULL,
  sync_run_id    uuid NOT NULL REFERENCES sync_runs (id),
  kind           text NOT NULL,
  dispatched_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (sync_run_id, kind)
);
CREATE INDEX sync_run_post_dispatches_time_idx ON sync_run_post_dispatches (dispatched_at);

CREATE TABLE post_sync_receipts (
  org_id       text NOT NULL,
  sync_run_id  uuid NOT NULL,
  handler      text NOT NULL,
  delivery     text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (sync_run_id, handler)
);

CREATE TABLE scheduled_jobs (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL REFERENCES integrations (id),
  cron            text NOT NULL,
  timezone        text NOT NULL DEFAULT 'UTC',
  mode            text NOT NULL CHECK (mode IN ('incremental', 'backfill', 'full_resync')),
  enabled         boolean NOT NULL DEFAULT true,
  next_run_at     timestamptz,
  last_run_at     timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE job_runs (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id          text NOT NULL,
  job_id          uuid REFERENCES scheduled_jobs (id),
  integration_id  uuid NOT NULL,
  status          text NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'running', 'success', 'failed', 'cancelled')),
  triggered_by    text NOT NULL CHECK (triggered_by IN ('manual', 'schedule', 'backfill', 'api')),
  started_at      timestamptz,
  completed_at    timestamptz,
  duration_ms     integer,
  result          jsonb NOT NULL DEFAULT '{}'::jsonb,
  error           text,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_runs_sync_run_idx ON job_runs ((result ->> 'sync_run_id'));
CREATE INDEX job_runs_open_idx ON job_runs (created_at) WHERE status IN ('pending', 'running');
CREATE INDEX job_runs_org_idx ON job_runs (org_id, created_at DESC);

CREATE TABLE reconciler_passes (
  id           bigserial PRIMARY KEY,
  reconciler   text NOT NULL,
  started_at   timestamptz NOT NULL,
  finished_at  timestamptz NOT NULL,
  duration_ms  integer NOT NULL,
  counters     jsonb NOT NULL,
  error        text
);
CREATE INDEX reconciler_passes_time_idx ON reconciler_passes (started_at DESC);
