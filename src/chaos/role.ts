/**
 * A child process of `syncrelay chaos` (`syncrelay chaos-role worker|reconciler`, hidden): the same
 * engine a `syncrelay worker` / `syncrelay reconciler` runs, plus the chaos hooks of ./protocol.ts —
 * it announces the units it starts, can block at a relay fault point until it is SIGKILLed, and can
 * fail a fraction of its broker publishes or publish a fraction of its messages again. Internal: a
 * test / chaos hook, not an operator command.
 */
import { createInterface } from 'node:readline';
import { openBroker } from '../broker/open.js';
import { loadSettings } from '../config.js';
import { openDb } from '../db/open.js';
import { Engine } from '../engine.js';
import { Faults } from '../faults.js';
import { createLogger } from '../logger.js';
import { OutboundPolicy } from '../providers/kit/outbound.js';
import { builtInLimits, defaultRegistry, ProviderRegistry } from '../providers/registry.js';
import type { Provider } from '../sdk/types.js';
import { auditedSink } from './auditedSink.js';
import { chaosDeliveryHandler } from './deliveries.js';
import { FlakyBroker } from './flakyBroker.js';
import { parseCommand } from './protocol.js';
import { Rng } from './random.js';

export type ChaosRole = 'worker' | 'reconciler';

export interface RoleOptions {
  role: ChaosRole;
  /** Name recorded with reconciler passes and in logs. */
  id: string;
  concurrency: number;
  poolSize: number;
  seed: number;
}

/** Synchronous on a pipe (Linux), so the parent sees the line before the code moves on. */
function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** A provider announcing each unit it starts and ends with the lease it runs under. */
function announcing(inner: Provider): Provider {
  return {
    ...inner,
    async runUnit(ctx) {
      say(`unit-start ${ctx.unit.id} ${ctx.lease.owner}`);
      try {
        return await inner.runUnit(ctx);
      } finally {
        say(`unit-end ${ctx.unit.id} ${ctx.lease.owner}`);
      }
    },
  };
}

/**
 * The built-ins (the synthetic provider, GitHub, Linear, Jira) with their sinks, each announcing
 * its units, the providers' writes audited (./auditedSink.ts), and the handler that counts a
 * provider run's post_sync deliveries (./deliveries.ts).
 */
function announcingRegistry(base: ProviderRegistry): ProviderRegistry {
  const registry = new ProviderRegistry();
  for (const p of base.list()) {
    const sink = base.sinkFor(p);
    // The synthetic sink's rows carry their unit and lease owner: an audit trigger records them.
    registry.register(announcing(p), p.name === 'synthetic' ? sink : auditedSink(sink));
  }
  return registry.registerPostSyncHandler(chaosDeliveryHandler);
}

/** Runs the role until SIGTERM / SIGINT (graceful) or until stdin ends (the parent is gone: exit at once). */
export async function runChaosRole(opts: RoleOptions): Promise<void> {
  const settings = loadSettings(process.env);
  if (!settings.databaseUrl || !settings.redisUrl) throw new Error('chaos-role needs DATABASE_URL and REDIS_URL');
  const logger = createLogger(process.env.SYNCRELAY_LOG_LEVEL || 'warn', `syncrelay-chaos-${opts.role}`).child({
    id: opts.id,
  });
  const db = await openDb(settings, { poolSize: opts.poolSize });
  const rng = new Rng(opts.seed);
  const broker = new FlakyBroker(
    openBroker(settings),
    () => rng.next(),
    (m) => say(`publish-failed ${m.length}`),
    (m) => say(`duplicated ${m.name}`),
  );
  const faults = new Faults();
  const registry = announcingRegistry(
    defaultRegistry(db, { outbound: new OutboundPolicy(settings.providerOutbound), limits: builtInLimits(settings) }),
  );
  const engine = await Engine.open({ settings, db, broker, logger, registry, faults, migrate: false });

  let stopping: Promise<never> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      try {
        await engine.close();
        await broker.close();
        await db.close();
      } finally {
        logger.flush();
        process.exit(0);
      }
    })());
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
  process.stdin.once('end', () => process.exit(0));
  createInterface({ input: process.stdin }).on('line', (line) => {
    const c = parseCommand(line);
    if (c?.kind === 'publish-fail-rate') broker.rate = c.rate;
    if (c?.kind === 'duplicate-rate') broker.duplicateRate = c.rate;
    if (c?.kind === 'disarm') faults.disarm(c.point);
    if (c?.kind === 'pause-at') {
      faults.arm(c.point, async (point) => {
        say(`paused-at ${point}`);
        await new Promise<never>(() => undefined); // blocks here until the parent SIGKILLs us
      });
    }
  });

  if (opts.role === 'worker') engine.startWorker({ concurrency: opts.concurrency });
  else await engine.startReconciler({ id: opts.id });
  say(`ready ${process.pid}`);
}
