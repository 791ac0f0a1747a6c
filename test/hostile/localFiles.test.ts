/**
 * Local files and local emulators against another user of the same machine: the embedded data
 * directory is the owner's only whatever the umask; rotating away from the embedded key file
 * leaves no copy of the old key behind, and a start with the wrong key names where that key came
 * from; emulators make fresh tokens at every start and warn when they listen beyond loopback.
 */
import { type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockEmbeddedDb } from '../../src/cli/session.js';
import { loadSettings } from '../../src/config.js';
import { ensurePrivateDataDir } from '../../src/db/dataDir.js';
import { openDb } from '../../src/db/open.js';
import { exposureWarning, isLoopbackAddress } from '../../src/emulators/core/credentials.js';
import { startGithubEmulator } from '../../src/emulators/github/index.js';
import { startJiraEmulator } from '../../src/emulators/jira/index.js';
import { startLinearEmulator } from '../../src/emulators/linear/index.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { loadUnitCredential } from '../../src/secrets/credentials.js';
import { SecretKey } from '../../src/secrets/key.js';
import { createKeyFile, keyFilePath } from '../../src/secrets/keyFile.js';
import { parseJson, removeDir, runCli, startCli, tempDir, until, type CliResult } from '../cli/helpers.js';

const SECRET = 'ghp_LocalFilesCredential_3e5a9c1d';
let dir: string;

beforeAll(async () => {
  dir = await tempDir('local-files');
});
afterAll(async () => {
  await removeDir(dir);
});

function modeOf(path: string): number {
  return statSync(path).mode & 0o777;
}

/** Runs `fn` with the process umask at 000, restoring it after. */
async function underOpenUmask<T>(fn: () => Promise<T> | T): Promise<T> {
  const saved = process.umask(0);
  try {
    return await fn();
  } finally {
    process.umask(saved);
  }
}

describe('the embedded data directory', () => {
  it('is created 0700 under umask 000, by the database, the CLI lock and the key file alike', async () => {
    const byDb = join(dir, 'umask', 'db', 'data');
    const byLock = join(dir, 'umask', 'lock', 'data');
    const byKey = join(dir, 'umask', 'key', 'data');
    await underOpenUmask(async () => {
      const db = await openDb({ databaseUrl: undefined, dataDir: byDb, schema: 'syncrelay' });
      await db.close();
      lockEmbeddedDb(byLock)();
      createKeyFile(keyFilePath(byKey));
    });
    expect(modeOf(byDb)).toBe(0o700);
    expect(modeOf(byLock)).toBe(0o700);
    expect(modeOf(byKey)).toBe(0o700);
    expect(modeOf(keyFilePath(byKey))).toBe(0o600);
  }, 120_000);

  it('tightens an open directory that is syncrelay’s own, and refuses one holding other files', () => {
    const ours = join(dir, 'open-ours');
    mkdirSync(ours);
    writeFileSync(join(ours, 'PG_VERSION'), '17\n');
    chmodSync(ours, 0o755);
    expect(ensurePrivateDataDir(ours)).toBe('tightened');
    expect(modeOf(ours)).toBe(0o700);

    const foreign = join(dir, 'open-foreign');
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'notes.txt'), 'mine\n');
    chmodSync(foreign, 0o777);
    expect(() => ensurePrivateDataDir(foreign)).toThrow(/SYNCRELAY_DATA_DIR: .*open-foreign is open to other users/);
    expect(modeOf(foreign)).toBe(0o777);
  });
});

