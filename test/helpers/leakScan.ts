/**
 * Leak scanning: gather everything a run exposed — log lines (at trace), API responses, the
 * `/metrics` text, every Redis key's value, every database row, the process's command line — and
 * look for a secret in it, in the forms it could take there (as is, base64 at any alignment,
 * base64url, hex, URL-encoded). A provider's test reuses this with its own canary credential.
 */
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Db } from '../../src/db/types.js';
import { createLogger } from '../../src/logger.js';

/** A distinctive secret: nothing else in a run contains its random part by chance. */
export function canarySecret(prefix = 'canary'): string {
  const random = Array.from({ length: 24 }, () => Math.floor(Math.random() * 36).toString(36)).join('');
  return `${prefix}_LeakCanary_${random}`;
}

/** The base64 characters fixed by `bytes` alone when they sit at any offset in a larger buffer. */
function base64Cores(bytes: Buffer): string[] {
  const cores: string[] = [];
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    const first = Math.ceil(k / 3);
    const last = Math.floor((k + bytes.length) / 3);
    if (last > first) cores.push(encoded.slice(first * 4, last * 4));
  }
  return cores;
}

/** The forms of `secret` a scan looks for (each long enough to be meaningful). */
export function secretForms(secret: string): Record<string, string> {
  const bytes = Buffer.from(secret, 'utf8');
  const forms: Record<string, string> = {
    raw: secret,
    hex: bytes.toString('hex'),
    HEX: bytes.toString('hex').toUpperCase(),
    uri: encodeURIComponent(secret),
    json: JSON.stringify(secret).slice(1, -1),
  };
  base64Cores(bytes).forEach((core, k) => {
    forms[`base64@${k}`] = core;
    forms[`base64url@${k}`] = core.replace(/\+/g, '-').replace(/\//g, '_');
  });
  return forms;
}

export interface Leak {
  /** Where it was found (`logs`, `redis:<key>`, `response:<n> PUT /…`, …). */
  source: string;
  /** Which form of the secret. */
  form: string;
}

/** Every (source, form) where a form of `secret` occurs. */
export function findLeaks(secret: string, sources: Readonly<Record<string, string>>): Leak[] {
  const forms = secretForms(secret);
  const leaks: Leak[] = [];
  for (const [source, text] of Object.entries(sources)) {
    for (const [form, value] of Object.entries(forms)) if (text.includes(value)) leaks.push({ source, form });
  }
  return leaks;
}

/** A logger (the engine's own options and redaction) writing JSON lines to memory. */
export function memoryLogger(level = 'trace'): { logger: Logger; text: () => string; lines: () => number } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger(level, 'syncrelay', stream);
  return { logger, text: () => chunks.join(''), lines: () => chunks.length };
}

/** Every key matching `match` with its value, whatever its type, as one text per key. */
export async function dumpRedis(redisUrl: string, match: string): Promise<Record<string, string>> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const out: Record<string, string> = {};
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 500);
      cursor = next;
      for (const key of keys) out[`redis:${key}`] = `${key} ${await redisValue(redis, key)}`;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return out;
}

async function redisValue(redis: Redis, key: string): Promise<string> {
  const type = await redis.type(key);
  switch (type) {
    case 'string':
      return (await redis.getBuffer(key))?.toString('latin1') ?? '';
    case 'hash':
      return JSON.stringify(await redis.hgetall(key));
    case 'list':
      return JSON.stringify(await redis.lrange(key, 0, -1));
    case 'set':
      return JSON.stringify(await redis.smembers(key));
    case 'zset':
      return JSON.stringify(await redis.zrange(key, '0', '-1', 'WITHSCORES'));
    case 'stream':
      return JSON.stringify(await redis.xrange(key, '-', '+'));
    case 'none':
      return '';
    default:
      return `unscanned type ${type}`;
  }
}

/** Every row of every table of the install's schema, as JSON text per table. */
export async function dumpDatabase(db: Db): Promise<Record<string, string>> {
  const { rows: tables } = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name`,
    [db.schema.name],
  );
  const out: Record<string, string> = {};
  for (const { name } of tables) {
    const { rows } = await db.query<{ dump: string | null }>(
      `SELECT json_agg(row_to_json(t))::text AS dump FROM ${db.schema.table(name)} t`,
    );
    out[`db:${name}`] = rows[0]?.dump ?? '';
  }
  return out;
}

/** This process's command line as the system shows it to other users (`/proc/self/cmdline`), and argv. */
export function processCommandLine(): Record<string, string> {
  let proc = '';
  try {
    proc = readFileSync('/proc/self/cmdline', 'latin1').replace(/\0/g, ' ');
  } catch {
    // Not Linux: argv is what there is.
  }
  return { 'process:cmdline': proc, 'process:argv': [...process.execArgv, ...process.argv].join(' ') };
}

/** Collects every answer of a run: `call` fetches and records status, headers and body text. */
export class ResponseLog {
  private readonly entries: string[] = [];

  async call(url: string, init: RequestInit = {}): Promise<{ status: number; text: string; json: unknown }> {
    const res = await fetch(url, init);
    const text = await res.text();
    const headers = JSON.stringify(Object.fromEntries(res.headers.entries()));
    this.entries.push(`${init.method ?? 'GET'} ${url} ${res.status} ${headers}\n${text}`);
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // not JSON
    }
    return { status: res.status, text, json };
  }

  get count(): number {
    return this.entries.length;
  }

  sources(): Record<string, string> {
    return Object.fromEntries(this.entries.map((e, n) => [`response:${n} ${e.split('\n')[0]!.slice(0, 80)}`, e]));
  }
}
