/**
 * `syncrelay demo` on the embedded defaults (PGlite in a temp SYNCRELAY_DATA_DIR, in-process
 * broker, no DATABASE_URL / REDIS_URL), then `start` on the same directory: the lock keeps a
 * second process out, and SIGTERM stops it with exit 0.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageLines, parseJson, removeDir, runCli, startCli, tempDir, until } from './helpers.js';

const TERMINAL = /^\s+status\s+(success|partial_failed|failed|cancelled)\b/m;

let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = await tempDir('demo');
  env = { SYNCRELAY_DATA_DIR: join(dir, 'data') };
});
afterAll(async () => {
  await removeDir(dir);
});

describe('syncrelay demo (embedded)', () => {
  it('runs a backfill to a terminal status and prints the summary table', async () => {
    const started = Date.now();
    const r = await runCli(['demo'], { env, cwd: dir, timeoutMs: 90_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(r.stdout).toContain('syncrelay demo summary');
    expect(r.stdout).toMatch(TERMINAL);
    expect(r.stdout).toMatch(/units by status\s+units/);
    expect(r.stdout).toMatch(/^\s+total\s+44\b/m); // 2 reference + 3 teams × 2 datasets × 7 fourteen-day windows
    expect(r.stdout).toMatch(/retries\s+\d+ rate-limit deferrals · \d+ expired-lease retries/);
    expect(r.stdout).toMatch(/post-sync\s+/);
    expect(r.stdout).toContain(`PGlite (embedded PostgreSQL) in ${join(dir, 'data')}`);
    expect(r.stdout).toMatch(/broker\s+in-process/);
    // Progress on stderr as plain lines (not a TTY), no errors.
    expect(r.stderr).toMatch(/^progress: \d+\/44 units done/m);
    expect(messageLines(r.stderr).filter((l) => l.startsWith('syncrelay:'))).toEqual([]);
    // Nothing was left in the working directory: the data went to SYNCRELAY_DATA_DIR.
    expect(existsSync(join(dir, '.syncrelay'))).toBe(false);
    expect(existsSync(join(dir, 'data', 'syncrelay.lock'))).toBe(false);
  });

  it('reruns on the same data (reusing the integration) and reports JSON', async () => {
    const r = await runCli(['demo', '--days', '14', '--json'], { env, cwd: dir, timeoutMs: 90_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('reusing integration "Demo Linear"');
    const s = parseJson<{ run: { status: string; total_units: number }; units: Record<string, number> }>(r.stdout);
    expect(['success', 'partial_failed', 'failed', 'cancelled']).toContain(s.run.status);
    expect(s.run.total_units).toBe(8); // 2 reference + 3 teams × 2 datasets × 1 window
    expect(Object.values(s.units).reduce((a, b) => a + b, 0)).toBe(8);
  });

  it('start holds the embedded database; others are refused until it stops on SIGTERM', async () => {
    const svc = startCli(['start', '--port', '0'], { env, cwd: dir, timeoutMs: 60_000 });
    try {
      await until(() => svc.stderr().includes('"syncrelay started"'), 30_000, 'start');
      const r = await runCli(['runs', 'list'], { env, cwd: dir });
      expect(r.code).not.toBe(0);
      expect(r.stderr.trim()).toBe(
        `syncrelay: the embedded database in ${join(dir, 'data')} is in use by process ${String(svc.child.pid)}; ` +
          'stop it first, or set DATABASE_URL to share a PostgreSQL server',
      );
    } finally {
      svc.child.kill('SIGTERM');
    }
    const done = await svc.exited;
    expect(done.code).toBe(0);
    expect(done.stderr).toContain('"syncrelay stopped"');
    const list = await runCli(['runs', 'list', '--org', 'demo', '--json'], { env, cwd: dir });
    expect(list.code).toBe(0);
    const runs = parseJson<{ status: string }[]>(list.stdout);
    expect(runs).toHaveLength(2);
    for (const run of runs) expect(['success', 'partial_failed', 'failed']).toContain(run.status);
  });
});
