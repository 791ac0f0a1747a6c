/**
 * The CI smoke run of the benchmarks: `npm run bench -- --quick` completes, and every scenario
 * prints its one JSON line with a ratio and a target, and the results file and chart are written.
 * Benchmarks are not tests: nothing here looks at a time or at whether a target was met.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCENARIOS = [
  'relay_throughput',
  'e2e_units',
  'worker_memory',
  'latency_trigger_to_dispatch',
  'latency_unit_to_finalize',
  'recovery',
  'history_scale',
  'backfill_large',
  'github_rate_limited_sync',
  'linear_rate_limited_sync',
  'jira_rate_limited_sync',
  'verify_jira',
  'verify_linear',
  'verify_github',
  'webhooks_ingestion',
  'webhooks_quota',
  'webhook_freshness',
  'pgbouncer_e2e',
];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, cmd, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The bench talks to the servers the tests use. */
const env: Record<string, string> = {
  ...(process.env.SYNCRELAY_TEST_PG ? { SYNCRELAY_BENCH_PG: process.env.SYNCRELAY_TEST_PG } : {}),
  ...(process.env.SYNCRELAY_TEST_REDIS ? { SYNCRELAY_BENCH_REDIS: process.env.SYNCRELAY_TEST_REDIS } : {}),
};

