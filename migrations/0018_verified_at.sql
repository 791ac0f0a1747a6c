-- syncrelay schema: what a verify has seen (docs/normalized-store.md, "Deletions").
--
-- verified_at: when a verify last found the object in its provider's listing. A verify stamps each
-- listed object as it pages through the listing (so a verify deferred by a rate limit resumes
-- without listing again what it saw), and once the listing is complete, the live objects of the
-- source neither stamped nor written since the verify began are the ones it confirms gone and
-- marks deleted. Nullable, no default: no table rewrite.
ALTER TABLE work_items ADD COLUMN verified_at timestamptz;
ALTER TABLE work_item_comments ADD COLUMN verified_at timestamptz;
ALTER TABLE pull_requests ADD COLUMN verified_at timestamptz;
ALTER TABLE pull_request_reviews ADD COLUMN verified_at timestamptz;
ALTER TABLE members ADD COLUMN verified_at timestamptz;
ALTER TABLE sprints ADD COLUMN verified_at timestamptz;
