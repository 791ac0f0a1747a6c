/**
 * TLS to PostgreSQL with libpq's meaning of sslmode (src/db/tls.ts), against a private TLS-only
 * PostgreSQL 15 (test/helpers/tlsPostgres.ts): verify-full with the right CA migrates and runs the
 * engine, over TLS on every connection; the wrong CA, the wrong host name and plain connections are
 * refused; `require` encrypts without checking, as libpq does (node-postgres alone would verify).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { loadSettings } from '../../src/config.js';
import { openDb } from '../../src/db/open.js';
import { pgConnection, pgTlsSettings, withoutTlsParams } from '../../src/db/tls.js';
import type { Db } from '../../src/db/types.js';
import { Engine } from '../../src/engine.js';
import { ValidationError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { runTerminal } from '../helpers/engine.js';
import { startTlsPostgres, type TlsPostgres } from '../helpers/tlsPostgres.js';

const PG_BIN = process.env.SYNCRELAY_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const haveBinaries = existsSync(`${PG_BIN}/initdb`);
/** Node's codes for a certificate that does not chain to a trusted CA. */
const CERT_UNTRUSTED = /^(SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT)$/;

/** Settings as a process would load them, with the engine's test timings. */
function settingsFor(env: Record<string, string>) {
  return loadSettings({
    SYNC_UNIT_RUNNING_LEASE_SECONDS: '2',
    SYNC_RECONCILE_INTERVAL_SECONDS: '1',
    SYNC_DISPATCH_REDISPATCH_COUNTDOWN: '1',
    ...env,
  });
}

/** Opens the database as syncrelay would and runs one statement; the db is closed again. */
async function connectWith(env: Record<string, string>): Promise<boolean> {
  const db = await openDb(settingsFor(env), { poolSize: 1, applicationName: 'syncrelay-test-tls' });
  try {
    const { rows } = await db.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
    return rows[0]!.ssl;
  } finally {
    await db.close();
  }
}

async function failure(p: Promise<unknown>): Promise<Error & { code?: string; field?: string }> {
  const err = await p.then(
    () => null,
    (e: unknown) => e as Error,
  );
  if (!err) throw new Error('expected a failure');
  return err;
}

