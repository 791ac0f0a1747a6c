-- syncrelay schema: tombstones in the normalized store (docs/normalized-store.md, "Deletions").
--
-- deleted_at: when a verify found the object gone at its provider (a direct read answering 404 or
-- 410, or its absence from a complete listing); NULL while it exists. Set only by the tombstone
-- store (src/sinks/normalized/tombstones.ts); any write of the object clears it again (it came
-- back). archived_at: when Linear archived the work item, as the provider reports it — an archive
-- is not a delete. Never a hard delete: a deleted row and its children stay until the
-- integration's data is purged (`purge_data`). Nullable, no default: no table rewrite.
ALTER TABLE work_items ADD COLUMN deleted_at timestamptz, ADD COLUMN archived_at timestamptz;
ALTER TABLE work_item_comments ADD COLUMN deleted_at timestamptz;
ALTER TABLE pull_requests ADD COLUMN deleted_at timestamptz;
ALTER TABLE pull_request_reviews ADD COLUMN deleted_at timestamptz;
ALTER TABLE members ADD COLUMN deleted_at timestamptz;
ALTER TABLE sprints ADD COLUMN deleted_at timestamptz;

-- A verify's page through what the store holds for one source (container = owner/repo, project or
-- team key), in external id order: without these, each page of one source would walk the rows of
-- every other source of the integration. Comments and reviews are found through their parent.
CREATE INDEX work_items_source_idx ON work_items (org_id, integration_id, provider, container, external_id);
CREATE INDEX pull_requests_source_idx ON pull_requests (org_id, integration_id, provider, container, external_id);
