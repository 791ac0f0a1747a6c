/**
 * `syncrelay demo --provider github|linear|jira` on the embedded defaults: the provider's emulator
 * in the same process, a backfill of its data into the normalized tables, the summary with rows
 * per table and the work-item metrics, never the credential; a rerun replaces the integration and
 * lands the same rows.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { startJiraEmulator } from '../../src/emulators/jira/index.js';
import { startLinearEmulator } from '../../src/emulators/linear/index.js';
import { expectedRows } from '../e2e/githubExpected.js';
import { jiraRows, linearRows } from '../helpers/emulatorRows.js';
import { parseJson, removeDir, runCli, tempDir } from './helpers.js';

/** What the demo's emulator serves, as the test needs it: the rows it expects and its credential's shape. */
interface Served {
  /** Rows per normalized table the summary lists. */
  rows: Record<string, number>;
  /** Any credential of this emulator (each start makes fresh ones, so the shape, not a value). */
  secret: RegExp;
  close(): Promise<void>;
}

/** Rows per normalized table a backfill of the whole GitHub organisation writes. */
function githubRows(emu: GithubEmulator): Record<string, number> {
  const rows = expectedRows(emu.data);
  const repos = emu.data.repos;
  return {
    repositories: repos.length,
    members: new Set(repos.flatMap((r) => r.collaborators.map((u) => u.id))).size,
    work_items: rows.work_items.size,
    work_item_comments: rows.work_item_comments.size,
    work_item_events: repos.reduce((n, r) => n + r.events.filter((e) => !e.item.pull).length, 0),
    pull_requests: rows.pull_requests.size,
    pull_request_reviews: rows.pull_request_reviews.size,
    commits: rows.commits.size,
  };
}

/** The same data the demo serves: its emulator at seed 7, `small`. */
const SMALL = { seed: 7, scale: 'small' } as const;

async function served<E extends { close(): Promise<void> }>(
  started: Promise<E>,
  read: (emu: E) => Omit<Served, 'close'>,
): Promise<Served> {
  const emu = await started;
  return { ...read(emu), close: () => emu.close() };
}

/** Per provider: its names in the demo's notes, the emulator's path, and what its emulator serves. */
const PROVIDERS = [
  {
    provider: 'github',
    label: 'GitHub',
    integration: 'Demo GitHub',
    emulator: 'GitHub REST emulator',
    path: '',
    serve: () =>
      served(startGithubEmulator(SMALL), (emu) => ({ rows: githubRows(emu), secret: /ghp_[0-9A-Za-z]{36}/ })),
  },
  {
    provider: 'linear',
    label: 'Linear',
    integration: 'Demo Linear (emulator)',
    emulator: 'Linear GraphQL emulator',
    path: '/graphql',
    serve: () =>
      served(startLinearEmulator(SMALL), (emu) => ({
        rows: linearRows(emu.data),
        secret: /lin_(api|oauth)_[0-9A-Za-z]{40}/,
      })),
  },
  {
    provider: 'jira',
    label: 'Jira',
    integration: 'Demo Jira',
    emulator: 'Jira Cloud REST emulator',
    path: '',
    serve: () => served(startJiraEmulator(SMALL), (emu) => ({ rows: jiraRows(emu.data), secret: /ATATT3x[\w-]{41}/ })),
  },
] as const;

interface Summary {
  run: { status: string };
  window_days: number;
  items_written: number;
  post_sync: { delivered: string[] };
  [provider: string]: unknown;
}

interface Emulated {
  tables: Record<string, number>;
  metrics_rows: number;
  metrics_generations: number;
}

let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = await tempDir('demo-providers');
  env = { SYNCRELAY_DATA_DIR: join(dir, 'data') };
});
afterAll(async () => {
  await removeDir(dir);
});

