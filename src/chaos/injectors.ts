/**
 * One injector per fault kind. Each acts only on what this command started — its child processes
 * (by pid), its private Redis, PostgreSQL cluster and PgBouncer, its namespace's link, and backends whose
 * application_name marks them as this run's engine connections — and returns what it did, or null when it
 * found nothing to act on at that moment (the fault is then counted as missed, not injected).
 */
import type { Db } from '../db/types.js';
import type { Cluster } from './cluster.js';
import type { CommitLedger } from './commitLedger.js';
import type { PartitionableNetwork } from './netns.js';
import { DIRECT_SUFFIX } from './database.js';
import type { PgOutage } from './outage.js';
import type { PrivatePgBouncer } from './pgbouncer.js';
import type { PrivatePostgres, StartInfo } from './postgres.js';
import { LEASE_MS, RECONCILE_INTERVAL_MS, type FaultKind } from './options.js';
import { DUPLICATE_SPAN_MS } from './flakyBroker.js';
import type { ChaosChild } from './processes.js';
import { RELAY_PAUSE_POINTS } from './protocol.js';
import type { Rng } from './random.js';
import type { PrivateRedis } from './redis.js';

export interface HeldUnit {
  unitId: string;
  owner: string;
}

export interface FaultRecord {
  kind: FaultKind;
  target?: string;
  /** When the fault hit (ms epoch) and when it was over (killed / resumed / healed / restarted). */
  startedAt: number;
  endedAt: number;
  /** Units the target held under a lease when the fault hit. */
  units: HeldUnit[];
  detail?: string;
}

export interface FaultContext {
  cluster: Cluster;
  db: Db;
  rng: Rng;
  redis: PrivateRedis | null;
  /** The private PostgreSQL cluster (`--pg-bin`), if any. */
  pg: PrivatePostgres | null;
  /** The private PgBouncer (`--pgbouncer`) the engine processes connect through, if any. */
  pooler: PrivatePgBouncer | null;
  /** Set while a PostgreSQL fault has the cluster down. */
  outage: PgOutage;
  /** What was committed right before each PostgreSQL fault (checked afterwards). */
  ledger: CommitLedger;
  net: PartitionableNetwork | null;
  /** LIKE pattern of this run's engine connections' application_name. */
  engineAppNames: string;
  signal: AbortSignal;
}

type Injector = (f: FaultContext) => Promise<FaultRecord | null>;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** How long a frozen / partitioned worker stays cut off at most: past its lease and a reconcile pass. */
const CUT_OFF_MAX_MS = LEASE_MS + RECONCILE_INTERVAL_MS + 4000;

/** Waits up to `ms` for one of `children` to hold a unit; picks among those that do (else any). */
async function pickHolding(children: () => ChaosChild[], rng: Rng, ms: number): Promise<ChaosChild | null> {
  const deadline = Date.now() + ms;
  for (;;) {
    const ready = children();
    const holding = ready.filter((c) => c.inFlight.size > 0);
    if (holding.length > 0) return rng.pick(holding);
    if (Date.now() >= deadline) return ready.length > 0 ? rng.pick(ready) : null;
    await sleep(25);
  }
}

function held(c: ChaosChild): HeldUnit[] {
  return [...c.inFlight].map(([unitId, owner]) => ({ unitId, owner }));
}

