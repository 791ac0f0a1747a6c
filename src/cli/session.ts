/**
 * What every command opens: validated settings, a logger on stderr, the embedded-database lock
 * and an Engine; and closes again, in reverse order.
 */
import { existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { InProcessBroker } from '../broker/inprocess.js';
import { loadSettings, type ResolvedSettings } from '../config.js';
import { ensurePrivateDataDir } from '../db/dataDir.js';
import { openDb } from '../db/open.js';
import type { Db } from '../db/types.js';
import { Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import { createLogger } from '../logger.js';
import { CliError, note } from './output.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Settings from the environment (validated: a bad value throws naming it), then `overrides`. */
export function resolveSettings(overrides: Partial<ResolvedSettings> = {}): ResolvedSettings {
  return loadSettings(process.env, overrides);
}

/**
 * JSON logs on stderr: `warn` for one-shot commands, `info` for services, unless
 * SYNCRELAY_LOG_LEVEL says otherwise.
 */
export function cliLogger(longRunning: boolean): Logger {
  const level = process.env.SYNCRELAY_LOG_LEVEL || (longRunning ? 'info' : 'warn');
  if (!LOG_LEVELS.includes(level)) {
    throw new ValidationError(
      'SYNCRELAY_LOG_LEVEL',
      `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`,
    );
  }
  return createLogger(level);
}

/** Where the data lives, for people (passwords masked): the database and the schema of the tables. */
export function describeDatabase(settings: ResolvedSettings): string {
  const where = settings.databaseUrl
    ? `PostgreSQL at ${maskUrl(settings.databaseUrl)}`
    : `PGlite (embedded PostgreSQL) in ${resolve(settings.dataDir)}`;
  return `${where}, schema ${settings.schema}`;
}

export function describeBroker(settings: ResolvedSettings): string {
  return settings.redisUrl
    ? `BullMQ on Redis at ${maskUrl(settings.redisUrl)} (prefix ${settings.queuePrefix})`
    : 'in-process';
}

function maskUrl(raw: string): string {
  const url = new URL(raw);
  if (url.password) url.password = '***';
  return url.toString();
}

/**
 * PGlite has no lock of its own: a second process opening the same directory would see and write
 * a diverging copy. The CLI keeps `<dataDir>/syncrelay.lock` with its pid while it has the
 * database open, takes over a lock whose process is gone, and returns the release function. The
 * directory is made (or tightened to) mode 0700 first; one that cannot be is refused.
 */
export function lockEmbeddedDb(dataDir: string): () => void {
  const dir = resolve(dataDir);
  if (ensurePrivateDataDir(dir) === 'tightened') {
    note(`syncrelay: the data directory ${dir} was open to other users; it is now mode 0700 (owner only)`);
  }
  const file = join(dir, 'syncrelay.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      const release = () => releaseLock(file);
      process.once('exit', release);
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = readHolder(file);
      if (holder !== null && holder !== process.pid && isAlive(holder)) {
        throw new CliError(
          `the embedded database in ${dir} is in use by process ${holder}; ` +
            'stop it first, or set DATABASE_URL to share a PostgreSQL server',
        );
      }
      removeIfPresent(file);
    }
  }
  throw new CliError(`could not lock the embedded database in ${dir}`);
}

function releaseLock(file: string): void {
  if (readHolder(file) === process.pid) removeIfPresent(file);
}

function readHolder(file: string): number | null {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function removeIfPresent(file: string): void {
  try {
    if (existsSync(file)) unlinkSync(file);
  } catch {
    // Another process removed it first.
  }
}

export interface SessionOptions {
  /** Services log at info, one-shot commands at warn. @default false */
  longRunning?: boolean;
  /**
   * Whether the command publishes or consumes tasks. Commands that only read or write rows get
   * an unused in-process broker, so they never need Redis. @default false
   */
  usesBroker?: boolean;
  /** Applied over the environment's settings. */
  overrides?: Partial<ResolvedSettings>;
  /**
   * PostgreSQL pool size unless SYNCRELAY_DB_POOL_SIZE sets it. @default 2 for one-shot commands,
   * 10 for services (a worker's follows its concurrency: src/worker/poolSize.ts)
   */
  poolSize?: number;
  /** @default a new logger (see cliLogger) */
  logger?: Logger;
  /** Checks the settings before anything is opened (throws to refuse). */
  check?: (settings: ResolvedSettings) => void;
  /** Refuse to open when stored credentials match no configured key. @default true */
  checkSecretKeys?: boolean;
}

export interface Session {
  engine: Engine;
  settings: ResolvedSettings;
  logger: Logger;
  /** Closes the engine (gracefully), the placeholder broker and the lock; safe twice. */
  close(): Promise<void>;
}

/** Validates settings, takes the embedded lock if needed, opens (and migrates) the engine. */
export async function openSession(opts: SessionOptions = {}): Promise<Session> {
  const settings = resolveSettings(opts.overrides);
  opts.check?.(settings);
  const logger = opts.logger ?? cliLogger(opts.longRunning ?? false);
  const release = settings.databaseUrl ? () => undefined : lockEmbeddedDb(settings.dataDir);
  const placeholder = opts.usesBroker ? undefined : new InProcessBroker();
  let db: Db | undefined;
  let engine: Engine;
  try {
    // Opened here, not by the engine, so the "no LISTEN, polling only" warning reaches the logger.
    db = await openDb(settings, {
      poolSize: settings.dbPoolSize ?? opts.poolSize ?? (opts.longRunning ? 10 : 2),
      logger,
    });
    engine = await Engine.open({ settings, logger, db, broker: placeholder, checkSecretKeys: opts.checkSecretKeys });
  } catch (err) {
    await db?.close();
    await placeholder?.close();
    release();
    throw err;
  }
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      try {
        await engine.close();
        await db.close();
        await placeholder?.close();
      } finally {
        release();
        logger.flush();
      }
    })());
  return { engine, settings, logger, close };
}

/** Opens a session, runs `fn`, and closes the session whatever happens. */
export async function withSession<T>(opts: SessionOptions, fn: (s: Session) => Promise<T>): Promise<T> {
  const session = await openSession(opts);
  try {
    return await fn(session);
  } finally {
    await session.close();
  }
}

/** Separate processes cannot share the embedded database or the in-process broker. */
export function requireSharedInfrastructure(settings: ResolvedSettings, command: string): void {
  const why =
    `\`syncrelay ${command}\` runs as its own process, which needs shared infrastructure; ` +
    'use `syncrelay start` to run everything in one process on the embedded defaults';
  if (!settings.redisUrl) throw new ValidationError('REDIS_URL', `is required: ${why}`);
  if (!settings.databaseUrl) throw new ValidationError('DATABASE_URL', `is required: ${why}`);
}
