/**
 * The CLI's credential sources (an environment variable, a file, stdin — never the command line),
 * set-credential / clear-credential and `credentials rotate-key`.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revealCredential } from '../../src/secrets/credentials.js';
import { SecretKey } from '../../src/secrets/key.js';
import { Keyring } from '../../src/secrets/keyring.js';
import { getCredential } from '../../src/store/credentials.js';
import { insertIntegration } from '../../src/store/integrations.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { parseJson, removeDir, runCli as run, tempDir, type CliOptions, type CliResult } from './helpers.js';

const SECRET = 'ghp_CliCredential_77c2d0aa13';

/** A shared machine starts `node + tsx` slowly: a generous limit per command. */
function runCli(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  return run(args, { timeoutMs: 120_000, ...opts });
}
const KEY = SecretKey.generate();
let t: TestDatabase;
let dir: string;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
  dir = await tempDir('cred');
});
afterAll(async () => {
  await t?.drop();
  await removeDir(dir);
});

function env(extra: Record<string, string> = {}): Record<string, string> {
  return { DATABASE_URL: t.url, SYNCRELAY_SECRET_KEY: KEY.toBase64(), ...extra };
}

const CREATE = ['integrations', 'create', '--org', 'acme', '--provider', 'synthetic', '--name', 'gh'];
const CREATE_TAIL = ['--sources', 's1', '--datasets', 'teams', '--json'];

async function count(): Promise<number> {
  const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.db.schema.integrations}`);
  return rows[0]!.n;
}

async function stored(id: string, ring = new Keyring({ key: KEY })): Promise<string | null> {
  const row = await getCredential(t.db, id);
  return row ? revealCredential(ring, row) : null;
}

function expectNoSecret(r: CliResult, secret = SECRET): void {
  expect(r.stdout).not.toContain(secret);
  expect(r.stderr).not.toContain(secret);
}

describe('integrations create with a credential', () => {
  it('reads it from --credential-env, --credential-file (trailing newline dropped) or --credential-stdin', async () => {
    const file = join(dir, 'token.txt');
    await writeFile(file, `${SECRET}-file\n`, { mode: 0o600 });
    const sources: [string[], Record<string, string>, string | undefined, string][] = [
      [['--credential-env', 'GITHUB_TOKEN'], { GITHUB_TOKEN: `${SECRET}-env` }, undefined, `${SECRET}-env`],
      [['--credential-file', file], {}, undefined, `${SECRET}-file`],
      [['--credential-stdin'], {}, `${SECRET}-stdin\r\n`, `${SECRET}-stdin`],
    ];
    for (const [flags, extra, input, expected] of sources) {
      const r = await runCli([...CREATE, ...flags, ...CREATE_TAIL], { env: env(extra), input });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expectNoSecret(r);
      const created = parseJson<{ id: string }>(r.stdout);
      expect(await stored(created.id)).toBe(expected);
    }
  }, 480_000);

  it('refuses an unset variable, two sources, a bad value or a missing key, writing nothing', async () => {
    const before = await count();
    const unset = await runCli([...CREATE, '--credential-env', 'NO_SUCH_TOKEN', ...CREATE_TAIL], { env: env() });
    expect(unset.code).toBe(1);
    expect(unset.stderr).toMatch(/environment variable NO_SUCH_TOKEN is not set/);

    const two = await runCli([...CREATE, '--credential-env', 'T', '--credential-stdin', ...CREATE_TAIL], {
      env: env({ T: SECRET }),
      input: SECRET,
    });
    expect(two.code).toBe(1);
    expect(two.stderr).toMatch(/one of --credential-env, --credential-file, --credential-stdin/);
    expectNoSecret(two);

    const control = await runCli([...CREATE, '--credential-env', 'T', ...CREATE_TAIL], {
      env: env({ T: `${SECRET}\u0007` }),
    });
    expect(control.code).toBe(1);
    expect(control.stderr).toMatch(/credential: must not contain control characters/);
    expectNoSecret(control);

    const noKey = await runCli([...CREATE, '--credential-env', 'T', ...CREATE_TAIL], {
      env: { DATABASE_URL: t.url, T: SECRET },
    });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/SYNCRELAY_SECRET_KEY/);
    expectNoSecret(noKey);

    expect(await count()).toBe(before);
  }, 480_000);

  it('has no flag that takes the credential itself on the command line', async () => {
    const r = await runCli([...CREATE, '--credential', SECRET, ...CREATE_TAIL], { env: env() });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/unknown option '--credential'/);
    const help = await runCli(['integrations', 'create', '--help'], { env: env() });
    expect(help.stdout).toMatch(/--credential-env <NAME>/);
    expect(help.stdout).not.toMatch(/--credential </);
  }, 120_000);
});

describe('set-credential, clear-credential and rotate-key', () => {
  it('replaces, removes, and re-encrypts under a new key with the old one as previous', async () => {
    const { id } = await insertIntegration(
      t.db,
      { orgId: 'acme', provider: 'synthetic', name: 'gh', config: {} },
      new Date(),
    );
    const set = await runCli(['integrations', 'set-credential', id, '--credential-stdin'], {
      env: env(),
      input: `${SECRET}-set\n`,
    });
    expect(set.code).toBe(0);
    expectNoSecret(set);
    expect(await stored(id)).toBe(`${SECRET}-set`);
    const none = await runCli(['integrations', 'set-credential', id], { env: env() });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/--credential-env, --credential-file or --credential-stdin/);

    const newKey = SecretKey.generate();
    const rotateEnv = { SYNCRELAY_SECRET_KEY: newKey.toBase64(), SYNCRELAY_SECRET_KEY_PREVIOUS: KEY.toBase64() };
    const wrong = await runCli(['credentials', 'rotate-key'], {
      env: env({ SYNCRELAY_SECRET_KEY: newKey.toBase64() }),
    });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/SYNCRELAY_SECRET_KEY/);
    expect(wrong.stderr).not.toContain(newKey.toBase64());
    const rotated = await runCli(['credentials', 'rotate-key', '--json'], { env: env(rotateEnv) });
    expect(rotated.code).toBe(0);
    const result = parseJson<{ keyId: string; reencrypted: number }>(rotated.stdout);
    expect(result.keyId).toBe(newKey.id);
    expect(result.reencrypted).toBeGreaterThanOrEqual(1);
    expectNoSecret(rotated, KEY.toBase64());
    expectNoSecret(rotated, newKey.toBase64());
    expect(await stored(id, new Keyring({ key: newKey }))).toBe(`${SECRET}-set`);
    const again = await runCli(['credentials', 'rotate-key'], { env: env(rotateEnv) });
    expect(again.stdout).toMatch(/re-encrypted 0 credential/);

    const cleared = await runCli(['integrations', 'clear-credential', id], { env: env(rotateEnv) });
    expect(cleared.code).toBe(0);
    expect(await getCredential(t.db, id)).toBeNull();
  }, 480_000);
});
