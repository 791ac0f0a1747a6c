/**
 * `syncrelay demo --provider github` on the embedded defaults: the GitHub emulator in the same
 * process, a backfill of its organisation into the normalized tables, the summary with rows per
 * table and the work-item metrics; a rerun replaces the integration and lands the same rows.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateOrg } from '../../src/emulators/github/generate.js';
import { SCALES } from '../../src/emulators/github/index.js';
import { parseJson, removeDir, runCli, tempDir } from './helpers.js';

interface Summary {
  run: { status: string; total_units: number };
  items_written: number;
  post_sync: { expected: string[]; delivered: string[] };
  github: { emulator: string; tables: Record<string, number>; metrics_rows: number; metrics_generations: number };
}

let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = await tempDir('demo-gh');
  env = { SYNCRELAY_DATA_DIR: join(dir, 'data') };
});
afterAll(async () => {
  await removeDir(dir);
});

/** What the demo's organisation holds (the counts do not depend on when it is generated). */
function expected() {
  const data = generateOrg(7, 'emulated-org', { ...SCALES.small }, Date.now());
  const items = data.repos.flatMap((r) => r.items);
  return {
    repositories: data.repos.length,
    work_items: items.filter((i) => !i.pull).length,
    pull_requests: items.filter((i) => i.pull).length,
    pull_request_reviews: items.reduce((n, i) => n + (i.pull?.reviews.length ?? 0), 0),
  };
}

describe('syncrelay demo --provider github (embedded)', () => {
  it('backfills the emulator and prints rows per normalized table and the metrics rows', async () => {
    const r = await runCli(['demo', '--provider', 'github'], { env, cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/GitHub emulator on http:\/\/127\.0\.0\.1:\d+ \(in this process\)/);
    expect(r.stderr).toContain('created integration "Demo GitHub"');
    expect(r.stdout).toMatch(/^\s+status\s+success\b/m);
    expect(r.stdout).toMatch(/normalized table\s+rows/);
    const want = expected();
    for (const [table, n] of Object.entries(want)) {
      expect(r.stdout).toMatch(new RegExp(`^\\s+${table}\\s+${n}$`, 'm'));
    }
    expect(r.stdout).toMatch(
      /post-sync\s+1\/1 handlers delivered \(work-item-metrics\) · [1-9]\d* rows in work_item_metrics_daily/,
    );
    expect(r.stdout).toMatch(/rows in the normalized tables for this integration/);
  }, 150_000);

  it('reruns with a fresh emulator: the integration is replaced, the same rows land, as JSON', async () => {
    const r = await runCli(['demo', '--provider', 'github', '--json'], { env, cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('deleted the earlier "Demo GitHub" integration and its synced data');
    const s = parseJson<Summary>(r.stdout);
    expect(s.run.status).toBe('success');
    expect(s.github.tables).toMatchObject(expected());
    expect(Object.values(s.github.tables).every((n) => n > 0)).toBe(true);
    expect(s.items_written).toBe(Object.values(s.github.tables).reduce((a, b) => a + b, 0));
    expect(s.post_sync.delivered).toEqual(['work-item-metrics']);
    expect(s.github.metrics_rows).toBeGreaterThan(0);
    expect(s.github.metrics_generations).toBe(1);
  }, 150_000);

  it('refuses an unknown provider, naming the option', async () => {
    const r = await runCli(['demo', '--provider', 'gitlab'], { env, cwd: dir });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--provider.*expected one of synthetic, github, linear, jira/);
  });
});
