/**
 * An AES-256 key (32 bytes) and its key id. The material sits in a private field: a key that is
 * logged, printed or serialised shows its id only.
 */
import { createHash, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { SecretError } from './errors.js';

export const KEY_BYTES = 32;
const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export class SecretKey {
  readonly #material: Buffer;
  /** First 16 hex characters of the key's SHA-256: stored with each secret, not secret itself. */
  readonly id: string;

  private constructor(material: Buffer) {
    this.#material = material;
    this.id = createHash('sha256').update(material).digest('hex').slice(0, 16);
  }

  /** Parses 32 bytes of standard base64; anything else throws naming `setting` (never the value). */
  static fromBase64(text: string, setting: string): SecretKey {
    const trimmed = text.trim();
    if (!BASE64_RE.test(trimmed)) {
      throw new SecretError('secret_key_invalid', `${setting}: must be ${KEY_BYTES} bytes in base64 (not base64)`);
    }
    const bytes = Buffer.from(trimmed, 'base64');
    if (bytes.length !== KEY_BYTES) {
      throw new SecretError(
        'secret_key_invalid',
        `${setting}: must be ${KEY_BYTES} bytes in base64, got ${bytes.length} bytes`,
      );
    }
    return new SecretKey(bytes);
  }

  /** A new random key. */
  static generate(): SecretKey {
    return new SecretKey(randomBytes(KEY_BYTES));
  }

  /** The raw key, for the cipher only. */
  material(): Buffer {
    return this.#material;
  }

  /** The key as base64, for writing a key file. */
  toBase64(): string {
    return this.#material.toString('base64');
  }

  toJSON(): { keyId: string } {
    return { keyId: this.id };
  }

  toString(): string {
    return `SecretKey(${this.id})`;
  }

  [inspect.custom](): string {
    return this.toString();
  }
}
