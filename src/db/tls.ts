/**
 * TLS to PostgreSQL with libpq's meaning of `sslmode`, turned into node-postgres's `ssl` option.
 *
 * node-postgres does not follow libpq here: its URL parser treats `require` and `verify-ca` as
 * `verify-full` (with a warning), reads `sslrootcert` itself, and never reads PGSSLROOTCERT. So the
 * TLS parameters are taken out of DATABASE_URL, resolved here once, and handed over as `ssl`:
 *
 * - `disable` (or no sslmode anywhere): no TLS.
 * - `require`: TLS; the server's certificate is only checked when a CA is configured (then as
 *   `verify-ca`), as libpq does.
 * - `verify-ca`: TLS; the certificate must chain to the CA; the host name is not checked.
 * - `verify-full`: TLS; the certificate must chain to the CA and name the host connected to.
 * - `allow` / `prefer` are refused: syncrelay never falls back between TLS and plain connections.
 *
 * The CA: the URL's `sslrootcert`, else PGSSLROOTCERT, else `~/.postgresql/root.crt` when it exists
 * (libpq's default); `sslrootcert=system` trusts Node's CA store and implies `verify-full`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { ConnectionOptions } from 'node:tls';
import { ValidationError } from '../errors.js';
import type { PgDbOptions } from './pg.js';

export const SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** A file a setting names, and that setting (for errors). */
export interface SettingFile {
  file: string;
  setting: string;
}

/** How syncrelay reaches PostgreSQL over TLS, resolved from DATABASE_URL and PGSSLMODE / PGSSLROOTCERT. */
export interface PgTlsSettings {
  mode: SslMode;
  /** The CA; `system`: Node's trusted CAs. @default unset → `~/.postgresql/root.crt` if it exists */
  rootCert?: SettingFile | 'system';
  /** A client certificate and its key (the URL's `sslcert`, `sslkey`). @default none */
  cert?: SettingFile;
  key?: SettingFile;
}

/** URL parameters this module takes out of DATABASE_URL (node-postgres would act on them itself). */
const TAKEN = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey'];
/** node-postgres's own TLS parameters, which would override the resolved `ssl` option. */
const REFUSED = ['ssl', 'uselibpqcompat', 'sslnegotiation', 'sslcrl', 'sslcrldir', 'sslpassword'];

/** PGSSLMODE and PGSSLROOTCERT, as the settings hold them (libpq's variables; node-postgres ignores the second). */
export interface PgTlsEnv {
  pgSslMode?: SslMode | undefined;
  pgSslRootCert?: string | undefined;
}

/** The settings TLS is resolved from: the URLs (to name them in errors) and PGSSLMODE / PGSSLROOTCERT. */
export interface PgTlsSources extends PgTlsEnv {
  databaseUrl?: string | undefined;
  databaseDirectUrl?: string | undefined;
}

/** PGSSLMODE checked: one of SSL_MODES, or undefined when unset. */
export function sslModeSetting(raw: string | undefined): SslMode | undefined {
  return raw ? checkedMode(raw, 'PGSSLMODE') : undefined;
}

/** Reads the TLS settings of `url` and `env`; a bad value throws a ValidationError naming the setting. */
export function pgTlsSettings(
  url: string | undefined,
  env: PgTlsEnv,
  urlName = 'DATABASE_URL',
): PgTlsSettings | undefined {
  if (!url) return undefined;
  const params = urlParams(url);
  for (const name of REFUSED) {
    if (params.has(name)) {
      throw new ValidationError(urlName, `the parameter ${name} is not supported; use sslmode (${modeList()})`);
    }
  }
  const rootCert = rootCertOf(params.get('sslrootcert') ?? undefined, env.pgSslRootCert, urlName);
  const mode = modeOf(params.get('sslmode') ?? undefined, env.pgSslMode, rootCert, urlName);
  const cert = params.get('sslcert');
  const key = params.get('sslkey');
  return {
    mode,
    ...(rootCert ? { rootCert } : {}),
    ...(cert ? { cert: { file: cert, setting: `${urlName} sslcert` } } : {}),
    ...(key ? { key: { file: key, setting: `${urlName} sslkey` } } : {}),
  };
}

function modeList(): string {
  return SSL_MODES.join(', ');
}

function urlParams(url: string): URLSearchParams {
  const q = url.indexOf('?');
  return new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
}

function rootCertOf(
  fromUrl: string | undefined,
  fromEnv: string | undefined,
  urlName: string,
): PgTlsSettings['rootCert'] {
  if (fromUrl === 'system' || (!fromUrl && fromEnv === 'system')) return 'system';
  if (fromUrl) return { file: fromUrl, setting: `${urlName} sslrootcert` };
  if (fromEnv) return { file: fromEnv, setting: 'PGSSLROOTCERT' };
  return undefined;
}

