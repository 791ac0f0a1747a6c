-- syncrelay schema: a bounded history of the outbox's depth, for the activity charts.
--
-- The reconciler samples the pending outbox at most once a minute (sampled_at is the minute, so two
-- reconcilers sampling in the same minute write it once): one row per org with pending rows, and one
-- row with org_id '' counting every org, written at every sample even when nothing is pending (it
-- tells "sampled, nothing pending" from "not sampled"). Rows older than seven days are pruned by the
-- reconciler.
CREATE TABLE outbox_depth_samples (
  sampled_at         timestamptz NOT NULL,
  org_id             text NOT NULL,
  pending            integer NOT NULL CHECK (pending >= 0),
  due                integer NOT NULL CHECK (due >= 0),
  oldest_due_age_ms  bigint CHECK (oldest_due_age_ms >= 0),
  PRIMARY KEY (sampled_at, org_id)
);
-- An org's samples over a window (the activity endpoint's read).
CREATE INDEX outbox_depth_samples_org_idx ON outbox_depth_samples (org_id, sampled_at);
