-- syncrelay schema: shared provider rate-limit budgets.
--
-- One row per (org, provider, credential): the budget the provider last reported for that
-- credential (remaining of limit until reset_at), a limit response's lift time (limited_until),
-- and the probe lease (probe_until, probe_owner): after a reset, one unit calls the API first
-- while the others wait for its response to be recorded.
CREATE TABLE rate_budgets (
  org_id         text        NOT NULL,
  provider       text        NOT NULL,
  credential_id  text        NOT NULL,
  remaining      integer,
  request_limit  integer,
  reset_at       timestamptz,
  limited_until  timestamptz,
  probe_until    timestamptz,
  probe_owner    text,
  observed_at    timestamptz NOT NULL,
  PRIMARY KEY (org_id, provider, credential_id)
);
