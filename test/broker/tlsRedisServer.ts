/**
 * A private redis-server for the TLS tests: TLS only (`--port 0`), on a free 127.0.0.1 port, with
 * a CA and a server certificate for 127.0.0.1 / localhost made by `openssl` in a temporary
 * directory, and ACL users from an aclfile there (so no password is on its command line).
 * `stop()` kills only this server, by its pid, and removes the directory.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/chaos/watched.js';

export interface TlsRedisOptions {
  /** aclfile lines (`user NAME on >PASSWORD ~pattern … +@category`); `user default off` is added. */
  users: string[];
}

export class TlsRedisServer {
  private proc: ChildProcess | null = null;
  private output = '';

  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  static async start(opts: TlsRedisOptions): Promise<TlsRedisServer> {
    const dir = await mkdtemp(join(tmpdir(), 'syncrelay-tls-redis-'));
    const server = new TlsRedisServer(dir, await freePort());
    try {
      server.makeCertificates();
      writeFileSync(join(dir, 'users.acl'), [...opts.users, 'user default off', ''].join('\n'), { mode: 0o600 });
      await server.launch();
    } catch (err) {
      await server.stop();
      throw err;
    }
    return server;
  }

  /** The CA that signed the server's certificate (PEM). */
  get ca(): string {
    return readFileSync(join(this.dir, 'ca.crt'), 'utf8');
  }

  get caFile(): string {
    return join(this.dir, 'ca.crt');
  }

  /** A CA that did not sign the server's certificate (PEM). */
  get otherCa(): string {
    return readFileSync(join(this.dir, 'other-ca.crt'), 'utf8');
  }

  url(user: string, password: string, db = 0): string {
    return `rediss://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${this.port}/${db}`;
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    this.proc = null;
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGTERM');
      await exited;
    }
    await rm(this.dir, { recursive: true, force: true });
  }

  private openssl(...args: string[]): void {
    execFileSync('openssl', args, { cwd: this.dir, stdio: 'ignore' });
  }

  private makeCertificates(): void {
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    const caExt = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'];
    for (const name of ['ca', 'other-ca']) {
      const subject = ['-subj', `/CN=syncrelay test ${name}`];
      this.openssl(
        'req',
        '-x509',
        ...ec,
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.crt`,
        '-days',
        '2',
        ...subject,
        ...caExt,
      );
    }
    writeFileSync(join(this.dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    this.openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
    this.openssl(
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.crt',
      '-days',
      '2',
      '-extfile',
      'server.ext',
    );
  }

  /** Starts redis-server and resolves once it logs that it accepts connections. */
  private launch(): Promise<void> {
    const args = [
      '--port',
      '0',
      '--tls-port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--tls-cert-file',
      join(this.dir, 'server.crt'),
      '--tls-key-file',
      join(this.dir, 'server.key'),
      '--tls-ca-cert-file',
      join(this.dir, 'ca.crt'),
      '--tls-auth-clients',
      'no',
      '--aclfile',
      join(this.dir, 'users.acl'),
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.dir,
      '--daemonize',
      'no',
    ];
    const proc = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    return new Promise<void>((resolve, reject) => {
      const read = (chunk: Buffer): void => {
        this.output += chunk.toString();
        if (this.output.includes('Ready to accept connections')) resolve();
      };
      proc.stdout.on('data', read);
      proc.stderr.on('data', read);
      proc.once('error', reject);
      proc.once('exit', (code) =>
        reject(new Error(`redis-server exited (${String(code)}): ${this.output.slice(-2000)}`)),
      );
    });
  }
}
