/**
 * A private redis-server for a chaos run (`--redis-server PATH`): started on a free 127.0.0.1 port
 * without persistence, so a restart loses every queued message. Only this server is ever restarted
 * or flushed, by its own pid and port.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, isAlive, startWatched, watchdog, type Watched } from './watched.js';

export class PrivateRedis {
  private server: Watched | null = null;

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
    return this.server?.pid;
  }

  /** Starts redis-server under its watchdog (./watched.ts); resolves once it answers PING. */
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
    const server = await startWatched('sh', watchdog(this.binary, args, 'KILL'), { keep: 2000, what: this.binary });
    this.server = server;
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (await this.ping()) return;
      if (!isAlive(server.pid) || Date.now() > deadline) {
        throw new Error(`private redis-server on port ${this.port} did not come up: ${server.log().trim()}`);
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
    await this.server?.kill();
    this.server = null;
  }

  async stop(): Promise<void> {
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
}
