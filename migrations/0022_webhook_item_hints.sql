-- syncrelay schema: work items a webhook delivery named, for a provider whose listing lags behind
-- its edits (Jira's search is eventually consistent: docs/jira.md, "Webhooks").
--
-- webhook_named_items: one row per (integration, source, item) named by a delivery since the item
-- was last read; received_at is the latest naming. An incremental unit of that source reads the
-- named items directly (not through the lagging listing) and deletes the rows named before its
-- attempt began; a later naming stays for the next run. The reconciler prunes rows older than
-- SYNC_WEBHOOK_DELIVERY_RETENTION_HOURS (a source no run reads any more).
CREATE TABLE webhook_named_items (
  integration_id  uuid NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
  source_id       uuid NOT NULL REFERENCES integration_sources (id) ON DELETE CASCADE,
  org_id          text NOT NULL,
  external_id     text NOT NULL CHECK (length(external_id) BETWEEN 1 AND 200),
  received_at     timestamptz NOT NULL,
  PRIMARY KEY (integration_id, source_id, external_id)
);
CREATE INDEX webhook_named_items_received_idx ON webhook_named_items (received_at);
