-- syncrelay schema: 'webhook' as what started a JobRun (src/domain/statuses.ts, TRIGGERS), and an
-- index for the retention of webhook deliveries.
--
-- A run armed by a signed webhook delivery is recorded with its own trigger rather than 'api', so
-- history filters and the dashboard can tell the two apart. The column's CHECK (named by PostgreSQL
-- after the column: job_runs_triggered_by_check) is replaced by one that also allows 'webhook'.
-- Adding it checks the existing rows (every one passes) under the ALTER's lock on job_runs.
ALTER TABLE job_runs
  DROP CONSTRAINT job_runs_triggered_by_check,
  ADD CONSTRAINT job_runs_triggered_by_check
    CHECK (triggered_by IN ('manual', 'schedule', 'backfill', 'api', 'webhook'));

-- The reconciler deletes deliveries older than SYNC_WEBHOOK_DELIVERY_RETENTION_HOURS, oldest first
-- and in bounded batches, across integrations: it reads them by receipt time.
CREATE INDEX webhook_deliveries_received_at_idx ON webhook_deliveries (received_at);
