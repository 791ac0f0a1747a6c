/**
 * CPU time by part of the system (Linux /proc): what a measured round cost in worker processes,
 * the bench process (where the reconciler runs), the PostgreSQL backends of the bench database and
 * the Redis server. CPU time, unlike wall time, changes little with the machine's load, so it says
 * where the work goes even on a shared machine.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { Db } from '../../src/db/types.js';
import { REDIS_URL } from './pg.js';

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** utime + stime of a process in ms, or 0 when it is gone (or /proc is not there). */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

export interface CpuParts {
  workers: number;
  bench: number;
  postgres: number;
  redis: number;
}

/** The PIDs to account: worker processes, and the database's backends and Redis looked up once. */
export interface CpuProbe {
  snapshot(): Promise<CpuParts>;
}

export async function cpuProbe(db: Db, database: string, workerPids: readonly number[]): Promise<CpuProbe> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  let redisPid = 0;
  try {
    redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1] ?? 0);
  } finally {
    redis.disconnect();
  }
  const sum = (pids: Iterable<number>) => [...pids].reduce((s, p) => s + processCpuMs(p), 0);
  // Backends come and go with the pools; a gone backend's CPU is kept from its last sighting.
  const lastSeen = new Map<number, number>();
  return {
    async snapshot() {
      const { rows } = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [
        database,
      ]);
      for (const { pid } of rows) if (!lastSeen.has(pid)) lastSeen.set(pid, 0);
      for (const pid of lastSeen.keys()) {
        const now = processCpuMs(pid);
        if (now > 0) lastSeen.set(pid, now);
      }
      const usage = process.cpuUsage();
      return {
        workers: sum(workerPids),
        bench: (usage.user + usage.system) / 1000,
        postgres: [...lastSeen.values()].reduce((s, v) => s + v, 0),
        redis: redisPid ? processCpuMs(redisPid) : 0,
      };
    },
  };
}

/** CPU ms per item between two snapshots, by part and in total. */
export function perItem(a: CpuParts, b: CpuParts, items: number): CpuParts & { total: number } {
  const d = (k: keyof CpuParts) => (b[k] - a[k]) / items;
  const parts = { workers: d('workers'), bench: d('bench'), postgres: d('postgres'), redis: d('redis') };
  return { ...parts, total: parts.workers + parts.bench + parts.postgres + parts.redis };
}
