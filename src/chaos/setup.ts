/**
 * What a chaos run sets up and takes down again: its database, its private PostgreSQL cluster,
 * PgBouncer and Redis (if asked), the partition namespace (if permitted), the control engine that
 * triggers runs, and the queue keys.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { InProcessBroker } from '../broker/inprocess.js';
import { loadSettings } from '../config.js';
import { PgDb } from '../db/pg.js';
import { DbSchema } from '../db/schema.js';
import { Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import { silentLogger } from '../logger.js';
import { createDatabase, databaseUrl, dropDatabase, prepareDatabase } from './database.js';
import { PartitionableNetwork, probeNetns, removeStaleNamespaces } from './netns.js';
import {
  CHILD_SETTINGS,
  PG_FAULTS,
  POOLER_FAULTS,
  providerSettings,
  REDIS_FAULTS,
  type ChaosOptions,
  type FaultKind,
} from './options.js';
import { PrivatePgBouncer } from './pgbouncer.js';
import { PrivatePostgres } from './postgres.js';
import { PrivateRedis } from './redis.js';
import { startTarget } from './targets/index.js';
import type { ChaosTarget } from './targets/target.js';

export interface Names {
  tag: string;
  orgId: string;
  database: string;
  queuePrefix: string;
  /** application_name of this run's engine connections (LIKE pattern: `…-engine-%`). */
  enginePrefix: string;
}

export function makeNames(): Names {
  const tag = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  return {
    tag,
    orgId: `chaos-${tag}`,
    database: `syncrelay_chaos_${Date.now()}_${randomBytes(3).toString('hex')}`,
    queuePrefix: `syncrelay-chaos-${tag}`,
    enginePrefix: `syncrelay-chaos-${tag}-engine-`,
  };
}

/** The kinds that will run, and why the others will not (an explicit request that cannot run is refused). */
export async function resolveFaults(
  opts: ChaosOptions,
): Promise<{ kinds: FaultKind[]; skipped: Partial<Record<FaultKind, string>> }> {
  const kinds: FaultKind[] = [];
  const skipped: Partial<Record<FaultKind, string>> = {};
  for (const kind of opts.faults) {
    if (REDIS_FAULTS.includes(kind) && !opts.redisServer) {
      const why = 'needs --redis-server PATH (the chaos command only restarts or flushes a Redis it started itself)';
      if (opts.faultsExplicit) throw new ValidationError('--faults', `${kind} ${why}`);
      skipped[kind] = why;
      continue;
    }
    if (PG_FAULTS.includes(kind) && !opts.pgBin) {
      const why = 'needs --pg-bin DIR (the chaos command only crashes or stops a PostgreSQL it started itself)';
      if (opts.faultsExplicit) throw new ValidationError('--faults', `${kind} ${why}`);
      skipped[kind] = why;
      continue;
    }
    if (POOLER_FAULTS.includes(kind) && !opts.pgbouncer) {
      const why = 'needs --pgbouncer PATH (the chaos command only restarts a PgBouncer it started itself)';
      if (opts.faultsExplicit) throw new ValidationError('--faults', `${kind} ${why}`);
      skipped[kind] = why;
      continue;
    }
    if (kind === 'net-partition' && opts.provider) {
      const why = "the partitioned worker's namespace cannot reach the emulator on the host's 127.0.0.1";
      if (opts.faultsExplicit) throw new ValidationError('--faults', `${kind} with --provider: ${why}`);
      skipped[kind] = why;
      continue;
    }
    if (kind === 'net-partition') {
      const probe = await probeNetns();
      if (!probe.ok) {
        skipped[kind] = probe.reason;
        continue;
      }
    }
    kinds.push(kind);
  }
  return { kinds, skipped };
}

export interface Resources {
  names: Names;
  /** The server the chaos database is created on: DATABASE_URL's, or the private cluster's. */
  serverUrl: string;
  /** The private PostgreSQL cluster (`--pg-bin`), if any. */
  pg: PrivatePostgres | null;
  /** The private PgBouncer (`--pgbouncer`) every engine process connects through, if any. */
  pooler: PrivatePgBouncer | null;
  redisUrl: string;
  redis: PrivateRedis | null;
  net: PartitionableNetwork | null;
  /** The partitioned worker's way to PostgreSQL, PgBouncer and Redis (through the namespace's forwarders). */
  netUrls: { database: string; pooler: string | null; redis: string } | null;
  control: Engine | null;
  databaseCreated: boolean;
  /** The provider's emulator (`--provider`), if any. */
  target: ChaosTarget | null;
  /** Settings every engine process gets on top of CHILD_SETTINGS (a provider run's credential key). */
  settings: Record<string, string>;
}

