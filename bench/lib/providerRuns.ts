/**
 * A provider benchmark's engine (its own database and queue prefix, a worker and the reconciler in
 * this process, the provider writing through the normalized sink), its integrations against the
 * emulator, and its backfills of the emulator's whole span.
 */
import type { Db } from '../../src/db/types.js';
import { Engine } from '../../src/engine.js';
import { createLogger } from '../../src/logger.js';
import { OutboundPolicy } from '../../src/providers/kit/outbound.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { openBroker, providerBenchSettings } from './engine.js';
import { benchPrefix, createBenchDatabase } from './pg.js';
import type { BenchEmulator, ProviderBench } from './providerBench.js';
import { deletePrefix } from './redis.js';
import { runTerminal } from './terminal.js';
import type { BenchOptions } from './types.js';

const DAY_MS = 86_400_000;

export type Ctx = { engine: Engine; db: Db; opts: BenchOptions; bench: ProviderBench };

export interface Phase {
  requests: number;
  wallMs: number;
  status: string;
  units: number;
  carried: number;
}

/** Runs `fn` on an engine of its own for `bench`, dropping the database and queues afterwards. */
export async function withProviderEngine<T>(
  bench: ProviderBench,
  opts: BenchOptions,
  fn: (c: Ctx) => Promise<T>,
): Promise<T> {
  const b = await createBenchDatabase(bench.name);
  const prefix = benchPrefix(bench.name);
  const broker = openBroker(prefix);
  const settings = providerBenchSettings(b.url, prefix);
  const engine = await Engine.open({
    settings,
    db: b.db,
    broker,
    migrate: false,
    registry: new ProviderRegistry().register(
      bench.provider(new OutboundPolicy(settings.providerOutbound)),
      normalizedSink(b.db),
    ),
    logger: createLogger(process.env.SYNCRELAY_LOG_LEVEL ?? 'error', 'syncrelay-bench'),
  });
  try {
    engine.startWorker({ concurrency: bench.concurrency ?? 8 });
    await engine.startReconciler({ id: `bench-${bench.name}`, scheduler: false });
    return await fn({ engine, db: b.db, opts, bench });
  } finally {
    await engine.close();
    await broker.close();
    await deletePrefix(prefix);
    await b.drop();
  }
}

/** The organisation of the integration tagged `tag`. */
export function orgOf(c: Ctx, tag: string): string {
  return `org-bench-${c.bench.name}-${tag}`;
}

/** An integration of `datasets` over every source of the emulator; returns its id. */
export async function integrate(c: Ctx, emu: BenchEmulator, tag: string, datasets: readonly string[]) {
  const integration = await c.engine.createIntegration({
    orgId: orgOf(c, tag),
    provider: c.bench.name,
    name: `bench-${tag}`,
    sources: emu.sources,
    datasets: [...datasets],
    config: emu.config,
    credential: emu.token,
  });
  return integration.id;
}

/** One backfill of the emulator's whole span; the requests it needed are the 2xx answers it added. */
export async function backfill(
  c: Ctx,
  emu: BenchEmulator,
  integrationId: string,
  label: string,
  datasets?: string[],
): Promise<Phase> {
  const { rows } = await c.db.query<{ org_id: string }>(
    `SELECT org_id FROM ${c.db.schema.integrations} WHERE id = $1`,
    [integrationId],
  );
  const now = Date.now();
  const since = new Date(Math.floor((now - (c.bench.days + 1) * DAY_MS) / DAY_MS) * DAY_MS);
  const okBefore = emu.ok();
  const started = performance.now();
  const run = await c.engine.trigger({
    orgId: rows[0]!.org_id,
    integrationId,
    mode: 'backfill',
    triggeredBy: 'api',
    since,
    before: new Date(now + 60_000),
    ...(datasets ? { datasets } : {}),
  });
  c.opts.note(`${c.bench.name}: ${label}: ${run.units} units`);
  const status = await runTerminal(c.db, run.syncRunId, {
    label: `${c.bench.name}: ${label}`,
    timeoutMs: 1_800_000,
    noteEveryMs: 10_000,
    note: c.opts.note,
  });
  const wallMs = performance.now() - started;
  const carried = await c.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${c.db.schema.sync_run_units}
      WHERE sync_run_id = $1 AND cardinality(carried_datasets) > 0`,
    [run.syncRunId],
  );
  return { requests: emu.ok() - okBefore, wallMs, status, units: run.units, carried: carried.rows[0]!.n };
}
