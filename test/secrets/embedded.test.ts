/**
 * The embedded mode (PGlite, no DATABASE_URL) without SYNCRELAY_SECRET_KEY: a key file, mode
 * 0600, is made in the data directory when the first credential is stored, and used from then on;
 * without it, a start with stored credentials stops naming SYNCRELAY_SECRET_KEY.
 */
import { mkdtempSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { loadSettings } from '../../src/config.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { loadUnitCredential } from '../../src/secrets/credentials.js';
import { keyFilePath } from '../../src/secrets/keyFile.js';

const SECRET = 'embedded_Credential_0d9f3b7e';
const dir = mkdtempSync(join(tmpdir(), 'syncrelay-embedded-keys-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function open(): Promise<Engine> {
  return Engine.open({ settings: loadSettings({ SYNCRELAY_DATA_DIR: dir }), logger: silentLogger() });
}

it('makes the key file on first use, decrypts with it after a restart, and refuses to start without it', async () => {
  const path = keyFilePath(dir);
  let engine = await open();
  let id: string;
  try {
    expect(engine.db.kind).toBe('pglite');
    await engine.createIntegration({
      orgId: 'o',
      provider: 'synthetic',
      name: 'n',
      sources: ['s'],
      datasets: ['teams'],
    });
    expect(() => statSync(path)).toThrow();
    id = (
      await engine.createIntegration({
        orgId: 'o',
        provider: 'synthetic',
        name: 'n',
        sources: ['s'],
        datasets: ['teams'],
        credential: SECRET,
      })
    ).id;
    expect(statSync(path).mode & 0o777).toBe(0o600);
  } finally {
    await engine.close();
  }

  engine = await open();
  try {
    const credential = await loadUnitCredential(engine.db, engine.ctx.secrets, id);
    expect(credential?.reveal()).toBe(SECRET);
  } finally {
    await engine.close();
  }

  unlinkSync(path);
  const err = await open().catch((e: unknown) => e);
  expect((err as { code?: string }).code).toBe('secret_key_missing');
  expect((err as Error).message).toContain('SYNCRELAY_SECRET_KEY');
}, 120_000);