/** Creates and migrates the database, starts the private Redis and the namespace; the caller closes. */
export async function setUp(r: Resources, opts: ChaosOptions, withNet: boolean): Promise<void> {
  if (opts.pgBin) {
    r.pg = await PrivatePostgres.start(opts.pgBin);
    r.serverUrl = r.pg.url;
  }
  if (opts.redisServer) {
    r.redis = await PrivateRedis.start(opts.redisServer);
    r.redisUrl = r.redis.url;
  }
  if (opts.provider) {
    r.settings = providerSettings(randomBytes(32).toString('base64'));
    r.target = await startTarget(opts.provider, { seed: opts.seed, editsPerSecond: opts.editsPerSecond });
  }
  await createDatabase(r.serverUrl, r.names.database);
  r.databaseCreated = true;
  const controlUrl = databaseUrl(r.serverUrl, r.names.database, `syncrelay-chaos-${r.names.tag}-control`);
  // The children get CHILD_SETTINGS too: every process of the run names its tables in this one schema.
  const settings = loadSettings({ ...CHILD_SETTINGS, ...r.settings, DATABASE_URL: controlUrl });
  const schema = new DbSchema(settings.schema);
  await prepareDatabase(databaseUrl(r.serverUrl, r.names.database, `syncrelay-chaos-${r.names.tag}-setup`), schema);
  if (opts.pgbouncer) r.pooler = await PrivatePgBouncer.start(opts.pgbouncer, r.serverUrl, r.names.database);
  if (withNet) await setUpNet(r);
  const db = new PgDb({ connectionString: controlUrl, max: 4, schema });
  // The control engine only plans, triggers and cancels (rows and outbox rows): it needs no broker.
  r.control = await Engine.open({
    settings,
    db,
    broker: new InProcessBroker(),
    logger: silentLogger(),
    migrate: false,
  });
}

/** The namespace of the partitioned worker, with forwarders to PostgreSQL, Redis and the PgBouncer if any. */
async function setUpNet(r: Resources): Promise<void> {
  await removeStaleNamespaces();
  const pg = new URL(r.serverUrl);
  const redis = new URL(r.redisUrl);
  const pooler = r.pooler ? new URL(r.pooler.clientUrl()) : null;
  const { net, ports } = await PartitionableNetwork.create([
    { host: pg.hostname, port: Number(pg.port || 5432) },
    { host: redis.hostname, port: Number(redis.port || 6379) },
    ...(pooler ? [{ host: pooler.hostname, port: Number(pooler.port) }] : []),
  ]);
  r.net = net;
  const viaNet = (raw: string, port: number) => {
    const u = new URL(raw);
    u.hostname = net.hostAddress;
    u.port = String(port);
    return u.toString();
  };
  r.netUrls = {
    database: viaNet(r.serverUrl, ports[0]!),
    redis: viaNet(r.redisUrl, ports[1]!),
    pooler: r.pooler ? viaNet(r.pooler.clientUrl(), ports[2]!) : null,
  };
}

/** Takes down everything `setUp` made, whatever state it is in; never throws. */
export async function tearDown(r: Resources, keep: boolean): Promise<void> {
  const quietly = (p: Promise<unknown> | undefined) => p?.catch(() => undefined);
  if (r.control) {
    const db = r.control.db;
    await quietly(r.control.close());
    await quietly(db.close());
    await quietly(r.control.ctx.broker.close());
  }
  await quietly(r.net?.close());
  await quietly(r.target?.close());
  await quietly(r.pooler?.stop());
  if (r.redis) await quietly(r.redis.stop());
  else await quietly(deleteQueueKeys(r.redisUrl, r.names.queuePrefix));
  // A private cluster goes as a whole (server stopped, directory removed); --keep is refused with it.
  if (r.pg) await quietly(r.pg.stop());
  else if (r.databaseCreated && !keep) await quietly(dropDatabase(r.serverUrl, r.names.database));
}

/** Removes this run's own queue keys (`<prefix>:*`) from a Redis the command did not start. */
async function deleteQueueKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 3000 });
  redis.on('error', () => undefined);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
