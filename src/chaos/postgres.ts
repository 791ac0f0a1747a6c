/**
 * A private PostgreSQL cluster for a chaos run (`--pg-bin DIR`): `initdb` into a temporary
 * directory, `postgres` on a free 127.0.0.1 port with trust authentication. Only this cluster is
 * ever crashed or stopped, through its own data directory. `initdb` and `postgres` refuse to run as
 * root: as root they run as the `postgres` system user, in a directory that user owns.
 *
 * `fsync=off`: the faults are process crashes (`pg_ctl stop -m immediate`), not machine crashes, so
 * what a commit wrote to the kernel survives; `synchronous_commit` stays on, so a commit is only
 * acknowledged once its WAL is written, and the next start replays the WAL (crash recovery).
 */
import { execFile } from 'node:child_process';
import { access, chown, constants, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { ValidationError } from '../errors.js';
import { freePort, isAlive, pause, startWatched, watchdog, type Watched } from './watched.js';

const execFileAsync = promisify(execFile);
const SYSTEM_USER = 'postgres';
const START_TIMEOUT_MS = 60_000;
/** Server log lines telling that a start replayed the WAL after a crash. */
const RECOVERY = /automatic recovery in progress/;
const REDO_DONE = /redo (done at \S+|is not required)/;

/** Refuses a `--pg-bin` directory without the binaries the cluster needs, before anything is made. */
export async function checkPgBin(binDir: string): Promise<void> {
  const missing: string[] = [];
  for (const b of ['initdb', 'postgres', 'pg_ctl']) {
    await access(join(binDir, b), constants.X_OK).catch(() => missing.push(b));
  }
  if (missing.length > 0) {
    throw new ValidationError(
      '--pg-bin',
      `${binDir} has no executable ${missing.join(', ')} (e.g. /usr/lib/postgresql/15/bin)`,
    );
  }
}

/** How a start went: whether the server ran crash recovery before it accepted connections. */
export interface StartInfo {
  recovered: boolean;
  /** The server's own line on the redo (e.g. `redo done at 0/1A2B3C4 …`), if any. */
  redo?: string;
}

/** `command args…` as the postgres system user when we are root, as ourselves otherwise. */
export function asOwner(command: string, args: string[]): { command: string; args: string[] } {
  return process.getuid?.() === 0
    ? { command: 'runuser', args: ['-u', SYSTEM_USER, '--', command, ...args] }
    : {
        command,
        args,
      };
}

export class PrivatePostgres {
  private server: Watched | null = null;

  private constructor(
    private readonly binDir: string,
    readonly port: number,
    private readonly dir: string,
  ) {}

  /** initdb and start; on any failure everything made so far is removed again. */
  static async start(binDir: string): Promise<PrivatePostgres> {
    const dir = await mkdtemp(join(tmpdir(), 'syncrelay-chaos-pg-'));
    const server = new PrivatePostgres(binDir, await freePort(), dir);
    try {
      if (process.getuid?.() === 0) {
        const { uid, gid } = await systemUser();
        await chown(dir, uid, gid);
      }
      await server.run('initdb', [
        '-D',
        server.dataDir,
        '-U',
        'postgres',
        '--auth=trust',
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ]);
      await server.launch();
    } catch (err) {
      await server.stop();
      throw err;
    }
    return server;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  get pid(): number | undefined {
    return this.server?.pid;
  }

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  /** One of the cluster's binaries, to its end; its output in the error if it fails. */
  private async run(binary: string, args: string[]): Promise<void> {
    const { command, args: argv } = asOwner(join(this.binDir, binary), args);
    try {
      await execFileAsync(command, argv, { cwd: this.dir, timeout: 120_000 });
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      const out = `${e.stderr ?? ''}${e.stdout ?? ''}`.trim().slice(-1500);
      throw new Error(`${binary} failed: ${out || e.message}`, { cause: err });
    }
  }

  /**
   * Starts `postgres` under its watchdog (./watched.ts: SIGQUIT, an immediate stop, when our end of
   * its stdin closes). Resolves once it accepts connections, telling whether it ran crash recovery
   * first.
   */
  private async launch(): Promise<StartInfo> {
    const args = [
      '-D',
      this.dataDir,
      '-c',
      `port=${this.port}`,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${this.dir}`,
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=on',
      '-c',
      'max_connections=300',
      '-c',
      'logging_collector=off',
    ];
    const { command, args: argv } = asOwner('sh', watchdog(join(this.binDir, 'postgres'), args, 'QUIT'));
    const server = await startWatched(command, argv, { cwd: this.dir, keep: 20_000, what: 'postgres' });
    this.server = server;
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (await this.accepts()) break;
      if (!isAlive(server.pid) || Date.now() > deadline) {
        throw new Error(`private postgres on port ${this.port} did not come up: ${this.tail()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const redo = REDO_DONE.exec(server.log())?.[0];
    return { recovered: RECOVERY.test(server.log()), ...(redo ? { redo } : {}) };
  }

  private async accepts(): Promise<boolean> {
    const client = new pg.Client({
      connectionString: this.url,
      application_name: 'syncrelay-chaos-admin',
      connectionTimeoutMillis: 2000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /**
   * `pg_ctl stop -m immediate` (a crash: no checkpoint, every session cut), down `downMs`, start
   * again on the same port (crash recovery replays the WAL).
   */
  async crash(downMs: number, signal?: AbortSignal): Promise<StartInfo> {
    await this.halt('immediate');
    await pause(downMs, signal);
    return this.launch();
  }

  /** `pg_ctl stop -m fast` (sessions terminated, a clean shutdown), down `downMs`, start again. */
  async stopFor(downMs: number, signal?: AbortSignal): Promise<StartInfo> {
    await this.halt('fast');
    await pause(downMs, signal);
    return this.launch();
  }

  /** pg_ctl stop in `mode`, then the watchdog's stdin ends and it exits too. */
  private async halt(mode: 'immediate' | 'fast'): Promise<void> {
    if (this.running()) {
      await this.run('pg_ctl', ['stop', '-D', this.dataDir, '-m', mode, '-w', '-t', '60']);
    }
    await this.release();
  }

  private running(): boolean {
    return this.server !== null && isAlive(this.server.pid);
  }

  private async release(): Promise<void> {
    await this.server?.release();
    this.server = null;
  }

  /** Stops the server (immediate mode, by its own pid) and removes its directory; never throws. */
  async stop(): Promise<void> {
    if (this.running()) {
      try {
        await this.run('pg_ctl', ['stop', '-D', this.dataDir, '-m', 'immediate', '-w', '-t', '30']);
      } catch {
        this.server?.detach(); // the watchdog sends SIGQUIT itself
      }
    }
    await Promise.race([this.release(), pause(30_000)]);
    await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }

  /** The server log's last lines (for errors). */
  private tail(): string {
    return (this.server?.log() ?? '').trim().split('\n').slice(-8).join(' | ');
  }
}

/** uid and gid of the system user the cluster (and a private PgBouncer) runs as when we are root. */
export async function systemUser(name = SYSTEM_USER): Promise<{ uid: number; gid: number }> {
  const { stdout } = await execFileAsync('getent', ['passwd', name]).catch((err: unknown) => {
    throw new Error(
      `as root, a private PostgreSQL or PgBouncer runs as the "${name}" system user, which does not exist`,
      {
        cause: err,
      },
    );
  });
  const [, , uid, gid] = stdout.trim().split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Whether we run the cluster as someone else (for messages). */
export function clusterOwner(): string {
  return process.getuid?.() === 0 ? SYSTEM_USER : userInfo().username;
}
