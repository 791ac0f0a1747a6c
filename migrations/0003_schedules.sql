-- syncrelay schema, version 3: the cron scheduler.

-- What happened at the last slot a scheduler handled: 'fired' (last_job_run_id started),
-- 'skipped' (a run of that integration and mode had not finished; last_error names it) or
-- 'failed' (the trigger was refused; last_error says why). last_run_at is when it was handled.
ALTER TABLE scheduled_jobs
  ADD COLUMN last_outcome     text CHECK (last_outcome IN ('fired', 'skipped', 'failed')),
  ADD COLUMN last_error       text,
  ADD COLUMN last_job_run_id  uuid,
  -- A backfill needs a window a cron slot cannot give; schedules run incremental or full_resync.
  ADD CONSTRAINT scheduled_jobs_mode_schedulable CHECK (mode IN ('incremental', 'full_resync'));

-- The claim scan of every scheduler tick: enabled jobs by next_run_at.
CREATE INDEX scheduled_jobs_due_idx ON scheduled_jobs (next_run_at) WHERE enabled;
CREATE INDEX scheduled_jobs_org_idx ON scheduled_jobs (org_id, created_at, id);

-- Deleting a schedule keeps the JobRuns it started (still triggered_by = 'schedule'), unlinked.
ALTER TABLE job_runs
  DROP CONSTRAINT job_runs_job_id_fkey,
  ADD CONSTRAINT job_runs_job_id_fkey FOREIGN KEY (job_id) REFERENCES scheduled_jobs (id) ON DELETE SET NULL;
CREATE INDEX job_runs_job_idx ON job_runs (job_id) WHERE job_id IS NOT NULL;
