/**
 * The bounded PostgreSQL chaos run of CI: `syncrelay chaos --pg-bin` on a private cluster, with
 * immediate-mode crashes (`pg-restart`) and outages longer than the lease (`pg-stop-long`) among
 * backend terminations and worker kills (reconciler kills are chaos.test.ts's: two close together
 * leave no relay until a replacement has started, which on a loaded machine takes tens of seconds).
 * Every engine process lives through them (no exit, none failing to start), nothing committed is
 * lost, every trigger lands, and every invariant holds. The slack is 40 s: when PostgreSQL is back
 * every run it held up is open at once.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { passingChaos, redisServerBinary } from './passingChaos.js';
import { REDIS_URL } from '../helpers/pg.js';

const PG_BIN = process.env.SYNCRELAY_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const SEED = 20_260_415;
const RUNS = 8;
const FAULTS = ['pg-restart', 'pg-stop-long', 'pg-terminate', 'worker-kill'];

describe.skipIf(!existsSync(`${PG_BIN}/initdb`))('syncrelay chaos --pg-bin (bounded)', () => {
  it(
    'every engine process survives PostgreSQL crashes and long outages; nothing committed is lost',
    {
      timeout: 240_000,
    },
    async () => {
      const redis = redisServerBinary();
      const args = [
        'chaos',
        ...['--runs', String(RUNS), '--units-per-run', '10', '--duration', '40'],
        ...['--workers', '3', '--reconcilers', '2', '--faults', FAULTS.join(',')],
        ...['--pg-bin', PG_BIN, '--seed', String(SEED), '--slack', '40', '--json'],
        ...(redis ? ['--redis-server', redis] : []),
      ];
      // No DATABASE_URL: the private cluster is the only PostgreSQL the run touches.
      const rep = await passingChaos(args, { env: redis ? {} : { REDIS_URL }, timeoutMs: 220_000 });

      expect(rep.config.postgres).toBe('private');
      expect(rep.invariants.map((i) => i.id)).toContain('nothing_committed_lost');
      expect(rep.invariants.every((i) => i.ok && i.violations === 0)).toBe(true);
      expect(rep.processes.unexpected_exits).toEqual([]);
      expect(rep.processes.start_failures).toEqual([]);
      // Every trigger lands: triggers wait out an outage, and the chaos run's live-run cap (64) is
      // above what it triggers.
      expect(rep.runs.total).toBe(RUNS);
      expect(rep.runs.trigger_failures).toBe(0);
      expect(rep.runs.by_status.planned ?? 0).toBe(0);
      expect(rep.runs.by_status.dispatching ?? 0).toBe(0);
      expect(rep.recovery.after_last_fault.max_ms ?? 0).toBeLessThanOrEqual(rep.config.terminal_bound_s * 1000);

      expect(rep.faults.injected['pg-restart'] ?? 0).toBeGreaterThanOrEqual(1);
      expect(rep.faults.injected['pg-stop-long'] ?? 0).toBeGreaterThanOrEqual(1);
      const events = rep.faults.events;
      // A crash is replayed from the WAL on the next start; a long stop outlasts the 2 s lease.
      for (const e of events.filter((x) => x.kind === 'pg-restart')) {
        expect(e.detail).toMatch(/crash recovery: redo (done at|is not required)/);
      }
      for (const e of events.filter((x) => x.kind === 'pg-stop-long')) {
        expect(Number(/down (\d+) ms/.exec(e.detail ?? '')?.[1])).toBeGreaterThan(rep.config.lease_s * 1000);
      }
      console.info(
        `chaos --pg-bin (bounded): ${JSON.stringify({
          runs: rep.runs.by_status,
          units: rep.units.total,
          faults: rep.faults.injected,
          recovery: rep.recovery.after_last_fault,
          elapsed_ms: rep.elapsed_ms,
        })}`,
      );
    },
  );
});
