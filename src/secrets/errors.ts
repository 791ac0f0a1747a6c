/** Failures of secret handling. Messages name settings and key ids, never key material or secrets. */
import { SyncRelayError } from '../errors.js';

export type SecretErrorCode =
  /** No key to encrypt or decrypt with (SYNCRELAY_SECRET_KEY unset outside the embedded mode). */
  | 'secret_key_missing'
  /** A key setting or key file is not 32 bytes of base64, or the key file is readable by others. */
  | 'secret_key_invalid'
  /** A stored secret was encrypted under a key that is not configured. */
  | 'secret_key_unknown'
  /** Authentication failed: the ciphertext, its tag, its nonce or its binding (org, integration) changed. */
  | 'secret_decrypt_failed';

export class SecretError extends SyncRelayError {
  declare readonly code: SecretErrorCode;
  constructor(code: SecretErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
