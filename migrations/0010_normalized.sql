-- syncrelay schema, version 10: the normalized store — provider-neutral tables that every work
-- tracker and git host maps its data onto (docs/normalized-store.md).
--
-- Every table is keyed by (org_id, integration_id, provider, external_id) and written with
-- idempotent upserts by the normalized sink. `first_seen_at` is set once, on insert (rows never
-- carry it); `last_synced_at` is the writing unit's clock time; `raw` keeps what is not modelled.
-- No foreign key to integrations: synced data outlives its integration unless it is purged.

CREATE TABLE repositories (
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL,
  provider        text NOT NULL,
  external_id     text NOT NULL,
  name            text,
  description     text,
  url             text,
  private         boolean,
  archived        boolean,
  default_branch  text,
  created_at      timestamptz,
  updated_at      timestamptz,
  first_seen_at   timestamptz NOT NULL DEFAULT now(),
  last_synced_at  timestamptz NOT NULL,
  raw             jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);

CREATE TABLE teams (
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL,
  provider        text NOT NULL,
  external_id     text NOT NULL,
  key             text,
  name            text,
  description     text,
  url             text,
  first_seen_at   timestamptz NOT NULL DEFAULT now(),
  last_synced_at  timestamptz NOT NULL,
  raw             jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);

CREATE TABLE members (
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL,
  provider        text NOT NULL,
  external_id     text NOT NULL,
  login           text,
  name            text,
  email           text,
  avatar_url      text,
  role            text,
  first_seen_at   timestamptz NOT NULL DEFAULT now(),
  last_synced_at  timestamptz NOT NULL,
  raw             jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);

CREATE TABLE projects (
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL,
  provider        text NOT NULL,
  external_id     text NOT NULL,
  key             text,
  name            text,
  description     text,
  state           text,
  lead            text,
  url             text,
  created_at      timestamptz,
  updated_at      timestamptz,
  first_seen_at   timestamptz NOT NULL DEFAULT now(),
  last_synced_at  timestamptz NOT NULL,
  raw             jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);

-- Sprints, cycles and iterations alike.
CREATE TABLE sprints (
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL,
  provider        text NOT NULL,
  external_id     text NOT NULL,
  name            text,
  state           text,
  container       text,
  starts_at       timestamptz,
  ends_at         timestamptz,
  completed_at    timestamptz,
  first_seen_at   timestamptz NOT NULL DEFAULT now(),
  last_synced_at  timestamptz NOT NULL,
  raw             jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);

CREATE TABLE work_items (
  org_id              text NOT NULL,
  integration_id      uuid NOT NULL,
  provider            text NOT NULL,
  external_id         text NOT NULL,
  number              text,
  title               text,
  type                text,
  status              text CHECK (status IN ('todo', 'in_progress', 'done', 'cancelled')),
  status_raw          text,
  assignees           text[] NOT NULL DEFAULT '{}',
  labels              text[] NOT NULL DEFAULT '{}',
  created_at          timestamptz,
  updated_at          timestamptz,
  started_at          timestamptz,
  completed_at        timestamptz,
  parent_external_id  text,
  container           text,
  milestone           text,
  url                 text,
  first_seen_at       timestamptz NOT NULL DEFAULT now(),
  last_synced_at      timestamptz NOT NULL,
  raw                 jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);
-- The metrics handler's scans: items created / closed in a window of one integration.
CREATE INDEX work_items_created_idx ON work_items (org_id, integration_id, created_at);
CREATE INDEX work_items_completed_idx ON work_items (org_id, integration_id, completed_at);

CREATE TABLE work_item_comments (
  org_id                 text NOT NULL,
  integration_id         uuid NOT NULL,
  provider               text NOT NULL,
  external_id            text NOT NULL,
  work_item_external_id  text,
  author                 text,
  body                   text,
  created_at             timestamptz,
  updated_at             timestamptz,
  first_seen_at          timestamptz NOT NULL DEFAULT now(),
  last_synced_at         timestamptz NOT NULL,
  raw                    jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);

CREATE TABLE work_item_events (
  org_id                 text NOT NULL,
  integration_id         uuid NOT NULL,
  provider               text NOT NULL,
  external_id            text NOT NULL,
  work_item_external_id  text,
  kind                   text CHECK (kind IN ('state', 'label', 'assignee', 'other')),
  actor                  text,
  from_value             text,
  to_value               text,
  occurred_at            timestamptz,
  first_seen_at          timestamptz NOT NULL DEFAULT now(),
  last_synced_at         timestamptz NOT NULL,
  raw                    jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);

CREATE TABLE pull_requests (
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL,
  provider        text NOT NULL,
  external_id     text NOT NULL,
  number          integer,
  title           text,
  state           text CHECK (state IN ('open', 'closed', 'merged')),
  draft           boolean,
  author          text,
  base_ref        text,
  head_ref        text,
  container       text,
  created_at      timestamptz,
  updated_at      timestamptz,
  merged_at       timestamptz,
  closed_at       timestamptz,
  additions       integer,
  deletions       integer,
  changed_files   integer,
  url             text,
  first_seen_at   timestamptz NOT NULL DEFAULT now(),
  last_synced_at  timestamptz NOT NULL,
  raw             jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);
-- The metrics handler's scan: pull requests merged in a window of one integration.
CREATE INDEX pull_requests_merged_idx ON pull_requests (org_id, integration_id, merged_at);

CREATE TABLE pull_request_reviews (
  org_id                    text NOT NULL,
  integration_id            uuid NOT NULL,
  provider                  text NOT NULL,
  external_id               text NOT NULL,
  pull_request_external_id  text,
  author                    text,
  state                     text,
  submitted_at              timestamptz,
  first_seen_at             timestamptz NOT NULL DEFAULT now(),
  last_synced_at            timestamptz NOT NULL,
  raw                       jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);

CREATE TABLE commits (
  org_id              text NOT NULL,
  integration_id      uuid NOT NULL,
  provider            text NOT NULL,
  external_id         text NOT NULL,
  sha                 text,
  container           text,
  author              text,
  committed_at        timestamptz,
  message_first_line  text,
  additions           integer,
  deletions           integer,
  first_seen_at       timestamptz NOT NULL DEFAULT now(),
  last_synced_at      timestamptz NOT NULL,
  raw                 jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (org_id, integration_id, provider, external_id)
);

-- Written by the work-item-metrics post_sync handler: one generation (computed_at) per run, a row
-- per day of the run's covered window. Readers choose (the latest) or sum generations.
CREATE TABLE work_item_metrics_daily (
  org_id                      text NOT NULL,
  integration_id              uuid NOT NULL,
  day                         date NOT NULL,
  computed_at                 timestamptz NOT NULL,
  items_created               integer NOT NULL,
  items_completed             integer NOT NULL,
  wip                         integer NOT NULL,
  cycle_time_p50_hours        double precision,
  cycle_time_p90_hours        double precision,
  prs_merged                  integer NOT NULL,
  pr_time_to_merge_p50_hours  double precision,
  PRIMARY KEY (org_id, integration_id, day, computed_at)
);
