/**
 * The webhook benchmark's API processes (./webhooksApi.ts), spawned as plain node like the workers;
 * their transaction statistics merged; and CPU affinity through util-linux `taskset`, for the one
 * shape that pins the load generator and the API processes to cores of their own.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { buildChildEntry } from './compile.js';
import { Spawned } from './spawned.js';
import { quantile, round } from './stats.js';
import type { TxStats } from './webhooksApi.js';

export class WebhookApiProcess {
  readonly url: Promise<string>;
  private readonly proc: Spawned;

  /** `cpus`: a taskset CPU list the process is started on (default: wherever the OS puts it). */
  constructor(env: Record<string, string>, cpus?: string) {
    const entry = join(dirname(buildChildEntry()), 'webhooksApi.js');
    const [cmd, args] = cpus ? ['taskset', ['-c', cpus, process.execPath, entry]] : [process.execPath, [entry]];
    this.proc = new Spawned(cmd, args, { name: 'API process', env, stopBy: 'stdin' });
    this.url = this.proc
      .line(() => true)
      .then((line) => {
        const [word, , url] = line.trim().split(/\s+/);
        if (word !== 'ready' || !url) throw new Error(`unexpected line from the API process: ${line}`);
        return url;
      });
    this.url.catch(() => undefined);
  }

  /** The transactions timed since the last call. */
  async stats(): Promise<TxStats> {
    const line = this.proc.line(() => true);
    this.proc.send('stats');
    const text = await line;
    if (!text.startsWith('stats ')) throw new Error(`unexpected line from the API process: ${text}`);
    return JSON.parse(text.slice(6)) as TxStats;
  }

  /** Graceful stop (stdin ends), SIGKILL after `ms`. */
  stop(ms = 10_000): Promise<void> {
    return this.proc.stop(ms);
  }
}

/** `processes` API processes (the reconciler in the first only), each on `cpus` when given. */
export async function startApiProcesses(
  env: Record<string, string>,
  processes: number,
  cpus?: string,
): Promise<WebhookApiProcess[]> {
  const procs = Array.from(
    { length: processes },
    (_, i) => new WebhookApiProcess({ ...env, BENCH_RECONCILER: i === 0 ? '1' : '0' }, cpus),
  );
  try {
    await Promise.all(procs.map((p) => p.url));
  } catch (err) {
    await stopApiProcesses(procs);
    throw err;
  }
  return procs;
}

export async function stopApiProcesses(procs: readonly WebhookApiProcess[]): Promise<void> {
  await Promise.all(procs.map((p) => p.stop()));
}

/** The statistics of several API processes over the same interval, as one (samples pooled, CPU summed). */
export function mergeStats(all: readonly TxStats[]): TxStats {
  return {
    transactions: all.reduce((a, s) => a + s.transactions, 0),
    statements: all.reduce((a, s) => a + s.statements, 0),
    firstMs: all.flatMap((s) => s.firstMs),
    heldMs: all.flatMap((s) => s.heldMs),
    commitMs: all.flatMap((s) => s.commitMs),
    perTx: all.flatMap((s) => s.perTx),
    cpuMs: all.reduce((a, s) => a + s.cpuMs, 0),
  };
}

/** The API processes' delivery transactions (merged): statements, the lock's wait and hold, the commit. */
export interface TxFigures {
  count: number;
  statements_per_delivery: number;
  lock_wait_p50_ms: number;
  lock_wait_p99_ms: number;
  lock_held_p50_ms: number;
  lock_held_mean_ms: number;
  commit_p50_ms: number;
  /** 1000 ÷ mean lock hold: the most deliveries per second one integration's row lock lets through. */
  serial_bound_per_s: number;
}

function mean(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

export function txFigures(s: TxStats): TxFigures {
  const held = mean(s.heldMs);
  return {
    count: s.transactions,
    statements_per_delivery: round(s.statements / Math.max(1, s.transactions)),
    lock_wait_p50_ms: round(quantile(s.firstMs, 0.5)),
    lock_wait_p99_ms: round(quantile(s.firstMs, 0.99)),
    lock_held_p50_ms: round(quantile(s.heldMs, 0.5)),
    lock_held_mean_ms: round(held),
    commit_p50_ms: round(quantile(s.commitMs, 0.5)),
    serial_bound_per_s: round(1000 / held),
  };
}

/** The CPUs `pid` (every thread of it) may run on, e.g. "0,1" or "0-3"; null without taskset. */
export function cpuAffinity(pid: number): string | null {
  try {
    const out = execFileSync('taskset', ['-p', '-c', String(pid)], { encoding: 'utf8' });
    return out.split(':').pop()?.trim() || null;
  } catch {
    return null;
  }
}

/** Moves every thread of `pid` to the CPU list `cpus`. */
export function setCpuAffinity(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** The individual CPUs of a taskset list ("0,2-3" → [0, 2, 3]). */
export function cpuList(list: string): number[] {
  return list.split(',').flatMap((part) => {
    const [lo, hi] = part.split('-').map(Number);
    if (hi === undefined) return [lo!];
    return Array.from({ length: hi - lo! + 1 }, (_, i) => lo! + i);
  });
}
