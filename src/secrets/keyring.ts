/**
 * The keys this process knows: SYNCRELAY_SECRET_KEY (encrypts; decrypts what it encrypted),
 * SYNCRELAY_SECRET_KEY_PREVIOUS (decrypts only, during a key rotation) and, in the embedded mode
 * without SYNCRELAY_SECRET_KEY, a key file in the data directory made on first use.
 */
import { createHmac, hkdfSync } from 'node:crypto';
import { SecretError } from './errors.js';
import { SecretKey } from './key.js';
import { createKeyFile, readKeyFile } from './keyFile.js';

export const SECRET_KEY_SETTING = 'SYNCRELAY_SECRET_KEY';
export const PREVIOUS_KEY_SETTING = 'SYNCRELAY_SECRET_KEY_PREVIOUS';

export interface KeyringOptions {
  /** SYNCRELAY_SECRET_KEY. */
  key?: SecretKey;
  /** SYNCRELAY_SECRET_KEY_PREVIOUS: decrypts secrets not yet re-encrypted by `credentials rotate-key`. */
  previous?: SecretKey;
  /** The embedded mode's key file, used when `key` is unset; null outside the embedded mode. */
  keyFile?: string | null;
}

export class Keyring {
  private fileKey: SecretKey | undefined;
  private fileRead = false;

  constructor(private readonly opts: KeyringOptions = {}) {}

  /** The key new secrets are encrypted under; the embedded mode creates its key file now if needed. */
  encryptionKey(): SecretKey {
    if (this.opts.key) return this.opts.key;
    const path = this.opts.keyFile;
    if (!path) {
      throw new SecretError(
        'secret_key_missing',
        `credentials cannot be stored: ${SECRET_KEY_SETTING} is not set ` +
          '(32 random bytes in base64, e.g. `openssl rand -base64 32`)',
      );
    }
    this.fileKey ??= this.readFile() ?? createKeyFile(path);
    return this.fileKey;
  }

  /** The current key without creating one (undefined when there is none yet). */
  currentKey(): SecretKey | undefined {
    return this.opts.key ?? this.readFile();
  }

  /** The key a secret stored under `keyId` decrypts with; throws naming the settings when unknown. */
  keyFor(keyId: string): SecretKey {
    const found = this.knownKeys().find((k) => k.id === keyId);
    if (found) return found;
    throw new SecretError(
      'secret_key_unknown',
      `a stored credential was encrypted under key ${keyId}, which is ${this.notAmong()} ` +
        `(known: ${this.knownIds().join(', ') || 'none'})`,
    );
  }

  /** "not X", "neither X nor Y", or that no key is configured. */
  private notAmong(): string {
    const names = this.sources().map((s) => s.name);
    if (names.length === 0) return `not configured (${SECRET_KEY_SETTING} is not set)`;
    return names.length === 1 ? `not ${names.join('')}` : `neither ${names.join(' nor ')}`;
  }

  /**
   * Where each known key comes from, current first: SYNCRELAY_SECRET_KEY or the key file (by its
   * path), then SYNCRELAY_SECRET_KEY_PREVIOUS. Names and key ids only.
   */
  sources(): { name: string; id: string }[] {
    const out: { name: string; id: string }[] = [];
    if (this.opts.key) out.push({ name: SECRET_KEY_SETTING, id: this.opts.key.id });
    else {
      const file = this.readFile();
      if (file) out.push({ name: `the key file ${this.opts.keyFile ?? ''}`, id: file.id });
    }
    if (this.opts.previous) out.push({ name: PREVIOUS_KEY_SETTING, id: this.opts.previous.id });
    return out;
  }

  /** The embedded mode's key file path; null outside the embedded mode. */
  keyFilePath(): string | null {
    return this.opts.keyFile ?? null;
  }

  /** Whether the key file is not the current key (SYNCRELAY_SECRET_KEY is set): it may be retired. */
  keyFileSuperseded(): boolean {
    return Boolean(this.opts.keyFile && this.opts.key);
  }

  knownKeys(): SecretKey[] {
    const current = this.currentKey();
    return [current, this.opts.previous].filter((k): k is SecretKey => k !== undefined);
  }

  knownIds(): string[] {
    return this.knownKeys().map((k) => k.id);
  }

  /**
   * A keyed fingerprint of a secret (HMAC-SHA256 under a key derived from the encryption key):
   * what an Idempotency-Key record compares instead of the secret, useless without the key.
   */
  fingerprint(secret: string): string {
    const subkey = Buffer.from(
      hkdfSync('sha256', this.encryptionKey().material(), Buffer.alloc(0), 'syncrelay.fingerprint.v1', 32),
    );
    return `hmac-sha256:${createHmac('sha256', subkey).update(secret, 'utf8').digest('hex')}`;
  }

  /** Settings and ids only, never key material. */
  toJSON(): { keyIds: string[] } {
    return { keyIds: this.knownIds() };
  }

  private readFile(): SecretKey | undefined {
    if (!this.opts.keyFile) return undefined;
    if (!this.fileRead) {
      this.fileKey = readKeyFile(this.opts.keyFile);
      this.fileRead = true;
    }
    return this.fileKey;
  }
}
