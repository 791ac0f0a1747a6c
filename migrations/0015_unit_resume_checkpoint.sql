-- syncrelay schema: a unit deferred for a rate limit resumes where it stopped.
--
-- resume_checkpoint: the small JSON object (at most 4 KiB, bounded by the engine) a unit handed
-- its rate-limit deferral: where its read stopped (e.g. the cursor after its last written page)
-- and what it had counted. The deferral's CAS by the lease holder writes it (NULL when the unit
-- handed none); the next attempt reads it from its claimed row. An expired lease or a soft timeout
-- keeps it; every terminal end clears it. Never a secret. Nullable, no default: no table rewrite.
ALTER TABLE sync_run_units ADD COLUMN resume_checkpoint jsonb;
