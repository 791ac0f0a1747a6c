-- syncrelay schema: a unit may fetch a family of datasets together.
--
-- carried_datasets: the datasets a unit fetches besides dataset_key (a provider that reads a
-- dataset family in one query plans one unit per source × window for the family). Empty for a
-- unit of one dataset. A constant default: no table rewrite.
ALTER TABLE sync_run_units ADD COLUMN carried_datasets text[] NOT NULL DEFAULT '{}';
