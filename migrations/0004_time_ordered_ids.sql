-- syncrelay schema, version 4: time-ordered ids for the hot tables.
--
-- Random (v4) UUIDs spread the rows that are live right now over every page of every index keyed
-- by id or run id, so as history grows the claim, the marks and the unit CAS touch more and more
-- pages that are not in memory. A version-7 UUID starts with the creation time in milliseconds:
-- new rows, and the live work with them, sit together at the right edge of those indexes, and
-- their cost stays flat however much history lies to the left. Existing ids are unchanged.

CREATE FUNCTION syncrelay_uuid7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  -- a random v4 UUID, its first 48 bits replaced by the Unix time in ms, version bits set to 7
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
              FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;

ALTER TABLE sync_runs ALTER COLUMN id SET DEFAULT syncrelay_uuid7();
ALTER TABLE sync_run_units ALTER COLUMN id SET DEFAULT syncrelay_uuid7();
ALTER TABLE sync_dispatch_outbox ALTER COLUMN id SET DEFAULT syncrelay_uuid7();
ALTER TABLE sync_run_post_dispatches ALTER COLUMN id SET DEFAULT syncrelay_uuid7();
ALTER TABLE job_runs ALTER COLUMN id SET DEFAULT syncrelay_uuid7();