describe.each(PROVIDERS)('syncrelay demo --provider $provider (embedded)', (p) => {
  let served: Served;
  beforeAll(async () => {
    served = await p.serve();
  });
  afterAll(async () => {
    await served?.close();
  });

  it('backfills the emulator and prints rows per normalized table and the metrics rows', async () => {
    const r = await runCli(['demo', '--provider', p.provider], { env, cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    const url = `http://127\\.0\\.0\\.1:\\d+${p.path}`;
    expect(r.stderr).toMatch(new RegExp(`${p.label} emulator on ${url} \\(in this process\\)`));
    expect(r.stderr).toContain(`created integration "${p.integration}"`);
    expect(r.stderr).toContain('triggered a 31-day backfill');
    expect(r.stdout).toMatch(/^\s+status\s+success\b/m);
    expect(r.stdout).toMatch(/normalized table\s+rows/);
    for (const [table, n] of Object.entries(served.rows)) {
      expect(r.stdout).toMatch(new RegExp(`^\\s+${table}\\s+${n}$`, 'm'));
    }
    expect(r.stdout).toMatch(
      /post-sync\s+1\/1 handlers delivered \(work-item-metrics\) · [1-9]\d* rows in work_item_metrics_daily/,
    );
    expect(r.stdout).toMatch(/rows in the normalized tables for this integration/);
    expect(r.stdout).toContain(`(${p.emulator} in this process)`);
    expect(r.stdout + r.stderr).not.toMatch(served.secret);
  }, 150_000);

  it('reruns with a fresh emulator: the integration is replaced, the same rows land, as JSON', async () => {
    const r = await runCli(['demo', '--provider', p.provider, '--json'], { env, cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`deleted the earlier "${p.integration}" integration and its synced data`);
    const s = parseJson<Summary>(r.stdout);
    const emulated = s[p.provider] as Emulated;
    expect(s.run.status).toBe('success');
    expect(s.window_days).toBe(31);
    expect(emulated.tables).toEqual(served.rows);
    expect(Object.values(emulated.tables).every((n) => n > 0)).toBe(true);
    expect(s.items_written).toBe(Object.values(emulated.tables).reduce((a, b) => a + b, 0));
    expect(s.post_sync.delivered).toEqual(['work-item-metrics']);
    expect(emulated.metrics_rows).toBeGreaterThan(0);
    expect(emulated.metrics_generations).toBe(1);
    expect(r.stdout + r.stderr).not.toMatch(served.secret);
  }, 150_000);
});

describe('syncrelay demo --provider github --auth app (embedded)', () => {
  it('signs in as the emulator’s App installation: the same rows, no key, JWT or token shown', async () => {
    const github = await PROVIDERS[0].serve();
    try {
      const r = await runCli(['demo', '--provider', 'github', '--auth', 'app', '--json'], {
        env,
        cwd: dir,
        timeoutMs: 120_000,
      });
      expect(r.code, r.stderr).toBe(0);
      const s = parseJson<Summary>(r.stdout);
      expect(s.run.status).toBe('success');
      expect((s.github as Emulated).tables).toEqual(github.rows);
      expect(r.stdout + r.stderr).not.toMatch(/PRIVATE KEY|ghs_[0-9A-Za-z]{36}|eyJ[\w-]+\.eyJ/);
    } finally {
      await github.close();
    }
  }, 150_000);
});

describe('syncrelay demo --provider', () => {
  it('refuses an unknown provider, naming the choices', async () => {
    const r = await runCli(['demo', '--provider', 'gitlab'], { env, cwd: dir });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--provider.*expected one of synthetic, github, linear, jira/);
  });

  it('refuses --auth app where the provider has no App, and an unknown --auth', async () => {
    const jira = await runCli(['demo', '--provider', 'jira', '--auth', 'app'], { env, cwd: dir });
    expect(jira.code).not.toBe(0);
    expect(jira.stderr).toContain('--auth app is for --provider github');
    const other = await runCli(['demo', '--auth', 'oauth'], { env, cwd: dir });
    expect(other.code).not.toBe(0);
    expect(other.stderr).toMatch(/--auth.*expected token or app/);
  });
});
