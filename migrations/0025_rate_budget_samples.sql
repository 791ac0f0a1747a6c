-- syncrelay schema: a bounded history of the shared rate-limit budgets, for the operator's view.
--
-- rate_budget_samples: at most one row per (org, provider budget, credential) and minute, upserted
-- right after an observation is recorded into rate_budgets (src/store/rateBudgets.ts): the budget
-- as recorded after that observation (remaining of limit until reset_at, a limit's lift
-- time), how many observations were recorded in the minute and how many of them carried a limit
-- response (a lift time still ahead). Rows older than seven days are pruned by the reconciler.
CREATE TABLE rate_budget_samples (
  org_id           text        NOT NULL,
  provider         text        NOT NULL,
  credential_id    text        NOT NULL,
  minute           timestamptz NOT NULL,
  remaining        integer,
  request_limit    integer,
  reset_at         timestamptz,
  limited_until    timestamptz,
  observations     integer     NOT NULL CHECK (observations > 0),
  limit_responses  integer     NOT NULL CHECK (limit_responses >= 0),
  PRIMARY KEY (org_id, provider, credential_id, minute)
);
-- The reconciler's prune: the oldest minutes first.
CREATE INDEX rate_budget_samples_minute_idx ON rate_budget_samples (minute);

-- Units a rate limit deferred, by integration: the budgets report's deferral counts and the units
-- waiting on a credential now read only these (a unit never limited has no entry).
CREATE INDEX sync_run_units_rate_limited_idx ON sync_run_units (integration_id, rate_limit_first_seen_at)
  WHERE rate_limit_first_seen_at IS NOT NULL;
