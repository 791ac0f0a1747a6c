-- syncrelay schema: a source's units, newest first (the freshness report, src/store/freshness.ts).
--
-- For each enabled source × dataset of an integration the report reads the newest successful,
-- finished and open unit and the recent timed successes. No index reached units by source: every
-- lookup would scan the units of the whole table. Keyed by the immutable id (time-ordered), so an
-- update that leaves the key alone lets bottom-up deletion clear the entry it leaves behind. Units
-- without a source (reference datasets) are not in it.
CREATE INDEX sync_run_units_source_idx ON sync_run_units (integration_id, source_id, id)
  WHERE source_id IS NOT NULL;