describe('npm run bench -- --quick', () => {
  let out: string;
  let result: Run;

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'syncrelay-bench-'));
    result = await run(['--import', 'tsx', 'bench/run.ts', '--quick', '--out', out], env);
  }, 540_000); // the e2e sweep restarts processes per shape, the provider scenarios run five backfills each

  afterAll(async () => {
    await rm(out, { recursive: true, force: true });
  });

  it('completes, and every scenario prints one JSON line with its figures, ratio and target', () => {
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.scenario)).toEqual(SCENARIOS);
    for (const line of lines) {
      expect(line.error, String(line.scenario)).toBeUndefined();
      expect(typeof line.ratio, String(line.scenario)).toBe('number');
      expect(Number.isFinite(line.ratio), String(line.scenario)).toBe(true);
      expect(typeof line.target).toBe('string');
      expect(typeof line.met).toBe('boolean');
    }
  });

  it("e2e sweeps both systems over the quick shapes and names each one's best shape", () => {
    const e2e = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.scenario === 'e2e_units')!;
    const sweep = e2e.sweep as { shape: string; processes: number; concurrency: number; rounds: number }[];
    // The pool per process may be capped below 16 when other clients hold connections.
    expect(sweep.map((r) => `${r.processes}x${r.concurrency}`)).toEqual(['1x16', '1x64', '2x16', '2x64']);
    for (const row of sweep) expect(row.rounds).toBeGreaterThanOrEqual(1);
    expect(sweep.map((r) => r.shape)).toContain(e2e.syncrelay_best_shape);
    expect(sweep.map((r) => r.shape)).toContain(e2e.peer_best_shape);
    expect(e2e.ratio).toBe(e2e.ratio_best_vs_best);
    expect(Object.keys(e2e.cpu_ms_per_unit as object)).toEqual(['workers', 'bench', 'postgres', 'redis', 'total']);
  });

  it('linear and jira: family units need fewer requests than one unit per dataset; no duplicate rows', () => {
    const lines = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.scenario === 'linear_rate_limited_sync' || l.scenario === 'jira_rate_limited_sync');
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      const name = String(line.scenario);
      expect(line.status, name).toBe('success');
      expect(line.units_carrying_family as number, name).toBeGreaterThan(0);
      expect(line.family_requests as number, name).toBeGreaterThan(0);
      expect(line.family_requests_per_issue as number, name).toBeLessThan(
        line.per_dataset_requests_per_issue as number,
      );
      expect(line.duplicate_rows, name).toBe(0);
      expect(line.rows_off_from_emulator, name).toBe(0);
      expect(typeof line.unthrottled_requests_per_s, name).toBe('number');
      expect(typeof line.budget_share_of_capacity, name).toBe('number');
    }
  });

  it('each provider: an incremental over unchanged data reads less than the first', () => {
    const lines = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => String(l.scenario).endsWith('_rate_limited_sync'));
    expect(lines).toHaveLength(3);
    type Run = { status: string; requests: number; items_read: number };
    for (const line of lines) {
      const name = String(line.scenario);
      const first = line.first_incremental as Run;
      const unchanged = line.incremental_unchanged as Run;
      expect([first.status, unchanged.status], name).toEqual(['success', 'success']);
      // GitHub's unchanged lists answer 304 to their kept ETags: no answered (2xx) request at all.
      if (!name.startsWith('github')) expect(unchanged.requests, name).toBeGreaterThan(0);
      expect(unchanged.requests, name).toBeLessThanOrEqual(first.requests);
      expect(unchanged.items_read, name).toBeLessThan(first.items_read);
      expect(line.verify_unchanged, name).toBeUndefined();
    }
  });

  it('verify, each provider: nothing found in unchanged data; after the deletions and losses, each one found', () => {
    const lines = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => String(l.scenario).startsWith('verify_'));
    expect(lines.map((l) => l.scenario)).toEqual(['verify_jira', 'verify_linear', 'verify_github']);
    type Verify = {
      status: string;
      requests: number;
      requests_per_item: number;
      minimum_s: number;
      nothing_found?: boolean;
      found_all?: boolean;
    };
    for (const line of lines) {
      const name = String(line.scenario);
      expect(line.status, name).toBe('success');
      const clean = line.verify_unchanged as Verify;
      const found = line.verify_one_percent as Verify;
      expect([clean.status, found.status], name).toEqual(['success', 'success']);
      expect((line.verify_unthrottled as { status: string }).status, name).toBe('success');
      expect(clean.nothing_found, name).toBe(true);
      expect(found.found_all, name).toBe(true);
      expect(clean.requests, name).toBeGreaterThan(0);
      expect(clean.requests_per_item, name).toBeLessThan(0.05);
      expect(typeof clean.minimum_s, name).toBe('number');
    }
  });

  it('webhooks: no delivery lost in any shape; the unchanged incremental answers 304s and costs no point', () => {
    const lines = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const ingest = lines.find((l) => l.scenario === 'webhooks_ingestion')!;
    type Shape = {
      shape: string;
      api_processes: number;
      concurrency: number;
      pinned: string | null;
      sent: number;
      rows: number;
      received: number;
      duplicate: number;
      non_202: number;
      cpu: { load_generator_ms: number; api_ms: number[] };
    };
    const shapes = ingest.shapes as Shape[];
    const unpinned = shapes.filter((s) => s.pinned === null);
    // The pinned shape is extra, and only where taskset is installed.
    expect(unpinned.map((s) => s.shape)).toEqual(['p1-c8', 'p1-c32', 'p2-c8', 'p2-c32']);
    for (const s of shapes.filter((x) => x.pinned !== null)) expect(s.shape).toMatch(/^p\d+-c\d+-pinned$/);
    for (const s of shapes) {
      expect(s.shape, s.shape).toMatch(new RegExp(`^p${s.api_processes}-c${s.concurrency}`));
      expect(s.non_202, s.shape).toBe(0);
      expect(s.rows, s.shape).toBe(s.sent);
      expect(s.received + s.duplicate, s.shape).toBe(s.sent);
      expect(s.duplicate, s.shape).toBeGreaterThan(0);
      expect(typeof s.cpu.load_generator_ms, s.shape).toBe('number');
      expect(s.cpu.api_ms, s.shape).toHaveLength(s.api_processes);
    }
    expect(ingest.none_lost).toBe(true);
    expect(unpinned.map((s) => s.shape)).toContain(ingest.best_shape);
    expect(ingest.best_shape).toBe(`p${String(ingest.api_processes)}-c${String(ingest.concurrency)}`);
    const quota = lines.find((l) => l.scenario === 'webhooks_quota')!;
    const second = quota.second_incremental as { status: string; not_modified_304: number; rate_limit_points: number };
    expect(second.status).toBe('success');
    expect(second.not_modified_304).toBeGreaterThan(0);
    expect(second.rate_limit_points).toBe(0);
  });

  it('webhook freshness: every edit landed and every delivery received, in every shape', () => {
    const line = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.scenario === 'webhook_freshness')!;
    expect(line.every_edit_landed).toBe(true);
    const shapes = line.shapes as { edits_made: number; edits_landed: number; deliveries_accounted: boolean }[];
    expect(shapes.length).toBeGreaterThan(0);
    for (const s of shapes) {
      expect(s.edits_made).toBeGreaterThan(0);
      expect(s.edits_landed).toBe(s.edits_made);
      expect(s.deliveries_accounted).toBe(true);
    }
  });

  it('writes the results file and the chart of the ratios', async () => {
    const report = JSON.parse(await readFile(join(out, 'latest.json'), 'utf8')) as {
      quick: boolean;
      results: { scenario: string }[];
    };
    expect(report.quick).toBe(true);
    expect(report.results.map((r) => r.scenario)).toEqual(SCENARIOS);
    const svg = await readFile(join(out, 'ratios.svg'), 'utf8');
    expect(svg).toMatch(/^<svg /);
    for (const name of SCENARIOS) expect(svg).toContain(name);
    expect(svg).toContain('best vs best: syncrelay ');
  });

  it('syncrelay bench --help describes the command', async () => {
    const r = await run(['--import', 'tsx', 'src/cli/main.ts', 'bench', '--help'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: syncrelay bench');
    expect(r.stdout).toContain('--quick');
  });
});
