/**
 * How the chaos run starts a private server (postgres, redis-server, pgbouncer): under a small `sh`
 * watchdog that starts it, prints its pid, and signals it (by that pid) once our end of the
 * watchdog's stdin closes — so a private server never outlives this process, even a SIGKILLed one.
 * Only that pid is ever signalled.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A TCP port nothing listens on right now (the OS picks it). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** The watchdog's command line for `binary args…`; `onClose` is the signal it sends when our stdin ends. */
export function watchdog(binary: string, args: readonly string[], onClose: 'KILL' | 'QUIT'): string[] {
  const script =
    'bin="$1"; shift; "$bin" "$@" </dev/null & pid=$!; echo "$pid"; cat >/dev/null; ' +
    `kill -${onClose} "$pid" 2>/dev/null`;
  return ['-c', script, 'sh', binary, ...args];
}

/** A server started under its watchdog. */
export interface Watched {
  /** The server's own pid (not the watchdog's). */
  readonly pid: number;
  /** Resolves once the server is gone. */
  readonly exited: Promise<void>;
  /** What it wrote to stderr, its last `keep` characters. */
  log(): string;
  /** Ends the watchdog now: it signals the server (`onClose`) and exits. */
  detach(): void;
  /** Waits for the server to be gone, then ends the watchdog. */
  release(): Promise<void>;
  /** SIGKILL to the server's pid (if it is still running), then `release`. */
  kill(): Promise<void>;
}

/**
 * Runs `command args` (the watchdog, possibly wrapped to run as another user) in `cwd`; resolves
 * with the server's pid once the watchdog has printed it, or rejects when it could not start.
 */
export async function startWatched(
  command: string,
  args: readonly string[],
  o: { cwd?: string; keep: number; what: string },
): Promise<Watched> {
  let stderr = '';
  const proc: ChildProcess = spawn(command, args, { cwd: o.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  proc.stdin!.on('error', () => undefined);
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-o.keep)));
  const pid = await new Promise<number>((resolve, reject) => {
    proc.once('error', reject);
    proc.stdout!.setEncoding('utf8').once('data', (d: string) => resolve(Number(d.trim().split('\n')[0])));
    proc.once('exit', () => reject(new Error(`could not start ${o.what}: ${stderr.trim()}`)));
  });
  const exited = waitForExit(pid);
  const detach = () => void proc.stdin!.end();
  const release = async () => {
    await exited;
    detach();
  };
  return {
    pid,
    exited,
    log: () => stderr,
    detach,
    release,
    async kill() {
      if (isAlive(pid)) process.kill(pid, 'SIGKILL');
      await release();
    },
  };
}

/** Running (a zombie waiting to be reaped counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

/** Resolves once `pid` is gone (polled: it is the watchdog's child, not ours). */
export async function waitForExit(pid: number): Promise<void> {
  while (isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
