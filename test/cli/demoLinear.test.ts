/**
 * `syncrelay demo --provider linear` on the embedded defaults: the Linear emulator in the same
 * process, a backfill of its workspace into the normalized tables, the summary with rows per
 * table and the work-item metrics, never the key; a rerun replaces the integration and lands the
 * same rows.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLinearEmulator, type LinearEmulator } from '../../src/emulators/linear/index.js';
import { parseJson, removeDir, runCli, tempDir } from './helpers.js';

interface Summary {
  run: { status: string };
  window_days: number;
  items_written: number;
  post_sync: { delivered: string[] };
  linear: { emulator: string; tables: Record<string, number>; metrics_rows: number; metrics_generations: number };
}

let dir: string;
let env: Record<string, string>;
/** The same workspace the demo serves (seed 7, small), for the expected counts and the key. */
let emu: LinearEmulator;

beforeAll(async () => {
  dir = await tempDir('demo-linear');
  env = { SYNCRELAY_DATA_DIR: join(dir, 'data') };
  emu = await startLinearEmulator({ seed: 7, scale: 'small' });
});
afterAll(async () => {
  await emu?.close();
  await removeDir(dir);
});

/** Rows per normalized table a full backfill of the workspace writes. */
function expected(): Record<string, number> {
  const d = emu.data;
  const changes = (h: (typeof d.issues)[number]['history'][number]) =>
    (h.toStateId ? 1 : 0) +
    (h.toAssigneeId !== undefined ? 1 : 0) +
    (h.addedLabelIds?.length ?? 0) +
    (h.removedLabelIds?.length ?? 0);
  return {
    teams: d.teams.length,
    members: d.users.length,
    projects: d.projects.length,
    sprints: d.cycles.length,
    work_items: d.issues.length,
    work_item_comments: d.issues.reduce((n, i) => n + i.comments.length, 0),
    work_item_events: d.issues.reduce((n, i) => n + i.history.reduce((m, h) => m + changes(h), 0), 0),
  };
}

describe('syncrelay demo --provider linear (embedded)', () => {
  it('backfills the emulator and prints rows per normalized table and the metrics rows', async () => {
    const r = await runCli(['demo', '--provider', 'linear'], { env, cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/Linear emulator on http:\/\/127\.0\.0\.1:\d+\/graphql \(in this process\)/);
    expect(r.stderr).toContain('created integration "Demo Linear (emulator)"');
    expect(r.stderr).toContain('triggered a 31-day backfill');
    expect(r.stdout).toMatch(/^\s+status\s+success\b/m);
    expect(r.stdout).toMatch(/normalized table\s+rows/);
    for (const [table, n] of Object.entries(expected())) {
      expect(r.stdout).toMatch(new RegExp(`^\\s+${table}\\s+${n}$`, 'm'));
    }
    expect(r.stdout).toMatch(
      /post-sync\s+1\/1 handlers delivered \(work-item-metrics\) · [1-9]\d* rows in work_item_metrics_daily/,
    );
    expect(r.stdout).toMatch(/\(Linear GraphQL emulator in this process\)/);
    expect(r.stdout + r.stderr).not.toContain(emu.token);
  }, 150_000);

  it('reruns with a fresh emulator: the integration is replaced, the same rows land, as JSON', async () => {
    const r = await runCli(['demo', '--provider', 'linear', '--json'], { env, cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('deleted the earlier "Demo Linear (emulator)" integration and its synced data');
    const s = parseJson<Summary>(r.stdout);
    expect(s.run.status).toBe('success');
    expect(s.window_days).toBe(31);
    expect(s.linear.tables).toEqual(expected());
    expect(Object.values(s.linear.tables).every((n) => n > 0)).toBe(true);
    expect(s.items_written).toBe(Object.values(s.linear.tables).reduce((a, b) => a + b, 0));
    expect(s.post_sync.delivered).toEqual(['work-item-metrics']);
    expect(s.linear.metrics_rows).toBeGreaterThan(0);
    expect(s.linear.metrics_generations).toBe(1);
    expect(r.stdout + r.stderr).not.toContain(emu.token);
  }, 150_000);
});
