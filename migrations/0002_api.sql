-- syncrelay schema, version 2: HTTP API tokens and Idempotency-Key answers.

-- Bearer tokens scoped to one org. Only the SHA-256 of a token is stored; the token itself is
-- shown once, when it is created.
CREATE TABLE api_tokens (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id        text NOT NULL,
  name          text NOT NULL DEFAULT '',
  token_hash    text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  scopes        text[] NOT NULL CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['read', 'trigger', 'admin']),
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz,
  last_used_at  timestamptz
);
CREATE INDEX api_tokens_org_idx ON api_tokens (org_id, created_at);

-- The first answer to a request carrying an Idempotency-Key, replayed for the same key and body.
-- Written in the same transaction as the effect it records.
CREATE TABLE idempotency_keys (
  org_id        text NOT NULL,
  key           text NOT NULL,
  request_hash  text NOT NULL,
  status_code   integer NOT NULL,
  response      jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- The admin history surface lists job runs per org, newest first, filtered by status.
CREATE INDEX job_runs_org_status_idx ON job_runs (org_id, status, created_at DESC, id DESC);
