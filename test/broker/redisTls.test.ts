/**
 * REDIS_URL=rediss://user:password@host:port/db with REDIS_TLS_CA_FILE, against a private
 * redis-server that listens on TLS only, with an ACL user holding the minimal ACL that
 * docs/operations.md gives (its key pattern, no dangerous commands but INFO) and the default user off.
 */
import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMqBroker, type BullMqBrokerOptions } from '../../src/broker/bullmq.js';
import { redisErrorLog } from '../../src/broker/open.js';
import { loadSettings } from '../../src/config.js';
import { Engine } from '../../src/engine.js';
import { BrokerError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { runTerminal, testSettings } from '../helpers/engine.js';
import { createTestDatabase } from '../helpers/pg.js';
import { brokerConformance, Inbox, message } from './conformance.js';
import { TlsRedisServer } from './tlsRedisServer.js';

const PREFIX = `srtls${randomBytes(3).toString('hex')}`;
/** URL-special characters on purpose: they must survive REDIS_URL's percent-encoding. */
const PASSWORD = `Pw-${randomBytes(6).toString('hex')}@:/x`;
const WRONG_PASSWORD = `Wrong-${randomBytes(6).toString('hex')}`;
const ADMIN_PASSWORD = `Admin-${randomBytes(6).toString('hex')}`;
/** A database other than 0, as `rediss://…/3`. */
const DB = 3;
/** The minimal ACL of docs/operations.md for the key prefix PREFIX. */
const MINIMAL_ACL =
  `~${PREFIX}:* resetchannels -@all +@read +@write +@keyspace +@scripting +@transaction ` +
  '+@blocking +@connection -@dangerous +info';

let server: TlsRedisServer;
let admin: Redis;

beforeAll(async () => {
  server = await TlsRedisServer.start({
    users: [`user syncrelay on >${PASSWORD} ${MINIMAL_ACL}`, `user admin on >${ADMIN_PASSWORD} ~* &* +@all`],
  });
  admin = new Redis(server.url('admin', ADMIN_PASSWORD, DB), { tls: { ca: server.ca }, maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

async function dropKeys(): Promise<void> {
  const keys = await admin.keys(`${PREFIX}:*`);
  if (keys.length > 0) await admin.del(...keys);
}

/** Commands and keys the ACL refused (failed logins, which the wrong-password tests make, aside). */
async function aclDenials(): Promise<string[]> {
  const log = (await admin.call('ACL', 'LOG')) as unknown[][];
  return log.filter((entry) => entry[entry.indexOf('reason') + 1] !== 'auth').map((entry) => inspect(entry));
}

function tlsBroker(overrides: Partial<BullMqBrokerOptions> = {}): BullMqBroker {
  return new BullMqBroker({
    redisUrl: server.url('syncrelay', PASSWORD, DB),
    tls: { ca: server.ca },
    prefix: PREFIX,
    ...overrides,
  });
}

/** Everything an error shows when logged or inspected: message, properties, causes. */
function everything(err: unknown): string {
  return inspect(err, { depth: 10, showHidden: false }) + JSON.stringify(err, Object.getOwnPropertyNames(err));
}

describe('Redis over TLS with an ACL user', () => {
  brokerConformance('bullmq over TLS, minimal ACL', ({ onError }) => ({
    broker: tlsBroker({ onError }),
    cleanup: dropKeys,
  }));

  it('the conformance suite needed no command or key outside the minimal ACL', async () => {
    expect(await aclDenials()).toEqual([]);
  });

  it('the server has no plain port, and a plain redis:// client gets nothing through', async () => {
    expect(await admin.config('GET', 'port')).toEqual(['port', '0']);
    const plain = new BullMqBroker({
      redisUrl: `redis://syncrelay:${encodeURIComponent(PASSWORD)}@127.0.0.1:${server.port}`,
      prefix: PREFIX,
      publishTimeoutMs: 1000,
    });
    try {
      await expect(plain.publish([message(1)])).rejects.toBeInstanceOf(BrokerError);
    } finally {
      await plain.close();
    }
  });

  it('a wrong password fails, and no error shows it', async () => {
    const seen: Error[] = [];
    const broker = tlsBroker({
      redisUrl: server.url('syncrelay', WRONG_PASSWORD),
      publishTimeoutMs: 2000,
      onRedisError: (err) => seen.push(err),
    });
    const err = await broker.publish([message(1)]).catch((e: unknown) => e);
    await broker.close();
    expect(err).toBeInstanceOf(BrokerError);
    const shown = everything(err) + seen.map(everything).join('\n');
    expect(shown).toMatch(/WRONGPASS/);
    expect(shown).not.toContain(WRONG_PASSWORD);
    expect(shown).not.toContain(encodeURIComponent(WRONG_PASSWORD));
  });

  it('logs a connection error without the password', async () => {
    const lines: string[] = [];
    const logger = silentLogger();
    logger.warn = ((obj: unknown, msg: string) => void lines.push(JSON.stringify(obj) + msg)) as typeof logger.warn;
    const broker = tlsBroker({
      redisUrl: server.url('syncrelay', WRONG_PASSWORD),
      publishTimeoutMs: 2000,
      onRedisError: redisErrorLog(logger),
    });
    await broker.publish([message(1)]).catch(() => undefined);
    await broker.close();
    expect(lines.join('\n')).toMatch(/WRONGPASS/);
    expect(lines.join('\n')).not.toContain(WRONG_PASSWORD);
  });

  it('a server certificate from another CA fails as a certificate error', async () => {
    const broker = tlsBroker({ tls: { ca: server.otherCa }, publishTimeoutMs: 2000 });
    const err = await broker.publish([message(1)]).catch((e: unknown) => e);
    await broker.close();
    expect(err).toBeInstanceOf(BrokerError);
    const cause = (err as BrokerError).cause as NodeJS.ErrnoException | undefined;
    expect(`${cause?.code ?? ''} ${cause?.message ?? ''}`).toMatch(/CERT|certificate/i);
  });

  it("every connection of a broker and its consumer is the ACL user's", async () => {
    const broker = tlsBroker();
    const inbox = new Inbox();
    broker.consume(inbox.handler, { concurrency: 2 });
    await broker.publish([message(1), message(2)]);
    await inbox.until(() => inbox.received.length === 2, 'both messages');
    const clients = (await admin.client('LIST')) as string;
    const ours = clients.split('\n').filter((line) => / user=syncrelay /.test(line));
    // The producer, the worker's connection and its blocking copy.
    expect(ours.length).toBeGreaterThanOrEqual(3);
    await broker.close();
    await dropKeys();
  });

  it('REDIS_TLS_CA_FILE is read at start; an engine runs a backfill through this Redis', async () => {
    const env = { REDIS_URL: server.url('syncrelay', PASSWORD, DB), REDIS_TLS_CA_FILE: server.caFile };
    const fromEnv = loadSettings(env);
    const t = await createTestDatabase();
    const engine = await Engine.open({
      settings: testSettings({ ...fromEnv, queuePrefix: PREFIX }),
      db: t.db,
      logger: silentLogger(),
      migrate: false,
    });
    try {
      const integ = await engine.createIntegration({
        orgId: 'org-tls',
        provider: 'synthetic',
        name: 'tls',
        sources: ['s1'],
        datasets: ['teams', 'work-items'],
        config: { itemsPerDay: 1, latencyMs: 1 },
      });
      engine.startWorker({ concurrency: 2 });
      await engine.startReconciler({ scheduler: false });
      const { syncRunId } = await engine.trigger({
        orgId: 'org-tls',
        integrationId: integ.id,
        mode: 'backfill',
        triggeredBy: 'backfill',
        since: new Date('2026-01-01T00:00:00Z'),
        before: new Date('2026-01-08T00:00:00Z'),
      });
      expect(await runTerminal(t.db, syncRunId)).toBe('success');
    } finally {
      await engine.close();
      await t.drop();
      await dropKeys();
    }
    expect(await aclDenials()).toEqual([]);
  });
});
