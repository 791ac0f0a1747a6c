-- syncrelay schema, version 7: syncrelay lives in a schema of its own.
--
-- The migrator runs every migration with search_path pinned to the install's schema
-- (SYNCRELAY_SCHEMA, default syncrelay), so versions 1–6 created their tables there. An install of
-- the earlier layout made them in `public`: the migrator moved its ledger into the schema, and
-- this moves every other object the schema does not have yet — tables with their indexes,
-- constraints, owned sequences and rows, and the id function. Nothing is copied; a table of the
-- same name that an application keeps in `public` while the schema has its own is left alone.
DO $$
DECLARE
  target text := current_schema();
  t text;
BEGIN
  IF target = 'public' THEN
    RETURN;
  END IF;
  FOREACH t IN ARRAY ARRAY[
    'integrations', 'integration_sources', 'integration_datasets', 'sync_watermarks', 'sync_runs',
    'sync_run_units', 'sync_dispatch_outbox', 'sync_run_post_dispatches', 'post_sync_receipts',
    'scheduled_jobs', 'job_runs', 'reconciler_passes', 'api_tokens', 'idempotency_keys',
    'synthetic_executions', 'synthetic_items', 'synthetic_metrics_daily'
  ] LOOP
    IF to_regclass(format('public.%I', t)) IS NOT NULL AND to_regclass(format('%I.%I', target, t)) IS NULL THEN
      EXECUTE format('ALTER TABLE public.%I SET SCHEMA %I', t, target);
    END IF;
  END LOOP;
  IF to_regprocedure('public.syncrelay_uuid7()') IS NOT NULL
     AND to_regprocedure(format('%I.syncrelay_uuid7()', target)) IS NULL THEN
    EXECUTE format('ALTER FUNCTION public.syncrelay_uuid7() SET SCHEMA %I', target);
  END IF;
END
$$;
