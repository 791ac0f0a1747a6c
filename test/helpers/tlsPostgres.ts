/**
 * A private PostgreSQL (src/chaos/postgres.ts: initdb, 127.0.0.1, the postgres system user when
 * root) turned into a TLS-only server: a CA and server certificates made with `openssl` in a temp
 * directory the cluster's user owns, `ssl = on` (ALTER SYSTEM) and a pg_hba.conf that has only a
 * `hostssl` line, applied by a reload. A second, unrelated CA stands for the wrong one.
 */
import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { PrivatePostgres } from '../../src/chaos/postgres.js';

const execFileAsync = promisify(execFile);

/** Server certificates the server can be switched between. */
export type ServerCert = 'localhost' | 'elsewhere';

export interface TlsPostgres {
  port: number;
  /** The CA that signed the server's certificates. */
  caFile: string;
  /** A CA that signed nothing the server holds. */
  otherCaFile: string;
  /** `postgres://postgres@127.0.0.1:<port>/<database>` with `query` (e.g. `sslmode=verify-full`). */
  url(query?: string, database?: string): string;
  /** Runs statements as the superuser (over TLS, no verification). */
  admin(sql: string): Promise<void>;
  /** Serves `cert` to new connections from now on. */
  useCert(cert: ServerCert): Promise<void>;
  /** Stops the server and removes every file made; never throws. */
  stop(): Promise<void>;
}

const ALT_NAMES: Record<ServerCert, string> = {
  localhost: 'DNS:localhost,IP:127.0.0.1',
  elsewhere: 'DNS:db.elsewhere.invalid',
};

export async function startTlsPostgres(binDir: string): Promise<TlsPostgres> {
  const server = await PrivatePostgres.start(binDir);
  const dir = await mkdtemp(join(tmpdir(), 'syncrelay-tls-'));
  let caText = '';
  const plainUrl = `postgres://postgres@127.0.0.1:${server.port}/postgres`;
  const url = (query = '', database = 'postgres') =>
    `postgres://postgres@127.0.0.1:${server.port}/${database}${query ? `?${query}` : ''}`;
  const admin = async (
    sql: string,
    connectionString = url(),
    ssl: pg.ClientConfig['ssl'] = { rejectUnauthorized: false },
  ) => {
    const client = new pg.Client({ connectionString, ssl, application_name: 'syncrelay-test-admin' });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  try {
    const owner = await clusterOwner(plainUrl);
    await makeCertificates(dir);
    await handOver(dir, owner);
    await admin(`ALTER SYSTEM SET ssl_cert_file = '${join(dir, 'localhost.crt')}'`, plainUrl, false);
    await admin(`ALTER SYSTEM SET ssl_key_file = '${join(dir, 'localhost.key')}'`, plainUrl, false);
    await admin('ALTER SYSTEM SET ssl = on', plainUrl, false);
    await writeFile(owner.hbaFile, 'hostssl all all 127.0.0.1/32 trust\n');
    await admin('SELECT pg_reload_conf()', plainUrl, false);
    const ca = await readFile(join(dir, 'ca.crt'), 'utf8');
    caText = ca;
    await until(
      'only TLS connections are accepted',
      async () => (await refusesPlain(plainUrl)) && (await presented(url(), ca)) !== null,
    );
  } catch (err) {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    port: server.port,
    caFile: join(dir, 'ca.crt'),
    otherCaFile: join(dir, 'other-ca.crt'),
    url,
    admin: (sql) => admin(sql),
    async useCert(cert) {
      await admin(`ALTER SYSTEM SET ssl_cert_file = '${join(dir, `${cert}.crt`)}'`);
      await admin(`ALTER SYSTEM SET ssl_key_file = '${join(dir, `${cert}.key`)}'`);
      await admin('SELECT pg_reload_conf()');
      await until(`the server presents ${cert}`, async () => (await presented(url(), caText)) === ALT_NAMES[cert]);
    },
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    },
  };
}

/** The cluster's system user (owner of its data directory) and its pg_hba.conf. */
async function clusterOwner(plainUrl: string): Promise<{ uid: number; gid: number; hbaFile: string }> {
  const client = new pg.Client({ connectionString: plainUrl, ssl: false });
  await client.connect();
  try {
    const { rows } = await client.query<{ data: string; hba: string }>(
      "SELECT current_setting('data_directory') AS data, current_setting('hba_file') AS hba",
    );
    const { uid, gid } = await stat(rows[0]!.data);
    return { uid, gid, hbaFile: rows[0]!.hba };
  } finally {
    await client.end();
  }
}

async function openssl(dir: string, args: string[]): Promise<void> {
  await execFileAsync('openssl', args, { cwd: dir, timeout: 30_000 });
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Two CAs, and two server certificates signed by the first (one for 127.0.0.1, one for another name). */
async function makeCertificates(dir: string): Promise<void> {
  for (const ca of ['ca', 'other-ca']) {
    await openssl(dir, [
      'req', '-x509', ...EC_KEY, '-keyout', `${ca}.key`, '-out', `${ca}.crt`, '-days', '2',
      '-subj', `/CN=syncrelay test ${ca}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    ]); // prettier-ignore
  }
  for (const [cert, names] of Object.entries(ALT_NAMES)) {
    await openssl(dir, ['req', ...EC_KEY, '-keyout', `${cert}.key`, '-out', `${cert}.csr`, '-subj', `/CN=${cert}`]);
    const ext = join(dir, `${cert}.ext`);
    await writeFile(ext, `subjectAltName=${names}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
    await openssl(dir, [
      'x509', '-req', '-in', `${cert}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
      '-out', `${cert}.crt`, '-days', '2', '-extfile', ext,
    ]); // prettier-ignore
  }
}

/** The directory and the server's files to the cluster's user; keys readable by it alone. */
async function handOver(dir: string, owner: { uid: number; gid: number }): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  for (const f of ['', ...Object.keys(ALT_NAMES).flatMap((c) => [`${c}.crt`, `${c}.key`])]) {
    const path = join(dir, f);
    if (asRoot) await chown(path, owner.uid, owner.gid);
    if (f.endsWith('.key')) await chmod(path, 0o600);
  }
  await chmod(dir, 0o755);
}

async function refusesPlain(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, ssl: false });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return false;
  } catch (err) {
    return (err as { code?: string }).code === '28000';
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The subjectAltName of the server's certificate now (chained to `ca`), or null when TLS does not connect. */
async function presented(url: string, ca: string): Promise<string | null> {
  let seen: string | null = null;
  const client = new pg.Client({
    connectionString: url,
    ssl: {
      ca,
      // Called once the chain is verified: it records the names instead of checking them.
      checkServerIdentity: (_host, cert) => {
        seen = cert.subjectaltname?.replace(/IP Address:/g, 'IP:').replace(/, /g, ',') ?? '';
        return undefined;
      },
    },
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return seen;
  } catch {
    return null;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function until(what: string, ok: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
