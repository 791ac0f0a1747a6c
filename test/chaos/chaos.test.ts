/**
 * The bounded chaos run of CI: `syncrelay chaos` as a real child process, once per post_sync delivery
 * mode, on PostgreSQL and a private redis-server — together ≥ 40 runs and ≥ 800 units, every fault
 * kind at least once (the network partition where `ip netns` is permitted; the PostgreSQL crash and
 * stop in ./pgChaos.test.ts, on a private cluster), each invariant PASS.
 */
import { describe, expect, it } from 'vitest';
import type { ChaosReport } from '../../src/chaos/report.js';
import { FAULT_KINDS, PG_FAULTS, POOLER_FAULTS } from '../../src/chaos/options.js';
import { passingChaos, redisServerBinary } from './passingChaos.js';
import { PG_BASE, REDIS_URL } from '../helpers/pg.js';

const SEED = 20_260_301;
const RUNS_PER_MODE = 21;
const UNITS_PER_RUN = 20;

async function chaos(postSync: 'at-most-once' | 'exactly-once', seed: number): Promise<ChaosReport> {
  const redis = redisServerBinary();
  const args = [
    'chaos',
    '--runs',
    String(RUNS_PER_MODE),
    '--units-per-run',
    String(UNITS_PER_RUN),
    '--duration',
    '35',
    '--workers',
    '3',
    '--reconcilers',
    '2',
    '--concurrency',
    '6',
    '--post-sync',
    postSync,
    '--seed',
    String(seed),
    '--json',
    ...(redis ? ['--redis-server', redis] : []),
  ];
  // Without a redis-server binary the shared Redis carries the queue; the Redis faults are then skipped.
  const env = { DATABASE_URL: `${PG_BASE}/postgres`, ...(redis ? {} : { REDIS_URL }) };
  return passingChaos(
    args,
    { env, timeoutMs: 170_000 },
    (report) =>
      `faults: ${JSON.stringify(report?.faults.events ?? [])}\nprocesses: ${JSON.stringify(report?.processes ?? {})}`,
  );
}

describe('syncrelay chaos (bounded)', () => {
  it('keeps every invariant under every fault, in both post_sync modes', { timeout: 360_000 }, async () => {
    const reports = [await chaos('at-most-once', SEED), await chaos('exactly-once', SEED + 1)];

    for (const r of reports) {
      expect(r.ok).toBe(true);
      expect(r.invariants.map((i) => i.id)).toEqual([
        'runs_terminal_within_bound',
        'no_overlapping_live_leases',
        'no_fenced_out_writes',
        'run_terminal_once_job_run_agrees',
        r.config.post_sync === 'exactly-once' ? 'post_sync_exactly_once' : 'post_sync_at_most_once',
        'unit_counts_match',
        'watermarks_forward_never_backfill',
        r.config.post_sync === 'exactly-once' ? 'post_sync_acked_once' : 'post_sync_marked_before_publish',
        'post_sync_ledger_once',
      ]);
      expect(r.invariants.every((i) => i.ok && i.violations === 0)).toBe(true);
      expect(r.runs.total).toBe(RUNS_PER_MODE);
      expect(r.runs.by_status.planned ?? 0).toBe(0);
      expect(r.runs.by_status.dispatching ?? 0).toBe(0);
      expect(r.processes.unexpected_exits).toEqual([]);
      expect(r.recovery.after_last_fault.max_ms ?? 0).toBeLessThanOrEqual(r.config.terminal_bound_s * 1000);
    }
    expect(reports.map((r) => r.config.post_sync)).toEqual(['at-most-once', 'exactly-once']);
    expect(reports.reduce((a, r) => a + r.runs.total, 0)).toBeGreaterThanOrEqual(40);
    expect(reports.reduce((a, r) => a + r.units.total, 0)).toBeGreaterThanOrEqual(800);

    // Every kind injected at least once over both runs; a kind that could not run says why.
    const skipped = { ...reports[0]!.faults.skipped, ...reports[1]!.faults.skipped };
    for (const kind of FAULT_KINDS) {
      const injected = reports.reduce((a, r) => a + (r.faults.injected[kind] ?? 0), 0);
      if (kind === 'net-partition' && skipped[kind]) {
        expect(skipped[kind]).toMatch(/not permitted/);
        continue;
      }
      if (PG_FAULTS.includes(kind)) {
        // The PostgreSQL faults need a private cluster: test/chaos/pgChaos.test.ts runs them.
        expect(skipped[kind]).toMatch(/needs --pg-bin/);
        continue;
      }
      if (POOLER_FAULTS.includes(kind)) {
        // The pooler fault needs a PgBouncer of its own: test/chaos/pgbouncer.test.ts runs it.
        expect(skipped[kind]).toMatch(/needs --pgbouncer/);
        continue;
      }
      if ((kind === 'redis-restart' || kind === 'redis-flushall') && !redisServerBinary()) {
        expect(skipped[kind]).toMatch(/needs --redis-server/);
        continue;
      }
      expect(injected, `${kind} injected (skipped: ${skipped[kind] ?? 'no'})`).toBeGreaterThanOrEqual(1);
    }
    // Faults really took work away from workers, and the retry policy was exercised.
    expect(reports.reduce((a, r) => a + r.faults.units_held_by_killed_or_cut_off_workers, 0)).toBeGreaterThan(0);
    const figures = reports.map((r) => ({
      mode: r.config.post_sync,
      runs: r.runs.by_status,
      units: r.units.total,
      faults: r.faults.injected,
      recovery: r.recovery.after_last_fault,
    }));
    console.info(`chaos (bounded): ${JSON.stringify(figures)}`);
  });
});
