/**
 * The bounded pooler chaos run of CI: `syncrelay chaos --pgbouncer`, every engine process's
 * connections through a private PgBouncer in transaction pooling mode (LISTEN direct), with that
 * PgBouncer SIGKILLed and started again (`pgbouncer-restart`) among backend terminations and worker
 * kills. Every engine process lives through it, every trigger lands, and every invariant holds; a
 * pg-terminate still finds the pooled server connections by their application_name.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { passingChaos, redisServerBinary } from './passingChaos.js';
import { runCli } from '../cli/helpers.js';
import { PG_BASE, REDIS_URL } from '../helpers/pg.js';

const PGBOUNCER = '/usr/sbin/pgbouncer';
const SEED = 20_260_501;
const RUNS = 8;
const FAULTS = ['pgbouncer-restart', 'pg-terminate', 'worker-kill'];
const MISSING = existsSync(PGBOUNCER) ? '' : ` — skipped: ${PGBOUNCER} is missing (apt-get install pgbouncer)`;

describe('syncrelay chaos --pgbouncer: what it refuses', () => {
  const env = { DATABASE_URL: `${PG_BASE}/postgres`, REDIS_URL };

  it('refuses an explicit pgbouncer-restart without a PgBouncer of its own', async () => {
    const r = await runCli(['chaos', '--faults', 'worker-kill,pgbouncer-restart'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      'syncrelay: --faults: pgbouncer-restart needs --pgbouncer PATH ' +
        '(the chaos command only restarts a PgBouncer it started itself)',
    );
  });

  it('refuses a --pgbouncer path that is not an executable, before it creates anything', async () => {
    const r = await runCli(['chaos', '--pgbouncer', '/nonexistent/pgbouncer'], { env });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(/^syncrelay: --pgbouncer: \/nonexistent\/pgbouncer is not an executable/);
  });
});

describe.skipIf(MISSING !== '')(`syncrelay chaos --pgbouncer (bounded)${MISSING}`, () => {
  it(
    'every engine process survives pooler restarts through PgBouncer; every invariant holds',
    { timeout: 200_000 },
    async () => {
      const redis = redisServerBinary();
      const args = [
        'chaos',
        ...['--runs', String(RUNS), '--units-per-run', '10', '--duration', '40'],
        ...['--workers', '3', '--reconcilers', '2', '--faults', FAULTS.join(',')],
        ...['--pgbouncer', PGBOUNCER, '--seed', String(SEED), '--slack', '40', '--json'],
        ...(redis ? ['--redis-server', redis] : []),
      ];
      const env = { DATABASE_URL: `${PG_BASE}/postgres`, ...(redis ? {} : { REDIS_URL }) };
      const rep = await passingChaos(
        args,
        { env, timeoutMs: 180_000 },
        (report) => `faults: ${JSON.stringify(report?.faults ?? {})}`,
      );

      expect(rep.config.pooler).toBe('pgbouncer');
      expect(rep.invariants.every((i) => i.ok && i.violations === 0)).toBe(true);
      expect(rep.processes.unexpected_exits).toEqual([]);
      expect(rep.processes.start_failures).toEqual([]);
      expect(rep.runs.total).toBe(RUNS);
      expect(rep.runs.trigger_failures).toBe(0);
      expect(rep.runs.by_status.planned ?? 0).toBe(0);
      expect(rep.runs.by_status.dispatching ?? 0).toBe(0);
      expect(rep.recovery.after_last_fault.max_ms ?? 0).toBeLessThanOrEqual(rep.config.terminal_bound_s * 1000);

      expect(rep.faults.injected['pgbouncer-restart'] ?? 0).toBeGreaterThanOrEqual(1);
      const events = rep.faults.events;
      for (const e of events.filter((x) => x.kind === 'pgbouncer-restart')) {
        const m = /^SIGKILL with (\d+) client connections, down (\d+) ms, back as pid (\d+)$/.exec(e.detail ?? '');
        expect(m, e.detail).not.toBeNull();
        // The engine processes' connections were there to be cut: they go through the pooler.
        expect(Number(m![1])).toBeGreaterThan(0);
        expect(Number(m![2])).toBeGreaterThanOrEqual(200);
        expect(Number(m![2])).toBeLessThanOrEqual(2000);
        expect(e.target).not.toContain(`pid ${m![3]!} `); // a new process, on the same port
      }
      // Through the pooler, pg-terminate still finds server connections by the client's application_name.
      const pooled = events
        .filter((x) => x.kind === 'pg-terminate')
        .map((x) => Number(/\((\d+) PgBouncer server connections\)/.exec(x.detail ?? '')?.[1] ?? NaN));
      expect(pooled.every((n) => Number.isInteger(n))).toBe(true);
      if (pooled.length >= 2) expect(pooled.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      console.info(
        `chaos --pgbouncer (bounded): ${JSON.stringify({
          runs: rep.runs.by_status,
          units: rep.units.total,
          faults: rep.faults.injected,
          missed: rep.faults.missed,
          recovery: rep.recovery.after_last_fault,
          elapsed_ms: rep.elapsed_ms,
        })}`,
      );
    },
  );
});
