-- syncrelay schema: the ETags of a provider's conditional requests (docs/github.md, "Conditional polls").
--
-- One row per (integration, request): the entity tag the provider last answered `request_key` with
-- (a key the provider makes of the request's URL and what the unit writes from its answer), kept so
-- that the next poll sends it back in `If-None-Match` and an unchanged answer comes back as a 304.
-- Written only once the rows read after that answer are written; shared by every worker process.
-- Deleted with the integration (ON DELETE CASCADE).
CREATE TABLE provider_etags (
  integration_id  uuid        NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
  request_key     text        NOT NULL,
  etag            text        NOT NULL,
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (integration_id, request_key)
);
