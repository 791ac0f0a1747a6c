/**
 * The embedded mode's generated key: `<dataDir>/secret.key`, 32 random bytes in base64, mode 0600
 * in a 0700 data directory, written once (exclusive create) on first use and read on every start
 * after — until a key rotation moves every credential under SYNCRELAY_SECRET_KEY, which removes it.
 */
import { chmodSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ensurePrivateDataDir } from '../db/dataDir.js';
import { SecretError } from './errors.js';
import { SecretKey } from './key.js';

export const KEY_FILE_NAME = 'secret.key';

export function keyFilePath(dataDir: string): string {
  return join(resolve(dataDir), KEY_FILE_NAME);
}

/** The key in `path`, or undefined when there is no such file. Refuses a file others may read. */
export function readKeyFile(path: string): SecretKey | undefined {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SecretError('secret_key_invalid', `the key file ${path} cannot be read`, { cause: err });
  }
  if ((mode & 0o077) !== 0) {
    throw new SecretError(
      'secret_key_invalid',
      `the key file ${path} must be readable by its owner only (mode 0600), ` +
        `is ${(mode & 0o777).toString(8).padStart(4, '0')}`,
    );
  }
  return SecretKey.fromBase64(readFileSync(path, 'utf8'), `the key file ${path}`);
}

/** Creates the key file with a new key (mode 0600); if another process made it first, reads that one. */
export function createKeyFile(path: string): SecretKey {
  ensurePrivateDataDir(dirname(path));
  const key = SecretKey.generate();
  try {
    writeFileSync(path, `${key.toBase64()}\n`, { flag: 'wx', mode: 0o600 });
    chmodSync(path, 0o600);
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new SecretError('secret_key_invalid', `the key file ${path} cannot be written`, { cause: err });
    }
    const existing = readKeyFile(path);
    if (!existing) throw new SecretError('secret_key_invalid', `the key file ${path} vanished while being created`);
    return existing;
  }
}

/**
 * Removes the key file in `path` unless it holds the key `keepId` (or is not a key at all): called
 * once no stored credential is under the file's key any more. Removed, not renamed: a copy left
 * next to the database would still decrypt the old ciphertexts PostgreSQL keeps in its files
 * until they are vacuumed. Returns whether the file was removed.
 */
export function retireKeyFile(path: string, keepId: string): boolean {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new SecretError('secret_key_invalid', `the key file ${path} cannot be read`, { cause: err });
  }
  let id: string;
  try {
    id = SecretKey.fromBase64(text, `the key file ${path}`).id;
  } catch {
    return false;
  }
  if (id === keepId) return false;
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new SecretError('secret_key_invalid', `the retired key file ${path} cannot be removed`, { cause: err });
  }
  return true;
}
