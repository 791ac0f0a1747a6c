/** AES-256-GCM sealing, key parsing, the key file and the keyring: no database. */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/config.js';
import { open, seal, type Sealed } from '../../src/secrets/cipher.js';
import { SecretError } from '../../src/secrets/errors.js';
import { SecretKey } from '../../src/secrets/key.js';
import { createKeyFile, keyFilePath, readKeyFile } from '../../src/secrets/keyFile.js';
import { Keyring } from '../../src/secrets/keyring.js';

const SECRET = 'ghp_CryptoTestSecret_4f1d9a2b7c';
const BINDING = { orgId: 'org-a', integrationId: '0b6c4c5e-7e43-4d0a-9c1e-4e1f1f6f2a10' };
const dirs: string[] = [];

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'syncrelay-keys-'));
  dirs.push(d);
  return d;
}

function flip(b: Buffer, at = 0): Buffer {
  const c = Buffer.from(b);
  c[at] = c[at]! ^ 0x01;
  return c;
}

/** The error `fn` throws, checked to be a SecretError that does not quote the secret. */
function secretErrorOf(fn: () => unknown): SecretError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(SecretError);
    const e = err as SecretError;
    expect(`${e.message} ${String(e.cause)}`).not.toContain(SECRET);
    return e;
  }
  throw new Error('expected a SecretError');
}

describe('seal / open', () => {
  const key = SecretKey.generate();

  it('round-trips, with a fresh 96-bit nonce each time and no plaintext in the ciphertext', () => {
    const a = seal(key, SECRET, BINDING);
    const b = seal(key, SECRET, BINDING);
    expect(a.nonce).toHaveLength(12);
    expect(a.tag).toHaveLength(16);
    expect(a.keyId).toBe(key.id);
    expect(a.nonce.equals(b.nonce)).toBe(false);
    expect(a.ciphertext.equals(b.ciphertext)).toBe(false);
    expect(a.ciphertext.toString('latin1')).not.toContain(SECRET);
    expect(open(key, a, BINDING)).toBe(SECRET);
    expect(open(key, seal(key, 'ü€😀', BINDING), BINDING)).toBe('ü€😀');
  });

  it('detects a changed ciphertext, tag or nonce with the stable code secret_decrypt_failed', () => {
    const s = seal(key, SECRET, BINDING);
    const variants: Sealed[] = [
      { ...s, ciphertext: flip(s.ciphertext, 3) },
      { ...s, tag: flip(s.tag, 15) },
      { ...s, nonce: flip(s.nonce, 0) },
      { ...s, ciphertext: s.ciphertext.subarray(1) },
    ];
    for (const v of variants) expect(secretErrorOf(() => open(key, v, BINDING)).code).toBe('secret_decrypt_failed');
    expect(secretErrorOf(() => open(key, { ...s, tag: s.tag.subarray(4) }, BINDING)).code).toBe(
      'secret_decrypt_failed',
    );
  });

  it('does not decrypt for another integration or org (the AAD binds it)', () => {
    const s = seal(key, SECRET, BINDING);
    const other = { ...BINDING, integrationId: '1b6c4c5e-7e43-4d0a-9c1e-4e1f1f6f2a10' };
    expect(secretErrorOf(() => open(key, s, other)).code).toBe('secret_decrypt_failed');
    expect(secretErrorOf(() => open(key, s, { ...BINDING, orgId: 'org-b' })).code).toBe('secret_decrypt_failed');
  });

  it('refuses the wrong key: by key id, and by authentication when the id is forged', () => {
    const s = seal(key, SECRET, BINDING);
    const other = SecretKey.generate();
    expect(secretErrorOf(() => open(other, s, BINDING)).code).toBe('secret_key_unknown');
    expect(secretErrorOf(() => open(other, { ...s, keyId: other.id }, BINDING)).code).toBe('secret_decrypt_failed');
  });
});

