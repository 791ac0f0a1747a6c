/**
 * The embedded mode's generated key: `<dataDir>/secret.key`, 32 random bytes in base64, mode 0600,
 * written once (exclusive create) on first use and read on every start after.
 */
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
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
  mkdirSync(dirname(path), { recursive: true });
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
