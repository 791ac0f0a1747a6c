/**
 * `syncrelay demo --provider jira` on the embedded defaults: the Jira emulator in the same
 * process, a backfill of its site into the normalized tables, the summary with rows per table and
 * the work-item metrics, never the credential; a rerun replaces the integration and lands the
 * same rows.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJiraEmulator, type JiraEmulator } from '../../src/emulators/jira/index.js';
import { parseJson, removeDir, runCli, tempDir } from './helpers.js';

interface Summary {
  run: { status: string };
  window_days: number;
  items_written: number;
  post_sync: { delivered: string[] };
  jira: { emulator: string; tables: Record<string, number>; metrics_rows: number; metrics_generations: number };
}

let dir: string;
let env: Record<string, string>;
/** The same site the demo serves (seed 7, small), for the expected counts and the credential. */
let emu: JiraEmulator;

beforeAll(async () => {
  dir = await tempDir('demo-jira');
  env = { SYNCRELAY_DATA_DIR: join(dir, 'data') };
  emu = await startJiraEmulator({ seed: 7, scale: 'small' });
});
afterAll(async () => {
  await emu?.close();
  await removeDir(dir);
});

/** Rows per normalized table a full backfill of the site writes (events: status, assignee, labels). */
function expected(): Record<string, number> {
  const issues = emu.data.projects.flatMap((p) => p.issues);
  const kinds = new Set(['status', 'assignee', 'labels']);
  return {
    projects: emu.data.projects.length,
    members: emu.data.users.length,
    sprints: emu.data.sprints.length,
    work_items: issues.length,
    work_item_comments: issues.reduce((n, i) => n + i.comments.length, 0),
    work_item_events: issues.reduce(
      (n, i) => n + i.histories.reduce((m, h) => m + h.items.filter((x) => kinds.has(x.field)).length, 0),
      0,
    ),
  };
}

describe('syncrelay demo --provider jira (embedded)', () => {
  it('backfills the emulator and prints rows per normalized table and the metrics rows', async () => {
    const r = await runCli(['demo', '--provider', 'jira'], { env, cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/Jira emulator on http:\/\/127\.0\.0\.1:\d+ \(in this process\)/);
    expect(r.stderr).toContain('created integration "Demo Jira"');
    expect(r.stderr).toContain('triggered a 31-day backfill');
    expect(r.stdout).toMatch(/^\s+status\s+success\b/m);
    expect(r.stdout).toMatch(/normalized table\s+rows/);
    for (const [table, n] of Object.entries(expected())) {
      expect(r.stdout).toMatch(new RegExp(`^\\s+${table}\\s+${n}$`, 'm'));
    }
    expect(r.stdout).toMatch(
      /post-sync\s+1\/1 handlers delivered \(work-item-metrics\) · [1-9]\d* rows in work_item_metrics_daily/,
    );
    expect(r.stdout + r.stderr).not.toContain(emu.apiToken);
  }, 150_000);

  it('reruns with a fresh emulator: the integration is replaced, the same rows land, as JSON', async () => {
    const r = await runCli(['demo', '--provider', 'jira', '--json'], { env, cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('deleted the earlier "Demo Jira" integration and its synced data');
    const s = parseJson<Summary>(r.stdout);
    expect(s.run.status).toBe('success');
    expect(s.window_days).toBe(31);
    expect(s.jira.tables).toEqual(expected());
    expect(Object.values(s.jira.tables).every((n) => n > 0)).toBe(true);
    expect(s.items_written).toBe(Object.values(s.jira.tables).reduce((a, b) => a + b, 0));
    expect(s.post_sync.delivered).toEqual(['work-item-metrics']);
    expect(s.jira.metrics_rows).toBeGreaterThan(0);
    expect(s.jira.metrics_generations).toBe(1);
    expect(r.stdout + r.stderr).not.toContain(emu.apiToken);
  }, 150_000);

  it('refuses an unknown provider, naming the choices', async () => {
    const r = await runCli(['demo', '--provider', 'gitlab'], { env, cwd: dir });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--provider.*expected one of synthetic, github, linear, jira/);
  });
});