describe('credentials rotate-key away from the embedded key file', () => {
  const data = () => join(dir, 'rotate', 'data');
  const cli = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
    runCli(args, { env: { SYNCRELAY_DATA_DIR: data(), ...env }, cwd: dir, timeoutMs: 120_000 });

  it('removes the old key file once every credential is re-encrypted; starts name the right key source', async () => {
    const created = await cli(
      [
        ...['integrations', 'create', '--org', 'acme', '--provider', 'synthetic', '--name', 'gh'],
        ...['--sources', 's1', '--datasets', 'teams', '--credential-env', 'T', '--json'],
      ],
      { T: SECRET },
    );
    expect(created.code, created.stderr).toBe(0);
    const { id } = parseJson<{ id: string }>(created.stdout);
    const file = keyFilePath(data());
    expect(modeOf(file)).toBe(0o600);
    const oldText = readFileSync(file, 'utf8').trim();
    const old = SecretKey.fromBase64(oldText, 'the key file');
    const next = SecretKey.generate();

    const rotated = await cli(['credentials', 'rotate-key', '--json'], {
      SYNCRELAY_SECRET_KEY: next.toBase64(),
      SYNCRELAY_SECRET_KEY_PREVIOUS: oldText,
    });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(parseJson(rotated.stdout)).toEqual({
      keyId: next.id,
      reencrypted: 1,
      reencryptedWebhookSecrets: 0,
      retiredKeyFile: file,
    });
    for (const text of [oldText, next.toBase64()]) expect(rotated.stdout + rotated.stderr).not.toContain(text);
    // No copy of the old key is left anywhere under the data directory.
    expect(existsSync(file)).toBe(false);
    expect(filesHolding(data(), oldText)).toEqual([]);

    // The new key starts, and the credential decrypts under it.
    const withNew = await cli(['integrations', 'list', '--org', 'acme', '--json'], {
      SYNCRELAY_SECRET_KEY: next.toBase64(),
    });
    expect(withNew.code, withNew.stderr).toBe(0);
    const engine = await Engine.open({
      settings: loadSettings({ SYNCRELAY_DATA_DIR: data(), SYNCRELAY_SECRET_KEY: next.toBase64() }),
      logger: silentLogger(),
    });
    try {
      expect((await loadUnitCredential(engine.db, engine.ctx.secrets, id))?.reveal()).toBe(SECRET);
    } finally {
      await engine.close();
    }

    // Without SYNCRELAY_SECRET_KEY: refused naming it, never falling back to the old key.
    const noKey = await cli(['integrations', 'list', '--org', 'acme']);
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toContain(`but SYNCRELAY_SECRET_KEY is not set (and there is no key file ${file})`);
    expect(noKey.stderr).not.toContain(old.id);
    expect(existsSync(file)).toBe(false);

    // A wrong key and a wrong previous one: both settings named with their key ids.
    const [k1, k2] = [SecretKey.generate(), SecretKey.generate()];
    const wrong = await cli(['integrations', 'list', '--org', 'acme'], {
      SYNCRELAY_SECRET_KEY: k1.toBase64(),
      SYNCRELAY_SECRET_KEY_PREVIOUS: k2.toBase64(),
    });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(
      `SYNCRELAY_SECRET_KEY (key ${k1.id}) and SYNCRELAY_SECRET_KEY_PREVIOUS (key ${k2.id}) match none ` +
        `of the stored credentials (under key ${next.id})`,
    );

    // A stale key file put back (a restored copy): named by its path, not as SYNCRELAY_SECRET_KEY.
    writeFileSync(file, `${oldText}\n`, { mode: 0o600 });
    const stale = await cli(['integrations', 'list', '--org', 'acme']);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(`the key file ${file} (key ${old.id}) matches none of the stored credentials`);
    expect(stale.stderr).not.toMatch(/SYNCRELAY_SECRET_KEY \(key/);
    expect(stale.stderr).not.toContain(oldText);
  }, 600_000);
});

/** Every file under `root` (recursively) whose bytes contain `text`. */
function filesHolding(root: string, text: string): string[] {
  const needle = Buffer.from(text);
  const out: string[] = [];
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    if (readFileSync(path).includes(needle)) out.push(path);
  }
  return out;
}

/** `syncrelay emulate github` until it printed its `demo` token; returns its URL, token and stderr. */
async function emulateGithub(
  host: string,
): Promise<{ child: ChildProcess; url: string; token: string; stderr: () => string; exited: Promise<CliResult> }> {
  const run = startCli(['emulate', 'github', '--port', '0', '--host', host, '--seed', '3'], { timeoutMs: 90_000 });
  let stdout = '';
  run.child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  await until(() => /token demo .*: (\S+)\n/.test(stdout), 60_000, 'the emulator’s token');
  const port = /GitHub emulator: http:\/\/[^:]+:(\d+)/.exec(stdout)![1]!;
  const token = /token demo .*: (\S+)\n/.exec(stdout)![1]!;
  return { child: run.child, url: `http://127.0.0.1:${port}`, token, stderr: run.stderr, exited: run.exited };
}

async function stop(run: { child: ChildProcess; exited: Promise<CliResult> }): Promise<CliResult> {
  run.child.kill('SIGTERM');
  return run.exited;
}

