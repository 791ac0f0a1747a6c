-- syncrelay schema: what a unit's end asks about its run and its bucket, at a cost that does not
-- grow with the run.
--
-- A status change leaves the row's old index entries behind until VACUUM, so a probe that walks a
-- (run, status) range from its start reads every unit that has passed through that status: on a
-- 100,000-unit run, every end paid for every unit dispatched before it (tens of milliseconds per
-- end batch). These indexes are read from the newest unit backwards (dispatch takes the oldest
-- first, so the newest planned or in-flight unit is the last to leave the status).

-- A run's planned units per bucket: "does the run (or its part in this bucket) still have one?"
DROP INDEX sync_run_units_planned_idx;
CREATE INDEX sync_run_units_planned_idx ON sync_run_units (sync_run_id, provider, cost_class, id)
  WHERE status = 'planned';

-- A run's units between dispatch and their end: "is another unit of the run still open?"
CREATE INDEX sync_run_units_in_flight_idx ON sync_run_units (sync_run_id, id)
  WHERE status IN ('dispatching', 'running', 'retrying');

-- An org's live runs, oldest first: the runs a freed slot in a bucket may wake.
CREATE INDEX sync_runs_live_org_idx ON sync_runs (org_id, id) WHERE status IN ('planned', 'dispatching');

-- A run's planned units, counted by the statements that plan and dispatch them: once a large run
-- is all dispatched, "does it still have a planned unit?" would otherwise walk the entries every
-- dispatched unit left in the planned-units index until VACUUM. NULL (runs planned before this
-- column, rows written by hand) means unknown: the index is read instead.
ALTER TABLE sync_runs ADD COLUMN planned_units integer;
