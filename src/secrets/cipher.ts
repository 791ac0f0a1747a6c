/**
 * AES-256-GCM for stored secrets: a random 96-bit nonce per encryption, a 128-bit tag, and
 * additional authenticated data binding the ciphertext to (org, integration), so a row copied to
 * another integration does not decrypt.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { SecretError } from './errors.js';
import type { SecretKey } from './key.js';

const ALGORITHM = 'aes-256-gcm';
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;

/** What a secret is bound to: decrypting it for another org or integration fails. */
export interface SecretBinding {
  orgId: string;
  integrationId: string;
}

export interface Sealed {
  keyId: string;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

/** NUL never occurs in an org id or a UUID, so the fields cannot run into each other. */
export function bindingAad(b: SecretBinding): Buffer {
  return Buffer.from(`syncrelay.credential.v1\u0000${b.orgId}\u0000${b.integrationId}`, 'utf8');
}

export function seal(key: SecretKey, plaintext: string, binding: SecretBinding): Sealed {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv(ALGORITHM, key.material(), nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(bindingAad(binding));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { keyId: key.id, nonce, ciphertext, tag: cipher.getAuthTag() };
}

/** Decrypts and authenticates; any change to the ciphertext, tag, nonce or binding throws. */
export function open(key: SecretKey, sealed: Sealed, binding: SecretBinding): string {
  if (sealed.keyId !== key.id) {
    throw new SecretError('secret_key_unknown', `the secret was encrypted under key ${sealed.keyId}, not ${key.id}`);
  }
  if (sealed.nonce.length !== NONCE_BYTES || sealed.tag.length !== TAG_BYTES) {
    throw new SecretError('secret_decrypt_failed', 'the stored secret is malformed (nonce or tag length)');
  }
  try {
    const decipher = createDecipheriv(ALGORITHM, key.material(), sealed.nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(bindingAad(binding));
    decipher.setAuthTag(sealed.tag);
    return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8');
  } catch (cause) {
    throw new SecretError(
      'secret_decrypt_failed',
      `the stored secret of integration ${binding.integrationId} failed authentication ` +
        '(changed, or bound to another integration)',
      { cause },
    );
  }
}