const REPOS = '/orgs/emulated-org/repos';
const authorized = (url: string, token: string) =>
  fetch(`${url}${REPOS}`, { headers: { authorization: `token ${token}` } });

describe('emulator tokens', () => {
  it('`emulate github`: each start prints a fresh working token; the earlier one gets 401; 0.0.0.0 warns', async () => {
    const first = await emulateGithub('127.0.0.1');
    let firstToken: string;
    try {
      firstToken = first.token;
      expect((await authorized(first.url, firstToken)).status).toBe(200);
      expect(first.stderr()).not.toMatch(/WARNING/);
    } finally {
      expect((await stop(first)).code).toBe(0);
    }
    // Bound to every address; the test's traffic still goes to 127.0.0.1 only.
    const second = await emulateGithub('0.0.0.0');
    try {
      expect(second.token).not.toBe(firstToken);
      expect((await authorized(second.url, second.token)).status).toBe(200);
      expect((await authorized(second.url, firstToken)).status).toBe(401);
      const warnings = second
        .stderr()
        .split('\n')
        .filter((l) => l.startsWith('WARNING'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/GitHub emulator listens on 0\.0\.0\.0 port \d+, not a loopback address/);
      // Printed for the person at the terminal, never in the log lines.
      expect(second.stderr()).not.toContain(second.token);
    } finally {
      expect((await stop(second)).code).toBe(0);
    }
  }, 180_000);

  it('Linear and Jira: each start makes new credentials, the earlier ones get 401; a given one is used', async () => {
    const linear = [await startLinearEmulator({ seed: 7 }), await startLinearEmulator({ seed: 7 })] as const;
    try {
      const [a, b] = linear;
      expect(b.token).not.toBe(a.token);
      expect(b.oauthToken).not.toBe(a.oauthToken);
      const viewer = (key: string) =>
        fetch(b.url, {
          method: 'POST',
          headers: { authorization: key, 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ viewer { id } }' }),
        });
      expect((await viewer(b.token)).status).toBe(200);
      expect((await viewer(a.token)).status).toBe(401);
      expect((await viewer(`Bearer ${a.oauthToken}`)).status).toBe(401);
    } finally {
      await Promise.all(linear.map((e) => e.close()));
    }

    const jira = [await startJiraEmulator({ seed: 7 }), await startJiraEmulator({ seed: 7, apiToken: 'given-token' })];
    try {
      const [a, b] = jira as [(typeof jira)[0], (typeof jira)[0]];
      expect(b.apiToken).toBe('given-token');
      const myself = (credential: string) =>
        fetch(`${b.url}/rest/api/3/myself`, {
          headers: { authorization: `Basic ${Buffer.from(credential).toString('base64')}` },
        });
      expect((await myself(b.token)).status).toBe(200);
      expect((await myself(a.token)).status).toBe(401);
    } finally {
      await Promise.all(jira.map((e) => e.close()));
    }
  });

  it('warns once when bound beyond loopback, through the caller’s `warn`; not on loopback', async () => {
    const lines: string[] = [];
    const open = await startGithubEmulator({ host: '0.0.0.0', scale: { repos: 1 }, warn: (l) => lines.push(l) });
    try {
      const port = new URL(open.url).port;
      expect((await authorized(`http://127.0.0.1:${port}`, open.token)).status).toBe(200);
    } finally {
      await open.close();
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^WARNING: the GitHub emulator listens on 0\.0\.0\.0 port \d+, not a loopback address/);
    expect(lines[0]).not.toContain(open.token);

    const local = await startGithubEmulator({ scale: { repos: 1 }, warn: (l) => lines.push(l) });
    await local.close();
    expect(lines).toHaveLength(1);

    for (const a of ['127.0.0.1', '127.3.2.1', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost']) {
      expect([a, isLoopbackAddress(a)]).toEqual([a, true]);
      expect(exposureWarning('Jira', a, 1)).toBeNull();
    }
    for (const a of ['0.0.0.0', '::', '192.168.1.20', '10.0.0.1', '::ffff:10.0.0.1', 'fe80::1', 'build-host', '']) {
      expect([a, isLoopbackAddress(a)]).toEqual([a, false]);
      expect(exposureWarning('Jira', a, 1)).toMatch(/^WARNING: the Jira emulator listens on/);
    }
  });
});
