/**
 * A private redis-server for a chaos run (`--redis-server PATH`): started on a free 127.0.0.1 port
 * without persistence, so a restart loses every queued message. Only this server is ever restarted
 * or flushed, by its own pid and port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

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

export class PrivateRedis {
  private proc: ChildProcess | null = null;
  private serverPid: number | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stderr = '';

  private constructor(
    private readonly binary: string,
    readonly port: number,
    private readonly dir: string,
  ) {}

  static async start(binary: string): Promise<PrivateRedis> {
    const dir = await mkdtemp(join(tmpdir(), 'syncrelay-chaos-redis-'));
    const redis = new PrivateRedis(binary, await freePort(), dir);
    try {
      await redis.launch();
    } catch (err) {
      await redis.stop();
      throw err;
    }
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.serverPid;
  }

  /**
   * Starts redis-server under a small `sh` that kills it (by its pid) when our end of its stdin
   * closes — so a private Redis never outlives this process, even one that is SIGKILLed.
   */
  private async launch(): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.dir,
      '--maxmemory-policy',
      'noeviction',
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
    ];
    const watchdog =
      'bin="$1"; shift; "$bin" "$@" </dev/null & pid=$!; echo "$pid"; cat >/dev/null; kill -9 "$pid" 2>/dev/null';
    const proc = spawn('sh', ['-c', watchdog, 'sh', this.binary, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc = proc;
    proc.stdin.on('error', () => undefined);
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (this.stderr = (this.stderr + d).slice(-2000)));
    const pid = await new Promise<number>((resolve, reject) => {
      proc.once('error', reject);
      proc.stdout.setEncoding('utf8').once('data', (d: string) => resolve(Number(d.trim().split('\n')[0])));
      proc.once('exit', () => reject(new Error(`could not start ${this.binary}: ${this.stderr.trim()}`)));
    });
    this.serverPid = pid;
    this.exited = waitForExit(pid);
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (await this.ping()) return;
      if (!isAlive(pid) || Date.now() > deadline) {
        throw new Error(`private redis-server on port ${this.port} did not come up: ${this.stderr.trim()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private async ping(): Promise<boolean> {
    const client = new Redis({
      host: '127.0.0.1',
      port: this.port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return (await client.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  }

  /** SIGKILL (every message it held is lost), stay down `downMs`, start again on the same port. */
  async restart(downMs: number): Promise<void> {
    await this.kill();
    await new Promise((r) => setTimeout(r, downMs));
    await this.launch();
  }

  /** FLUSHALL: every key, so every queued message, is gone. */
  async flushAll(): Promise<void> {
    const client = new Redis({ host: '127.0.0.1', port: this.port, maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    try {
      await client.flushall();
    } finally {
      client.disconnect();
    }
  }

  /** SIGKILL to the redis-server's own pid, then the watchdog's stdin ends and it exits too. */
  private async kill(): Promise<void> {
    if (this.serverPid !== undefined && isAlive(this.serverPid)) process.kill(this.serverPid, 'SIGKILL');
    await this.exited;
    this.proc?.stdin?.end();
    this.proc = null;
    this.serverPid = undefined;
  }

  async stop(): Promise<void> {
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
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