describe('sslmode and the CA settings (no server)', () => {
  it('takes the TLS parameters out of the URL and keeps the rest', () => {
    expect(withoutTlsParams('postgres://u:p@h/db?sslmode=require&application_name=x&sslrootcert=/ca')).toBe(
      'postgres://u:p@h/db?application_name=x',
    );
    expect(withoutTlsParams('postgres://u:p@h/db?sslmode=require')).toBe('postgres://u:p@h/db');
    expect(withoutTlsParams('postgres://u@h/db?options=-c%20x%3Dy')).toBe('postgres://u@h/db?options=-c%20x%3Dy');
  });

  it('applies libpq precedence: the URL before PGSSLMODE / PGSSLROOTCERT; system implies verify-full', () => {
    const env = { pgSslMode: 'require' as const, pgSslRootCert: '/env-ca.pem' };
    expect(pgTlsSettings('postgres://h/db', env)).toEqual({
      mode: 'require',
      rootCert: { file: '/env-ca.pem', setting: 'PGSSLROOTCERT' },
    });
    expect(pgTlsSettings('postgres://h/db?sslmode=verify-ca&sslrootcert=/url-ca.pem', env)).toEqual({
      mode: 'verify-ca',
      rootCert: { file: '/url-ca.pem', setting: 'DATABASE_URL sslrootcert' },
    });
    expect(pgTlsSettings('postgres://h/db', {})).toEqual({ mode: 'disable' });
    expect(pgTlsSettings('postgres://h/db?sslrootcert=system', {})).toEqual({
      mode: 'verify-full',
      rootCert: 'system',
    });
  });

  it('refuses what it cannot honour, naming the setting and never echoing the URL', () => {
    const url = 'postgres://u:s3cret-pw@h/db';
    const cases: [Record<string, string>, string][] = [
      [{ DATABASE_URL: `${url}?sslmode=prefer` }, 'DATABASE_URL sslmode'],
      [{ DATABASE_URL: url, PGSSLMODE: 'allow' }, 'PGSSLMODE'],
      [{ DATABASE_URL: url, PGSSLMODE: 'verify' }, 'PGSSLMODE'],
      [{ DATABASE_URL: `${url}?ssl=true` }, 'DATABASE_URL'],
      [{ DATABASE_URL: `${url}?sslmode=require&sslrootcert=system` }, 'DATABASE_URL sslmode'],
      [{ DATABASE_URL: url, PGSSLROOTCERT: '/ca.pem' }, 'PGSSLROOTCERT'],
    ];
    for (const [env, field] of cases) {
      let err: unknown;
      try {
        loadSettings(env);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(env)).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe(field);
      expect((err as Error).message).not.toContain('s3cret-pw');
    }
  });

  it('a missing CA file is a start-up error naming its setting, not the password', async () => {
    const url = 'postgres://u:s3cret-pw@127.0.0.1:1/db';
    for (const [env, field] of [
      [{ DATABASE_URL: `${url}?sslmode=verify-full`, PGSSLROOTCERT: '/nonexistent/ca.pem' }, 'PGSSLROOTCERT'],
      [{ DATABASE_URL: `${url}?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem` }, 'DATABASE_URL sslrootcert'],
    ] as const) {
      const err = await failure(openDb(settingsFor(env)));
      expect(err).toBeInstanceOf(ValidationError);
      expect(err.field).toBe(field);
      expect(err.message).toMatch(/cannot read \/nonexistent\/ca\.pem \(ENOENT\)/);
      expect(err.message).not.toContain('s3cret-pw');
    }
  });

  it('verify-ca and verify-full without any CA are refused (libpq has no fallback to public CAs)', async () => {
    const home = await mkdtemp(join(tmpdir(), 'syncrelay-home-'));
    try {
      const url = 'postgres://h/db?sslmode=verify-full';
      expect(() => pgConnection(url, pgTlsSettings(url, {})!, home)).toThrow(
        /PGSSLROOTCERT: sslmode=verify-full needs a CA/,
      );
      const require = 'postgres://h/db?sslmode=require';
      expect(pgConnection(require, pgTlsSettings(require, {})!, home).ssl).toEqual({ rejectUnauthorized: false });
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!haveBinaries)('a TLS-only private PostgreSQL', () => {
  let server: TlsPostgres;

  beforeAll(async () => {
    server = await startTlsPostgres(PG_BIN);
    await server.admin('CREATE DATABASE syncrelay_tls');
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('verify-full, the right CA in PGSSLROOTCERT: migrates, runs the engine, every connection encrypted', async () => {
    const settings = settingsFor({
      DATABASE_URL: server.url('sslmode=verify-full', 'syncrelay_tls'),
      PGSSLROOTCERT: server.caFile,
    });
    const engine = await Engine.open({ settings, broker: new InProcessBroker(), logger: silentLogger() });
    try {
      const integration = await engine.createIntegration({
        orgId: 'org-tls',
        provider: 'synthetic',
        name: 'tls',
        sources: ['s1'],
        datasets: ['work-items'],
        config: { itemsPerDay: 2 },
      });
      engine.startWorker({ concurrency: 2 });
      await engine.startReconciler({ scheduler: false });
      const run = await engine.trigger({
        orgId: 'org-tls',
        integrationId: integration.id,
        mode: 'incremental',
        triggeredBy: 'manual',
      });
      expect(await runTerminal(engine.db, run.syncRunId, 30_000)).toBe('success');
      expect(await plainSessions(engine.db)).toEqual([]);
    } finally {
      await engine.close();
    }
  });

  it('verify-full with another CA (the URL’s sslrootcert) fails on the certificate', async () => {
    const err = await failure(
      connectWith({ DATABASE_URL: server.url(`sslmode=verify-full&sslrootcert=${server.otherCaFile}`) }),
    );
    expect(err.code).toMatch(CERT_UNTRUSTED);
  });

  it('require without a CA encrypts without checking (as libpq); node-postgres alone would verify', async () => {
    expect(await connectWith({ DATABASE_URL: server.url('sslmode=require') })).toBe(true);
    const direct = new pg.Client({ connectionString: server.url('sslmode=require') });
    const err = await failure(direct.connect().finally(() => direct.end().catch(() => undefined)));
    expect(err.code).toMatch(CERT_UNTRUSTED);
  });

  it('require with a CA checks the chain like verify-ca', async () => {
    expect(await connectWith({ DATABASE_URL: server.url('sslmode=require'), PGSSLROOTCERT: server.caFile })).toBe(true);
    const err = await failure(
      connectWith({ DATABASE_URL: server.url('sslmode=require'), PGSSLROOTCERT: server.otherCaFile }),
    );
    expect(err.code).toMatch(CERT_UNTRUSTED);
  });

  it('a plain connection (sslmode=disable, or none) is refused by the server', async () => {
    for (const query of ['sslmode=disable', '']) {
      const err = await failure(connectWith({ DATABASE_URL: server.url(query) }));
      expect(err.code).toBe('28000');
      expect(err.message).toMatch(/no encryption/);
    }
  });

  it('a certificate for another host name: verify-full refuses it, verify-ca accepts it', async () => {
    await server.useCert('elsewhere');
    try {
      const env = (mode: string) => ({ DATABASE_URL: server.url(`sslmode=${mode}`), PGSSLROOTCERT: server.caFile });
      const err = await failure(connectWith(env('verify-full')));
      expect(err.code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
      expect(await connectWith(env('verify-ca'))).toBe(true);
    } finally {
      await server.useCert('localhost');
    }
  });
});

/** This database's client sessions that are not encrypted (the pool's and the LISTEN connection). */
async function plainSessions(db: Db): Promise<string[]> {
  const { rows } = await db.query<{ app: string; ssl: boolean }>(
    `SELECT a.application_name AS app, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
      WHERE a.datname = current_database() AND a.backend_type = 'client backend'`,
  );
  expect(rows.map((r) => r.app)).toContain('syncrelay-listen');
  return rows.filter((r) => !r.ssl).map((r) => r.app);
}
