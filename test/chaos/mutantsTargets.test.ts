/**
 * `npm run chaos:mutants` breaks the engine by replacing one exact piece of text per break; when
 * the code moves, its target is gone and the check it keeps stops running. The dry run checks
 * every target and patches a copy of each, running nothing: it must find them all.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('chaos:mutants', () => {
  it('finds the target of every break (dry run)', () => {
    const r = spawnSync(process.execPath, ['scripts/chaos-mutants.mjs', '--dry-run'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(r.stderr + r.stdout).not.toMatch(/target not found/);
    expect(r.status).toBe(0);
    const patched = r.stdout.split('\n').filter((l) => / patched$/.test(l));
    expect(patched.map((l) => l.split(':')[0])).toEqual([
      'fencing-off',
      'claim-cas-weakened',
      'receipts-ignored',
      'post-sync-published-before-marked',
      'ledger-off',
      'reader-page-numbers',
    ]);
  }, 150_000);
});
