/**
 * What the provider tests in real runs share: a provider's emulator on 127.0.0.1 and an engine
 * (in-process broker, worker and reconciler on its own cloned database) running that provider,
 * both for the whole file or `describe`; integrations made to read the emulator, runs triggered
 * and followed to their end, and what they stored.
 */
import { afterAll, beforeAll } from 'vitest';
import type { Db } from '../../src/db/types.js';
import type { RunStatus, SyncMode } from '../../src/domain/statuses.js';
import type { Engine } from '../../src/engine.js';
import type { NewIntegration } from '../../src/planning/integrations.js';
import type { Provider } from '../../src/sdk/types.js';
import { openProviderEngine, runTerminal, type TestEngine } from './engine.js';

export interface EngineSuiteOptions<E> {
  /** The org the suite's integrations belong to. */
  orgId: string;
  /** Starts the emulator (once, before the engine). */
  emulator(): Promise<E>;
  provider: Provider;
  /** Worker slots. */
  concurrency: number;
  poolSize?: number;
  /** Replaces the engine's jitter source. */
  random?: () => number;
}

/** An integration as the suite makes it: everything but its org and name. */
export type IntegrationSetup = Omit<NewIntegration, 'orgId' | 'name'>;

/** A run to trigger: its mode and what triggered it, with a backfill's window. */
export interface RunSpec {
  mode: SyncMode;
  triggeredBy: 'backfill' | 'manual' | 'api';
  since?: Date;
  before?: Date;
}

export interface EngineSuite<E> {
  readonly emu: E;
  readonly engine: Engine;
  readonly db: Db;
  /** Creates `acme-<provider>` in the suite's org reading what `setup` says; returns its id. */
  integrate(setup: IntegrationSetup): Promise<string>;
  /** Triggers a run of the integration and waits until it ends (or fails after `timeoutMs`). */
  run(integrationId: string, spec: RunSpec, timeoutMs?: number): Promise<{ runId: string; status: RunStatus }>;
  /** The integration's rows in a normalized table: distinct external ids and rows. */
  stored(integrationId: string, table: string): Promise<{ keys: number; rows: number }>;
}

/** Registers the suite's hooks in the current file or `describe`; read the suite inside tests. */
export function useEngineSuite<E extends { close(): Promise<void> }>(opts: EngineSuiteOptions<E>): EngineSuite<E> {
  let emu: E | undefined;
  let h: TestEngine | undefined;
  beforeAll(async () => {
    emu = await opts.emulator();
    h = await openProviderEngine({
      provider: opts.provider,
      concurrency: opts.concurrency,
      ...(opts.poolSize === undefined ? {} : { poolSize: opts.poolSize }),
      ...(opts.random === undefined ? {} : { random: opts.random }),
    });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await emu?.close();
  });
  return {
    get emu() {
      return emu!;
    },
    get engine() {
      return h!.engine;
    },
    get db() {
      return h!.t.db;
    },
    async integrate(setup) {
      const name = `acme-${setup.provider}`;
      return (await h!.engine.createIntegration({ orgId: opts.orgId, name, ...setup })).id;
    },
    async run(integrationId, spec, timeoutMs) {
      const { syncRunId } = await h!.engine.trigger({ orgId: opts.orgId, integrationId, ...spec });
      return { runId: syncRunId, status: await runTerminal(h!.t.db, syncRunId, timeoutMs) };
    },
    async stored(integrationId, table) {
      const { rows } = await h!.t.db.query<{ keys: number; rows: number }>(
        `SELECT count(DISTINCT external_id)::int AS keys, count(*)::int AS rows
           FROM ${h!.t.db.schema.table(table)} WHERE integration_id = $1`,
        [integrationId],
      );
      return rows[0]!;
    },
  };
}
