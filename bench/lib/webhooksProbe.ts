/**
 * What bounds a stream of webhook deliveries on this machine: the commit of one small transaction
 * (the WAL flush), timed on one connection with synchronous_commit on and off, and the disk's
 * fdatasync rate from pg_test_fsync when PostgreSQL's tools are installed.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { quantile, round } from './stats.js';

const run = promisify(execFile);

/** Commit latency of a one-row UPDATE on one connection: `n` autocommits with synchronous_commit on, then off. */
export async function commitLatency(url: string, n: number) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CREATE TABLE IF NOT EXISTS bench_commit_latency (id int PRIMARY KEY, n bigint NOT NULL)');
    await c.query('INSERT INTO bench_commit_latency VALUES (1, 0) ON CONFLICT (id) DO NOTHING');
    const timed = async () => {
      const ms: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await c.query('UPDATE bench_commit_latency SET n = n + 1 WHERE id = 1');
        ms.push(performance.now() - t0);
      }
      return { p50_ms: round(quantile(ms, 0.5)), p99_ms: round(quantile(ms, 0.99)) };
    };
    const durable = await timed();
    await c.query('SET synchronous_commit = off');
    const async = await timed();
    const { rows } = await c.query<{ s: string }>(`SELECT current_setting('synchronous_commit') AS s`);
    await c.query('RESET synchronous_commit');
    const setting = (await c.query<{ s: string }>(`SELECT current_setting('synchronous_commit') AS s`)).rows[0]!.s;
    await c.query('DROP TABLE bench_commit_latency');
    return { synchronous_commit: setting, durable, without_flush: { ...async, synchronous_commit: rows[0]!.s } };
  } finally {
    await c.end();
  }
}

function findPgTestFsync(): string | null {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  for (const v of readdirSync(base).sort().reverse()) {
    const p = join(base, v, 'bin', 'pg_test_fsync');
    if (existsSync(p)) return p;
  }
  return null;
}

/**
 * pg_test_fsync's fdatasync rate for one 8 kB write (ops/s) and its latency, on a file in the
 * temporary directory (the disk PostgreSQL writes its WAL to may differ: the commit probe above is
 * the figure of PostgreSQL's own disk). Null when the tool is not installed.
 */
export async function fsyncRate(seconds: number): Promise<{ fdatasync_ops_per_s: number; usec_per_op: number } | null> {
  const bin = findPgTestFsync();
  if (!bin) return null;
  const dir = await mkdtemp(join(tmpdir(), 'syncrelay-fsync-'));
  try {
    const { stdout } = await run(bin, ['-s', String(seconds), '-f', join(dir, 'probe')], { timeout: 120_000 });
    const section = stdout.split(/Compare file sync methods using one 8kB write/)[1] ?? '';
    const m = /fdatasync\s+([\d.]+) ops\/sec\s+([\d.]+) usecs\/op/.exec(section);
    return m ? { fdatasync_ops_per_s: Number(m[1]), usec_per_op: Number(m[2]) } : null;
  } catch {
    return null;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
