/**
 * A private PgBouncer for a chaos run (`--pgbouncer PATH`): transaction pooling on a free 127.0.0.1
 * port, in front of the run's own database only (on the private cluster, or on DATABASE_URL's
 * server). Only this PgBouncer is ever killed and started again, by its own pid and port. It refuses
 * to run as root: as root it runs as the `postgres` system user, in a directory that user owns.
 *
 * Its configuration: clients are not authenticated (`auth_type = any`, loopback only) and every
 * server connection logs in as the user of the server URL; one console user may only read (SHOW);
 * 20 server connections (as the CI's PgBouncer, .ci/pgbouncer.ini) for the run's clients; a failed
 * server login is retried after 1 s (`server_login_retry`, 15 s by default) so that a PostgreSQL
 * restart costs the pool no more than it costs a direct client.
 */
import { access, chown, constants, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ValidationError } from '../errors.js';
import { asOwner, systemUser } from './postgres.js';
import { freePort, isAlive, pause, startWatched, watchdog, type Watched } from './watched.js';

/** Server connections of the pool (the run's database, one forced user: one pool). */
export const POOLER_POOL_SIZE = 20;
/** The user of PgBouncer's read-only console (SHOW …): how a fault counts the connections it cuts. */
const STATS_USER = 'syncrelay_chaos_stats';
const START_TIMEOUT_MS = 15_000;

/** Refuses a `--pgbouncer` path that is not an executable, before anything is made. */
export async function checkPgBouncer(binary: string): Promise<void> {
  await access(binary, constants.X_OK).catch((err: unknown) => {
    throw new ValidationError('--pgbouncer', `${binary} is not an executable (e.g. /usr/sbin/pgbouncer)`, {
      cause: err,
    });
  });
}

/** A value of PgBouncer's [databases] connection string, quoted (a quote is doubled). */
function quoted(value: string): string {
  if (/[\r\n]/.test(value)) throw new ValidationError('DATABASE_URL', 'has a line break in its user or password');
  return `'${value.replace(/'/g, "''")}'`;
}

/** The ini file: `database` on `serverUrl`'s server, nothing else, behind 127.0.0.1:`port`. */
function config(serverUrl: string, database: string, port: number): string {
  const u = new URL(serverUrl);
  const server = [
    `host=${quoted(u.hostname || '127.0.0.1')}`,
    `port=${u.port || '5432'}`,
    `dbname=${quoted(database)}`,
    `user=${quoted(decodeURIComponent(u.username) || 'postgres')}`,
    ...(u.password ? [`password=${quoted(decodeURIComponent(u.password))}`] : []),
  ];
  return [
    '[databases]',
    `${database} = ${server.join(' ')}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'pool_mode = transaction',
    'auth_type = any',
    `stats_users = ${STATS_USER}`,
    'max_client_conn = 500',
    `default_pool_size = ${POOLER_POOL_SIZE}`,
    'server_login_retry = 1',
    'ignore_startup_parameters = extra_float_digits,options',
    'log_connections = 0',
    'log_disconnections = 0',
    '',
  ].join('\n');
}

export class PrivatePgBouncer {
  private server: Watched | null = null;

  private constructor(
    private readonly binary: string,
    readonly port: number,
    private readonly dir: string,
    /** The server URL this PgBouncer stands in front of (user, host, port). */
    private readonly serverUrl: string,
    /** The one database it pools. */
    private readonly database: string,
  ) {}

  /** Writes the config and starts PgBouncer; on any failure everything made so far is removed again. */
  static async start(binary: string, serverUrl: string, database: string): Promise<PrivatePgBouncer> {
    const dir = await mkdtemp(join(tmpdir(), 'syncrelay-chaos-pgbouncer-'));
    const pooler = new PrivatePgBouncer(binary, await freePort(), dir, serverUrl, database);
    try {
      // Mode 0600: the server's password, if its URL has one, is in it.
      await writeFile(pooler.iniPath, config(serverUrl, database, pooler.port), { mode: 0o600 });
      if (process.getuid?.() === 0) {
        const { uid, gid } = await systemUser();
        await chown(dir, uid, gid);
        await chown(pooler.iniPath, uid, gid);
      }
      await pooler.launch();
      await pooler.checkThrough();
    } catch (err) {
      await pooler.stop();
      throw err;
    }
    return pooler;
  }

  /** `serverUrl` (a server URL, any database) as a client of this PgBouncer: its host and port, no password. */
  clientUrl(serverUrl: string = this.serverUrl): string {
    const u = new URL(serverUrl);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    u.password = '';
    // PgBouncer speaks plain TCP to its clients here.
    for (const k of [...u.searchParams.keys()]) if (k.startsWith('ssl')) u.searchParams.delete(k);
    return u.toString();
  }

  get pid(): number | undefined {
    return this.server?.pid;
  }

  private get iniPath(): string {
    return join(this.dir, 'pgbouncer.ini');
  }

  /** Starts `pgbouncer` under its watchdog (./watched.ts); resolves once it accepts TCP connections on its port. */
  private async launch(): Promise<void> {
    const { command, args } = asOwner('sh', watchdog(this.binary, [this.iniPath], 'KILL'));
    const server = await startWatched(command, args, { cwd: this.dir, keep: 20_000, what: this.binary });
    this.server = server;
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (await listening(this.port)) return;
      if (!isAlive(server.pid) || Date.now() > deadline) {
        throw new Error(`private pgbouncer on port ${this.port} did not come up: ${this.tail()}`);
      }
      await pause(50);
    }
  }

  /** One statement through the pool: the configuration really reaches the database. */
  private async checkThrough(): Promise<void> {
    const database = this.database;
    const u = new URL(this.clientUrl());
    u.pathname = `/${encodeURIComponent(database)}`;
    const client = new pg.Client({
      connectionString: u.toString(),
      application_name: 'syncrelay-chaos-admin',
      connectionTimeoutMillis: 10_000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
    } catch (err) {
      throw new Error(`private pgbouncer on port ${this.port} does not reach ${database}: ${this.tail()}`, {
        cause: err,
      });
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Client connections to the pooled database right now (PgBouncer's `SHOW CLIENTS`). */
  async clientConnections(): Promise<number> {
    const client = new pg.Client({
      connectionString: `postgres://${STATS_USER}@127.0.0.1:${this.port}/pgbouncer`,
      connectionTimeoutMillis: 5000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query<{ database: string }>('SHOW CLIENTS');
      return rows.filter((r) => r.database === this.database).length;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /**
   * SIGKILL (a crash: every client and server connection drops at once, a transaction in flight is
   * rolled back by the server), down `downMs`, started again on the same port with an empty pool.
   */
  async restart(downMs: number, signal?: AbortSignal): Promise<void> {
    await this.kill();
    await pause(downMs, signal);
    await this.launch();
  }

  /** SIGKILL to PgBouncer's own pid, then the watchdog's stdin ends and it exits too. */
  private async kill(): Promise<void> {
    await this.server?.kill();
    this.server = null;
  }

  /** Stops PgBouncer (by its pid) and removes its directory; never throws. */
  async stop(): Promise<void> {
    await this.kill().catch(() => undefined);
    await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }

  /** PgBouncer's last log lines (for errors). */
  private tail(): string {
    return (this.server?.log() ?? '').trim().split('\n').slice(-6).join(' | ');
  }
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