/** The URL's sslmode, else PGSSLMODE; unset → disable (verify-full with `sslrootcert=system`). */
function modeOf(
  fromUrl: string | undefined,
  fromEnv: SslMode | undefined,
  root: PgTlsSettings['rootCert'],
  urlName: string,
): SslMode {
  const setting = fromUrl ? `${urlName} sslmode` : 'PGSSLMODE';
  const mode = fromUrl ? checkedMode(fromUrl, setting) : fromEnv;
  if (mode === undefined) {
    if (root === 'system') return 'verify-full';
    if (root) {
      throw new ValidationError(
        root.setting,
        `names a CA but no sslmode is set: add sslmode=verify-full to ${urlName}`,
      );
    }
    return 'disable';
  }
  if (root === 'system' && mode !== 'verify-full') {
    throw new ValidationError(setting, `must be verify-full with sslrootcert=system, got ${mode}`);
  }
  return mode;
}

function checkedMode(raw: string, setting: string): SslMode {
  if (raw === 'allow' || raw === 'prefer') {
    throw new ValidationError(
      setting,
      `${raw} is not supported (no fallback between TLS and plain connections): use require or disable`,
    );
  }
  if (!(SSL_MODES as readonly string[]).includes(raw)) {
    throw new ValidationError(setting, `must be one of ${modeList()}, got ${JSON.stringify(raw)}`);
  }
  return raw as SslMode;
}

/** What node-postgres is given: the URL without its TLS parameters, and the `ssl` option. */
export interface PgConnection {
  connectionString: string;
  ssl: false | ConnectionOptions;
}

/**
 * Reads the CA and client files `tls` names and builds node-postgres's `ssl` option; a file that
 * cannot be read throws a ValidationError naming its setting (never the URL: it may hold a password).
 */
export function pgConnection(url: string, tls: PgTlsSettings, home: string = homedir()): PgConnection {
  const connectionString = withoutTlsParams(url);
  if (tls.mode === 'disable') return { connectionString, ssl: false };
  const ca = caOf(tls, home);
  const ssl: ConnectionOptions = {};
  if (ca !== undefined) ssl.ca = ca;
  if (tls.cert) ssl.cert = readSetting(tls.cert);
  if (tls.key) ssl.key = readSetting(tls.key);
  // libpq's require checks the chain only when it has a CA (as verify-ca); it never checks the host.
  if (tls.mode === 'require' && ca === undefined) ssl.rejectUnauthorized = false;
  else if (tls.mode !== 'verify-full') ssl.checkServerIdentity = () => undefined;
  return { connectionString, ssl };
}

/** The CA's PEM text; undefined: none (require) or Node's own store (`system`). */
function caOf(tls: PgTlsSettings, home: string): string | undefined {
  if (tls.rootCert === 'system') return undefined;
  if (tls.rootCert) return readSetting(tls.rootCert);
  const fallback = join(home, '.postgresql', 'root.crt');
  if (existsSync(fallback)) return readSetting({ file: fallback, setting: 'the default CA (~/.postgresql/root.crt)' });
  if (tls.mode === 'require') return undefined;
  throw new ValidationError(
    'PGSSLROOTCERT',
    `sslmode=${tls.mode} needs a CA: set PGSSLROOTCERT or the URL's sslrootcert to a PEM file ` +
      `(or sslrootcert=system with verify-full for Node's trusted CAs)`,
  );
}

function readSetting(f: SettingFile): string {
  try {
    return readFileSync(f.file, 'utf8');
  } catch (cause) {
    const why = (cause as { code?: string }).code ?? 'unreadable';
    throw new ValidationError(f.setting, `cannot read ${f.file} (${why})`, { cause });
  }
}

/** `url` without the parameters this module resolves; unchanged when it has none. */
export function withoutTlsParams(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  if (!TAKEN.some((name) => params.has(name))) return url;
  for (const name of TAKEN) params.delete(name);
  const rest = params.toString();
  return rest ? `${url.slice(0, q)}?${rest}` : url.slice(0, q);
}

/** Both URLs' TLS parameters checked against PGSSLMODE / PGSSLROOTCERT (throws naming the setting). */
export function checkPgTls(s: PgTlsSources): void {
  pgTlsSettings(s.databaseUrl, s, 'DATABASE_URL');
  pgTlsSettings(s.databaseDirectUrl, s, 'DATABASE_DIRECT_URL');
}

/**
 * The pool's and the LISTEN connection's URLs without their TLS parameters, with the `ssl` option
 * each resolves to; the CA and client files are read now.
 */
export function withPgTls<T extends Pick<PgDbOptions, 'connectionString' | 'listenConnectionString'>>(
  options: T,
  sources: PgTlsSources,
  home: string = homedir(),
): T & Pick<PgDbOptions, 'ssl' | 'listenSsl'> {
  const resolve = (url: string) => {
    const name =
      url === sources.databaseDirectUrl && url !== sources.databaseUrl ? 'DATABASE_DIRECT_URL' : 'DATABASE_URL';
    return pgConnection(url, pgTlsSettings(url, sources, name)!, home);
  };
  const pool = resolve(options.connectionString);
  const out = { ...options, connectionString: pool.connectionString, ssl: pool.ssl };
  const listenUrl = options.listenConnectionString;
  if (!listenUrl) return out;
  const listen = resolve(listenUrl);
  return { ...out, listenConnectionString: listen.connectionString, listenSsl: listen.ssl };
}
