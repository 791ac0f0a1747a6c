-- syncrelay schema, version 8: an integration's credential, encrypted at rest.
--
-- One row per integration. The secret is AES-256-GCM ciphertext with its 96-bit nonce and 128-bit
-- tag; its additional authenticated data is (org, integration), so a row copied to another
-- integration does not decrypt. key_id names the key it was encrypted under (a prefix of the
-- key's SHA-256, not secret): `credentials rotate-key` re-encrypts the rows under another key and
-- a start-up check refuses a key that matches none of them. version counts replacements.
CREATE TABLE integration_credentials (
  id              uuid PRIMARY KEY DEFAULT syncrelay_uuid7(),
  org_id          text NOT NULL,
  integration_id  uuid NOT NULL UNIQUE REFERENCES integrations (id) ON DELETE CASCADE,
  version         integer NOT NULL DEFAULT 1 CHECK (version > 0),
  key_id          text NOT NULL CHECK (key_id ~ '^[0-9a-f]{16}$'),
  nonce           bytea NOT NULL CHECK (length(nonce) = 12),
  ciphertext      bytea NOT NULL,
  auth_tag        bytea NOT NULL CHECK (length(auth_tag) = 16),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX integration_credentials_key_idx ON integration_credentials (key_id);