/** Waits (bounded) until none of `units` is still running under the lease it was held with. */
async function waitTakenOver(db: Db, units: HeldUnit[], maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (Date.now() < deadline) {
    if (units.length === 0) return sleep(Math.min(maxMs, LEASE_MS + RECONCILE_INTERVAL_MS));
    // While PostgreSQL is down (a PostgreSQL fault at the same time) the question waits: no take-over either.
    const rows = await db
      .query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${db.schema.sync_run_units} u
           JOIN unnest($1::uuid[], $2::text[]) AS h(id, owner) ON u.id = h.id AND u.lease_owner = h.owner
          WHERE u.status = 'running'`,
        [units.map((u) => u.unitId), units.map((u) => u.owner)],
      )
      .then((r) => r.rows)
      .catch(() => null);
    if (rows && rows[0]!.n === 0) return;
    await sleep(100);
  }
}

const workerKill: Injector = async ({ cluster, rng }) => {
  const w = await pickHolding(() => cluster.availableWorkers(), rng, 3000);
  if (!w) return null;
  const units = held(w);
  const startedAt = Date.now();
  await cluster.killAndReplace(w);
  return { kind: 'worker-kill', target: `${w.name} (pid ${w.pid})`, startedAt, endedAt: startedAt, units };
};

const workerFreeze: Injector = async ({ cluster, rng, db }) => {
  const w = await pickHolding(() => cluster.availableWorkers(), rng, 3000);
  if (!w) return null;
  w.busy = true;
  const units = held(w);
  const startedAt = Date.now();
  w.signal('SIGSTOP');
  try {
    await waitTakenOver(db, units, CUT_OFF_MAX_MS);
    await sleep(rng.int(100, 600));
  } finally {
    w.signal('SIGCONT');
    w.busy = false;
  }
  return { kind: 'worker-freeze', target: `${w.name} (pid ${w.pid})`, startedAt, endedAt: Date.now(), units };
};

const netPartition: Injector = async ({ cluster, rng, db, net }) => {
  const w = cluster.partitioned;
  if (!net || !w) return null;
  const picked = await pickHolding(() => (w.available ? [w] : []), rng, 3000);
  if (!picked) return null;
  w.busy = true;
  const units = held(w);
  const startedAt = Date.now();
  await net.partition();
  try {
    await waitTakenOver(db, units, CUT_OFF_MAX_MS);
    await sleep(rng.int(100, 600));
  } finally {
    await net.heal();
    w.busy = false;
  }
  return { kind: 'net-partition', target: `${w.name} (pid ${w.pid})`, startedAt, endedAt: Date.now(), units };
};

const reconcilerKill: Injector = async ({ cluster, rng }) => {
  const candidates = cluster.availableReconcilers();
  if (candidates.length === 0) return null;
  const r = rng.pick(candidates);
  const point = rng.pick(RELAY_PAUSE_POINTS);
  r.busy = true;
  const reached = r.waitFor((e) => e.kind === 'paused-at', 15_000);
  r.send({ kind: 'pause-at', point });
  if (!(await reached)) {
    r.send({ kind: 'disarm', point });
    r.busy = false;
    return null;
  }
  const startedAt = Date.now();
  await cluster.killAndReplace(r);
  return {
    kind: 'reconciler-kill',
    target: `${r.name} (pid ${r.pid})`,
    startedAt,
    endedAt: startedAt,
    units: [],
    detail: point,
  };
};

const redisRestart: Injector = async ({ redis, rng }) => {
  if (!redis) return null;
  const startedAt = Date.now();
  const downMs = rng.int(300, 1500);
  await redis.restart(downMs);
  return {
    kind: 'redis-restart',
    target: `redis-server pid ${redis.pid ?? '?'} port ${redis.port}`,
    startedAt,
    endedAt: Date.now(),
    units: [],
    detail: `down ${downMs} ms`,
  };
};

const redisFlushAll: Injector = async ({ redis }) => {
  if (!redis) return null;
  const startedAt = Date.now();
  await redis.flushAll();
  return {
    kind: 'redis-flushall',
    target: `redis-server port ${redis.port}`,
    startedAt,
    endedAt: Date.now(),
    units: [],
  };
};

/**
 * Terminates this run's engine backends: all of one child's, or about half of everyone's. Behind the
 * PgBouncer a server connection carries the application_name of the client that last used it
 * (PgBouncer sets it on each hand-over), so it is found all the same: cut in a transaction, that
 * client's transaction aborts and PgBouncer closes its client connection; cut idle, PgBouncer only
 * drops it from the pool. The detail counts the pooled ones apart from the direct ones (LISTEN).
 */
const pgTerminate: Injector = async ({ db, rng, engineAppNames, pooler }) => {
  const { rows } = await db.query<{ pid: number; application_name: string }>(
    `SELECT pid, application_name FROM pg_stat_activity
      WHERE datname = current_database() AND application_name LIKE $1 AND pid <> pg_backend_pid()`,
    [engineAppNames],
  );
  if (rows.length === 0) return null;
  const names = [...new Set(rows.map((r) => r.application_name))];
  const oneChild = rng.next() < 0.5;
  const victimName = rng.pick(names);
  const chosen = rows
    .filter((r) => (oneChild ? r.application_name === victimName : rng.next() < 0.5))
    .map((r) => r.pid);
  if (chosen.length === 0) chosen.push(rng.pick(rows).pid);
  const startedAt = Date.now();
  // Re-checked at the moment of terminating: a pid is only ever one of ours.
  const { rows: done } = await db.query<{ ok: boolean; application_name: string }>(
    `SELECT pg_terminate_backend(pid) AS ok, application_name FROM pg_stat_activity
      WHERE pid = ANY($1::int[]) AND datname = current_database() AND application_name LIKE $2`,
    [chosen, engineAppNames],
  );
  const killed = done.filter((d) => d.ok);
  const pooled = killed.filter((d) => !d.application_name.endsWith(DIRECT_SUFFIX)).length;
  return {
    kind: 'pg-terminate',
    target: oneChild ? victimName : 'engine connections',
    startedAt,
    endedAt: Date.now(),
    units: [],
    detail: `${killed.length} backends${pooler ? ` (${pooled} PgBouncer server connections)` : ''}`,
  };
};

/** What a start after a PostgreSQL fault did, for the record. */
function startDetail(downMs: number, info: StartInfo): string {
  const recovery = info.recovered ? `crash recovery: ${info.redo ?? 'ran'}` : 'no crash recovery (clean shutdown)';
  return `down ${downMs} ms; ${recovery}`;
}

/** Units every worker holds right now (those a PostgreSQL outage takes the database away from). */
function heldByWorkers(cluster: Cluster): HeldUnit[] {
  return cluster
    .live()
    .filter((c) => c.role === 'worker')
    .flatMap(held);
}

/** Stops the private cluster with `halt`, keeps it down `downMs`, starts it again; the outage spans all of it. */
async function outageOf(
  kind: 'pg-restart' | 'pg-stop-long',
  { pg, cluster, outage, ledger, db, signal }: FaultContext,
  downMs: number,
  halt: (pg: PrivatePostgres, downMs: number, signal: AbortSignal) => Promise<StartInfo>,
): Promise<FaultRecord | null> {
  if (!pg) return null;
  await ledger.snapshot(db);
  const units = heldByWorkers(cluster);
  const startedAt = Date.now();
  outage.begin();
  let info: StartInfo;
  try {
    info = await halt(pg, downMs, signal);
  } finally {
    outage.end();
  }
  const target = `postgres pid ${pg.pid ?? '?'} port ${pg.port}`;
  return { kind, target, startedAt, endedAt: Date.now(), units, detail: startDetail(downMs, info) };
}

/** A crash: `pg_ctl stop -m immediate`, down 0.3–2 s, started again (the WAL replayed). */
const pgRestart: Injector = (ctx) =>
  outageOf('pg-restart', ctx, ctx.rng.int(300, 2000), (pg, ms, signal) => pg.crash(ms, signal));

/** A long outage: `pg_ctl stop -m fast`, down for 2–5 leases (every lease held then lapses), started again. */
const pgStopLong: Injector = (ctx) =>
  outageOf('pg-stop-long', ctx, ctx.rng.int(2 * LEASE_MS, 5 * LEASE_MS), (pg, ms, signal) => pg.stopFor(ms, signal));

/**
 * A pooler restart: SIGKILL the private PgBouncer, down 0.2–2 s, started again on the same port.
 * Every client connection and every server connection drops at once; a transaction in flight is
 * rolled back by PostgreSQL. (SIGINT would be PgBouncer's safe shutdown, which waits for every
 * transaction to end: no engine would see a transaction cut.)
 */
const pgbouncerRestart: Injector = async ({ pooler, cluster, rng, signal }) => {
  if (!pooler) return null;
  const units = heldByWorkers(cluster);
  const downMs = rng.int(200, 2000);
  const pid = pooler.pid;
  const clients = await pooler.clientConnections().catch(() => '?');
  const startedAt = Date.now();
  await pooler.restart(downMs, signal);
  return {
    kind: 'pgbouncer-restart',
    target: `pgbouncer pid ${pid ?? '?'} port ${pooler.port}`,
    startedAt,
    endedAt: Date.now(),
    units,
    detail: `SIGKILL with ${clients} client connections, down ${downMs} ms, back as pid ${pooler.pid ?? '?'}`,
  };
};

/** A fraction of every child's broker publishes fail for a few seconds. */
const publishFail: Injector = async ({ cluster, rng }) => {
  const rate = Math.round(rng.between(0.2, 0.5) * 100) / 100;
  const windowMs = rng.int(2000, 5000);
  const startedAt = Date.now();
  const set = (r: number) => cluster.live().forEach((c) => c.send({ kind: 'publish-fail-rate', rate: r }));
  set(rate);
  await sleep(windowMs);
  set(0);
  return {
    kind: 'publish-fail',
    target: 'every engine process',
    startedAt,
    endedAt: Date.now(),
    units: [],
    detail: `${rate * 100}% of publishes for ${windowMs} ms`,
  };
};

/**
 * For a few seconds every child publishes a fraction of its messages again (unit, dispatch,
 * finalize and post_sync alike): at once, while the work is likely running, and after it has
 * likely ended. The fault is over once the last copy is out.
 */
const duplicateDelivery: Injector = async ({ cluster, rng }) => {
  const rate = Math.round(rng.between(0.2, 0.5) * 100) / 100;
  const windowMs = rng.int(2000, 5000);
  const startedAt = Date.now();
  const set = (r: number) => cluster.live().forEach((c) => c.send({ kind: 'duplicate-rate', rate: r }));
  set(rate);
  await sleep(windowMs);
  set(0);
  await sleep(DUPLICATE_SPAN_MS + 200);
  return {
    kind: 'duplicate-delivery',
    target: 'every engine process',
    startedAt,
    endedAt: Date.now(),
    units: [],
    detail: `${rate * 100}% of messages published again for ${windowMs} ms`,
  };
};

export const INJECTORS: Record<FaultKind, Injector> = {
  'worker-kill': workerKill,
  'reconciler-kill': reconcilerKill,
  'redis-restart': redisRestart,
  'redis-flushall': redisFlushAll,
  'pg-terminate': pgTerminate,
  'pg-restart': pgRestart,
  'pg-stop-long': pgStopLong,
  'publish-fail': publishFail,
  'worker-freeze': workerFreeze,
  'net-partition': netPartition,
  'duplicate-delivery': duplicateDelivery,
  'pgbouncer-restart': pgbouncerRestart,
};
