/** `syncrelay emulate github --app`: prints the App and installation ids, writes the key to a 0600 file only. */
import { spawn } from 'node:child_process';
import { sign } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanEnv, removeDir, runCli, tempDir } from '../../cli/helpers.js';

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const TSX = join(ROOT, 'node_modules/tsx/dist/loader.mjs');
const MAIN = join(ROOT, 'src/cli/main.ts');

let dir: string | undefined;
afterEach(async () => {
  await removeDir(dir);
  dir = undefined;
});

function appJwt(pem: string, appId: number): string {
  const now = Math.floor(Date.now() / 1000);
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const input = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64({ iat: now - 60, exp: now + 540, iss: appId })}`;
  return `${input}.${sign('sha256', Buffer.from(input), pem).toString('base64url')}`;
}

describe('syncrelay emulate github --app', () => {
  it('prints the ids, writes the key to --app-key-file (0600) only; --token-ttl sets expires_at', async () => {
    dir = await tempDir('gh-app');
    const keyFile = join(dir, 'app.pem');
    const child = spawn(
      process.execPath,
      [
        '--import',
        TSX,
        MAIN,
        'emulate',
        'github',
        '--port',
        '0',
        '--app',
        '--app-key-file',
        keyFile,
        '--token-ttl',
        '120',
      ],
      { env: cleanEnv(), cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    try {
      const deadline = Date.now() + 40_000;
      while (!/installation id: \d+/.test(stdout) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const url = /GitHub emulator: (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1];
      const ids = /GitHub App id: (\d+) {2}· {2}installation id: (\d+)/.exec(stdout);
      expect(url).toBeDefined();
      expect(ids).not.toBeNull();
      const pem = readFileSync(keyFile, 'utf8');
      expect(pem).toMatch(/^-----BEGIN RSA PRIVATE KEY-----\n/);
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      const res = await fetch(`${url!}/app/installations/${ids![2]!}/access_tokens`, {
        method: 'POST',
        headers: { authorization: `Bearer ${appJwt(pem, Number(ids![1]))}` },
      });
      expect(res.status).toBe(201);
      const body = (await res.json()) as { token: string; expires_at: string };
      expect(body.token).toMatch(/^ghs_/);
      expect(Math.abs(Date.parse(body.expires_at) - Date.now() - 120_000)).toBeLessThan(10_000);
      const repos = await fetch(`${url!}/orgs/emulated-org/repos`, {
        headers: { authorization: `token ${body.token}` },
      });
      expect(repos.status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const body64 = pem.split('\n')[1]!;
      expect(stdout + stderr).not.toContain('PRIVATE KEY');
      expect(stdout + stderr).not.toContain(body64);
    } finally {
      clearTimeout(killer);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('refuses --app without --app-key-file, and --token-ttl without --app', async () => {
    const noFile = await runCli(['emulate', 'github', '--app']);
    expect(noFile.code).not.toBe(0);
    expect(noFile.stderr).toMatch(/--app needs --app-key-file/);
    const noApp = await runCli(['emulate', 'github', '--token-ttl', '60']);
    expect(noApp.code).not.toBe(0);
    expect(noApp.stderr).toMatch(/--token-ttl and --app-key-file are for --app only/);
  });
});
