-- syncrelay schema: the indexes the probes of what a unit's end wakes (src/store/endWakes.ts: the
-- terminal CAS statement, deferrals, expiry, cancellation) read, which no other index can stand in for.
--
-- The probes of migration 0013 ("does the run still have a planned unit in the bucket?", "is another
-- unit of the run still open?") state `status = 'planned'` and `status IN (…in flight…)`, which the
-- (run, status) index can use as well. Its statistics never show the entries every moved unit
-- leaves behind until VACUUM, so with none (before a first ANALYZE), with ones from before the units
-- moved, and with fresh ones alike it looks at least as cheap as the partial indexes, whose bloat
-- the statistics do show: the planner took it and read every unit that had passed through the
-- status (~600 buffers per end on a 20,000-unit run against ~35 on a 200-unit one).
--
-- These indexes hold the same entries as 0013's, with their predicates written under the "C"
-- collation, and the probes state their status tests in that same form. Only these indexes can
-- prove it; no index on `status` (default collation) can use it as an index condition, so any other
-- path reads all of the run's units and is costed so, whatever the statistics. Equality is the same
-- test under either collation (statuses are ASCII; every collation here is deterministic).
-- 0013's indexes stay: dispatch reads them.

-- A run's planned units per bucket, newest last.
CREATE INDEX sync_run_units_end_planned_idx ON sync_run_units (sync_run_id, provider, cost_class, id)
  WHERE status COLLATE "C" = 'planned';

-- A run's units between dispatch and their end, newest last.
CREATE INDEX sync_run_units_end_in_flight_idx ON sync_run_units (sync_run_id, id)
  WHERE status COLLATE "C" IN ('dispatching', 'running', 'retrying');
