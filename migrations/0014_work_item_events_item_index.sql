-- syncrelay schema: a work item's events, found from the item. Writing GitHub issues or their
-- label events looks up each item's first in-progress label event (work_items.started_at); without
-- this index every such write would read the integration's whole event history.
CREATE INDEX work_item_events_item_idx
  ON work_item_events (org_id, integration_id, provider, work_item_external_id, occurred_at);
