-- syncrelay schema: the verify mode.
--
-- A verify run lists each source's ids and update times per dataset, compares them with the store,
-- fetches what is missing or stale and marks deleted what a complete listing no longer has. Runs
-- and schedules may name it; a cron slot needs no window for it, so it is schedulable. Dropping and
-- adding a CHECK rewrites no table (the new constraint is validated by one scan).
ALTER TABLE sync_runs
  DROP CONSTRAINT sync_runs_mode_check,
  ADD CONSTRAINT sync_runs_mode_check CHECK (mode IN ('incremental', 'backfill', 'full_resync', 'verify'));

ALTER TABLE scheduled_jobs
  DROP CONSTRAINT scheduled_jobs_mode_check,
  ADD CONSTRAINT scheduled_jobs_mode_check CHECK (mode IN ('incremental', 'backfill', 'full_resync', 'verify')),
  DROP CONSTRAINT scheduled_jobs_mode_schedulable,
  ADD CONSTRAINT scheduled_jobs_mode_schedulable CHECK (mode IN ('incremental', 'full_resync', 'verify'));