describe('SYNCRELAY_SECRET_KEY', () => {
  const good = Buffer.alloc(32, 7).toString('base64');

  it('is 32 bytes of base64; its id is the first 16 hex characters of its SHA-256', () => {
    const s = loadSettings({ SYNCRELAY_SECRET_KEY: good });
    expect(s.secretKey?.id).toMatch(/^[0-9a-f]{16}$/);
    expect(s.secretKey?.id).toBe(SecretKey.fromBase64(good, 'x').id);
    expect(loadSettings({}).secretKey).toBeUndefined();
  });

  it('refuses a wrong length or text that is not base64, naming the setting and never the value', () => {
    const bad = ['c2hvcnQ=', Buffer.alloc(33, 1).toString('base64'), 'not base64 at all!!', `${good}x`];
    for (const value of bad) {
      for (const name of ['SYNCRELAY_SECRET_KEY', 'SYNCRELAY_SECRET_KEY_PREVIOUS']) {
        let message = '';
        try {
          loadSettings({ [name]: value });
        } catch (err) {
          message = `${(err as Error).message} ${String((err as Error).cause)}`;
        }
        expect(message).toContain(name);
        expect(message).not.toContain(value);
      }
    }
  });

  it('shows its id only when logged, printed or serialised', () => {
    const key = SecretKey.fromBase64(good, 'x');
    const material = key.toBase64();
    const settings = loadSettings({ SYNCRELAY_SECRET_KEY: good, SYNCRELAY_SECRET_KEY_PREVIOUS: good });
    for (const text of [JSON.stringify(settings), inspect(settings, { depth: 5 }), String(key), `${key.id}`]) {
      expect(text).not.toContain(material);
      expect(text).not.toContain(key.material().toString('hex'));
    }
    expect(JSON.stringify(settings)).toContain(key.id);
    expect(JSON.stringify(new Keyring({ key }))).toBe(JSON.stringify({ keyIds: [key.id] }));
  });
});

describe('the embedded key file', () => {
  it('is created once with mode 0600 and read back', () => {
    const path = keyFilePath(join(tempDir(), 'data'));
    expect(readKeyFile(path)).toBeUndefined();
    const key = createKeyFile(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readKeyFile(path)?.id).toBe(key.id);
    expect(createKeyFile(path).id).toBe(key.id);
  });

  it('refuses a key file others can read, or one that is not a key', () => {
    const dir = tempDir();
    const loose = join(dir, 'loose.key');
    writeFileSync(loose, `${SecretKey.generate().toBase64()}\n`, { mode: 0o644 });
    expect(secretErrorOf(() => readKeyFile(loose)).message).toMatch(/0600/);
    const junk = join(dir, 'junk.key');
    writeFileSync(junk, 'junk\n', { mode: 0o600 });
    expect(secretErrorOf(() => readKeyFile(junk)).code).toBe('secret_key_invalid');
  });

  it('is made by the keyring on first use only, and used from then on', () => {
    const path = keyFilePath(tempDir());
    const ring = new Keyring({ keyFile: path });
    expect(ring.knownIds()).toEqual([]);
    const key = ring.encryptionKey();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8').trim()).toBe(key.toBase64());
    expect(new Keyring({ keyFile: path }).knownIds()).toEqual([key.id]);
  });
});

describe('Keyring', () => {
  it('without a key or key file refuses to encrypt, naming SYNCRELAY_SECRET_KEY', () => {
    const e = secretErrorOf(() => new Keyring({ keyFile: null }).encryptionKey());
    expect(e.code).toBe('secret_key_missing');
    expect(e.message).toContain('SYNCRELAY_SECRET_KEY');
  });

  it('finds the key a secret names among current and previous; names both settings when it cannot', () => {
    const key = SecretKey.generate();
    const previous = SecretKey.generate();
    const ring = new Keyring({ key, previous });
    expect(ring.keyFor(previous.id)).toBe(previous);
    expect(ring.keyFor(key.id)).toBe(key);
    const e = secretErrorOf(() => ring.keyFor('0123456789abcdef'));
    expect(e.code).toBe('secret_key_unknown');
    expect(e.message).toMatch(/SYNCRELAY_SECRET_KEY\b.*SYNCRELAY_SECRET_KEY_PREVIOUS/);
  });

  it('fingerprints a secret with a key: stable, distinct per secret and per key, not the secret', () => {
    const key = SecretKey.generate();
    const ring = new Keyring({ key });
    const fp = ring.fingerprint(SECRET);
    expect(fp).toBe(new Keyring({ key }).fingerprint(SECRET));
    expect(fp).not.toBe(ring.fingerprint(`${SECRET}x`));
    expect(fp).not.toBe(new Keyring({ key: SecretKey.generate() }).fingerprint(SECRET));
    expect(fp).not.toContain(SECRET);
    expect(fp).not.toContain(Buffer.from(SECRET).toString('hex'));
  });
});
