-- syncrelay schema, version 5: a concurrency bucket's waiting units in id (creation) order.
--
-- When a unit ends it wakes the run of the oldest planned unit in its bucket: one run per freed
-- slot, oldest first, instead of every run with planned units there (behind a backlog of hundreds
-- of capped runs those wake-ups became a storm of dispatch tasks queueing on the bucket's lock).
-- With `id` last in the bucket index that unit is the first entry of an index range, not a sort.

CREATE INDEX sync_run_units_bucket_id_idx ON sync_run_units (org_id, provider, cost_class, status, id)
  WHERE status IN ('planned', 'dispatching', 'running', 'retrying');
DROP INDEX sync_run_units_bucket_idx;
