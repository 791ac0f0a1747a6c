/** `syncrelay chaos` refuses what it cannot do before it creates anything; its schedule and protocol are pure. */
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS } from '../../src/chaos/options.js';
import { formatCommand, parseChildLine, parseCommand } from '../../src/chaos/protocol.js';
import { quantile, Rng } from '../../src/chaos/random.js';
import { planFaults } from '../../src/chaos/schedule.js';
import { runCli } from '../cli/helpers.js';
import { PG_BASE } from '../helpers/pg.js';

const oneLine = (stderr: string) => {
  const lines = stderr.split('\n').filter(Boolean);
  expect(lines).toHaveLength(1);
  return lines[0]!;
};

describe('syncrelay chaos: what it refuses', () => {
  it('--help lists every fault kind and the rule that faults only touch what it started', async () => {
    const r = await runCli(['chaos', '--help']);
    expect(r.code).toBe(0);
    for (const k of FAULT_KINDS) expect(r.stdout).toContain(k);
    expect(r.stdout).toMatch(/only ever target processes this command started/);
    expect(r.stdout).toContain('--pg-bin <dir>');
  });

  it('refuses the embedded mode (no DATABASE_URL)', async () => {
    const r = await runCli(['chaos']);
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toMatch(/^syncrelay: chaos refuses the embedded mode: .*DATABASE_URL/);
  });

  it('refuses the in-process broker (no REDIS_URL and no --redis-server)', async () => {
    const r = await runCli(['chaos'], { env: { DATABASE_URL: `${PG_BASE}/postgres` } });
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toMatch(/^syncrelay: chaos refuses the in-process broker: .*--redis-server PATH/);
  });

  it('refuses an explicit Redis fault on a Redis it did not start', async () => {
    const r = await runCli(['chaos', '--faults', 'worker-kill,redis-flushall'], {
      env: { DATABASE_URL: `${PG_BASE}/postgres`, REDIS_URL: 'redis://127.0.0.1:6379' },
    });
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toBe(
      'syncrelay: --faults: redis-flushall needs --redis-server PATH ' +
        '(the chaos command only restarts or flushes a Redis it started itself)',
    );
  });

  it('refuses an explicit PostgreSQL fault without a cluster of its own (--pg-bin)', async () => {
    const r = await runCli(['chaos', '--faults', 'worker-kill,pg-restart'], {
      env: { DATABASE_URL: `${PG_BASE}/postgres`, REDIS_URL: 'redis://127.0.0.1:6379' },
    });
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toBe(
      'syncrelay: --faults: pg-restart needs --pg-bin DIR ' +
        '(the chaos command only crashes or stops a PostgreSQL it started itself)',
    );
  });

  it('with --pg-bin needs no DATABASE_URL, but refuses a directory without the binaries and --keep', async () => {
    const env = { REDIS_URL: 'redis://127.0.0.1:6379' };
    const noBin = await runCli(['chaos', '--pg-bin', '/nonexistent/bin'], { env });
    expect(noBin.code).toBe(1);
    expect(oneLine(noBin.stderr)).toMatch(/^syncrelay: --pg-bin: \/nonexistent\/bin has no executable initdb/);
    const keep = await runCli(['chaos', '--pg-bin', '/nonexistent/bin', '--keep'], { env });
    expect(keep.code).toBe(1);
    expect(oneLine(keep.stderr)).toMatch(/^syncrelay: --keep: .*--pg-bin/);
  });

  it('--provider: names an unknown provider or mode; refuses --modes alone and the partition', async () => {
    const env = { DATABASE_URL: `${PG_BASE}/postgres`, REDIS_URL: 'redis://127.0.0.1:6379' };
    const unknown = await runCli(['chaos', '--provider', 'gitlab'], { env });
    expect(unknown.code).not.toBe(0);
    expect(oneLine(unknown.stderr)).toMatch(/--provider.*gitlab.*github, linear, jira/);
    const mode = await runCli(['chaos', '--provider', 'github', '--modes', 'incremental,backfill'], { env });
    expect(mode.code).not.toBe(0);
    expect(oneLine(mode.stderr)).toMatch(/Unknown mode "backfill"; expected incremental, full_resync, verify/);
    const alone = await runCli(['chaos', '--modes', 'incremental'], { env });
    expect(alone.code).toBe(1);
    expect(oneLine(alone.stderr)).toBe('syncrelay: --modes applies to a --provider run only');
    const partition = await runCli(['chaos', '--provider', 'jira', '--faults', 'net-partition'], { env });
    expect(partition.code).toBe(1);
    expect(oneLine(partition.stderr)).toMatch(/^syncrelay: --faults: net-partition with --provider: .*emulator/);
  });

  it('names an unknown fault kind', async () => {
    const r = await runCli(['chaos', '--faults', 'worker-kill,meteor']);
    expect(r.code).not.toBe(0);
    expect(oneLine(r.stderr)).toMatch(/Unknown fault "meteor"/);
  });
});

describe('the fault schedule', () => {
  it('has every kind at least once, inside the duration, and is the same for the same seed', () => {
    for (const durationMs of [20_000, 35_000, 1_500_000]) {
      const plan = planFaults(FAULT_KINDS, durationMs, new Rng(7));
      expect(new Set(plan.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
      for (const f of plan) expect(f.at).toBeGreaterThanOrEqual(0);
      expect(Math.max(...plan.map((f) => f.at))).toBeLessThanOrEqual(Math.max(durationMs - 7000, 1000) + 1);
      expect(planFaults(FAULT_KINDS, durationMs, new Rng(7))).toEqual(plan);
    }
    expect(planFaults(FAULT_KINDS, 1_500_000, new Rng(7)).length).toBeGreaterThan(300);
  });

  it('quantiles are nearest-rank', () => {
    expect(quantile([5, 1, 3, 2, 4], 0.5)).toBe(3);
    expect(quantile([], 0.5)).toBeNull();
  });
});

describe('the child protocol', () => {
  it('round-trips commands and parses announcements', () => {
    for (const c of [
      { kind: 'pause-at', point: 'relay.afterPublish.beforeMark' },
      { kind: 'disarm', point: 'relay.afterClaim.beforePublish' },
      { kind: 'publish-fail-rate', rate: 0.35 },
      { kind: 'duplicate-rate', rate: 0.4 },
    ] as const) {
      expect(parseCommand(formatCommand(c))).toEqual(c);
    }
    expect(parseCommand('publish-fail-rate 2')).toBeNull();
    expect(parseCommand('duplicate-rate -1')).toBeNull();
    expect(parseChildLine('duplicated post_sync')).toEqual({ kind: 'duplicated', task: 'post_sync' });
    expect(parseChildLine('unit-start u1 o1')).toEqual({ kind: 'unit-start', unitId: 'u1', owner: 'o1' });
    expect(parseChildLine('paused-at relay.afterPublish.beforeMark')).toEqual({
      kind: 'paused-at',
      point: 'relay.afterPublish.beforeMark',
    });
    expect(parseChildLine('{"level":40}')).toBeNull();
  });
});
