-- syncrelay schema, version 6: a post_sync-only index for the ledger repair scan's probe.
--
-- Each reconciler pass checks a slice of the last day's post_sync ledger rows for a run whose
-- post_sync outbox row is gone. Probing the (sync_run_id, kind) unique index, three entries per
-- run, read leaf pages that were not in memory once history reached 1,000,000 rows; this index
-- holds one small entry per run.
CREATE INDEX sync_dispatch_outbox_post_sync_idx ON sync_dispatch_outbox (sync_run_id) WHERE kind = 'post_sync';
