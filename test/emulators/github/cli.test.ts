/** `syncrelay emulate github` as a real child process: prints its URL and tokens, serves, stops on SIGTERM. */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from '../../cli/helpers.js';

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const TSX = join(ROOT, 'node_modules/tsx/dist/loader.mjs');
const MAIN = join(ROOT, 'src/cli/main.ts');

describe('syncrelay emulate github', () => {
  it('prints the URL and a working local token, honours --rate-limit, and exits 0 on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      ['--import', TSX, MAIN, 'emulate', 'github', '--port', '0', '--seed', '3', '--rate-limit', '2/60s'],
      { env: cleanEnv(), cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.resume();
    const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    try {
      const deadline = Date.now() + 40_000;
      while (!/token demo .*: (\S+)\n/.test(stdout) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      const url = /GitHub emulator: (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1];
      const token = /token demo .*: (\S+)\n/.exec(stdout)?.[1];
      expect(url).toBeDefined();
      expect(token).toMatch(/^ghp_[0-9A-Za-z]{36}$/);
      const headers = { authorization: `token ${token!}` };
      const repos = await fetch(`${url!}/orgs/emulated-org/repos`, { headers });
      expect(repos.status).toBe(200);
      expect(repos.headers.get('x-ratelimit-limit')).toBe('2');
      expect(((await repos.json()) as unknown[]).length).toBe(3);
      expect(
        (await fetch(`${url!}/orgs/emulated-org/repos`, { headers: { authorization: 'token nope' } })).status,
      ).toBe(401);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      clearTimeout(killer);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('refuses a bad --faults value naming the entry', async () => {
    const result = await runCli(['emulate', 'github', '--faults', 'meltdown:count=1']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/faults\[0\]\.kind: unknown fault "meltdown"/);
  });
});
