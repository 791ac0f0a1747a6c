/**
 * What the provider tests against an emulator share: the file's own database (cloned from the
 * migrated template, its normalized tables and rate budgets emptied before each test), a manual
 * clock at `T0` for each test, the test's emulator on 127.0.0.1 (closed after it), and units built
 * by hand to read that emulator.
 */
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { Db } from '../../src/db/types.js';
import type { UnitContext } from '../../src/sdk/types.js';
import { NORMALIZED_SURFACES } from '../../src/sinks/normalized/index.js';
import { createTestDatabase, type TestDatabase } from './pg.js';
import { unitContext, type TestGuard, type UnitSpec, type UnitTarget } from './unitContext.js';

/** Where every emulator's data ends and every test's clock starts. */
export const T0 = Date.UTC(2026, 2, 2, 12);
export const DAY = 86_400_000;

/** A unit's settings over the suite's: everything but the database and the clock. */
export type UnitOverrides = Partial<Omit<UnitSpec, 'db' | 'clock'>> & { datasetKey: string };

export interface EmulatorSuiteOptions<E, O> {
  /** Starts the emulator: the test's clock, its data ending at T0, `defaults` and a test's options on top. */
  start(options: O & { clock: ManualClock; now: Date }): Promise<E>;
  defaults: O;
  /** What a unit reads from the running emulator. */
  target(emu: E): UnitTarget;
  /** The file's settings of every unit (a window, datasets). @default none */
  unit?: Partial<UnitSpec>;
}

export interface EmulatorSuite<E, O> {
  /** The file's database. */
  readonly db: Db;
  /** The test's clock: at T0 when the test starts. */
  readonly clock: ManualClock;
  /** The emulator the test started. */
  readonly emu: E;
  /** Starts the test's emulator (closed after the test). */
  start(over?: O): Promise<E>;
  /** A unit reading the test's emulator: the suite's target and defaults, then `spec` (its `config` laid over). */
  unit(spec: UnitOverrides): UnitContext & { lease: TestGuard };
}

/** Empties the normalized tables and the recorded rate budgets. */
export async function truncateSurfaces(db: Db): Promise<void> {
  const tables = [...NORMALIZED_SURFACES.map((t) => db.schema.table(t)), db.schema.rate_budgets];
  await db.exec(`TRUNCATE ${tables.join(', ')}`);
}

/**
 * The file's own database, cloned from the migrated template, its normalized tables and rate
 * budgets emptied before each test. Call at the top of a file or `describe`; read it in tests.
 */
function useSurfaceDatabase(): () => Db {
  let t: TestDatabase | undefined;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t?.drop();
  });
  beforeEach(async () => {
    await truncateSurfaces(t!.db);
  });
  return () => t!.db;
}

/** Registers the suite's hooks in the current file or `describe`; read the suite inside tests. */
export function useEmulatorSuite<E extends { close(): Promise<void> }, O>(
  opts: EmulatorSuiteOptions<E, O>,
): EmulatorSuite<E, O> {
  const db = useSurfaceDatabase();
  let clock = new ManualClock(T0);
  let emu: E | undefined;
  beforeEach(() => {
    clock = new ManualClock(T0);
  });
  afterEach(async () => {
    await emu?.close();
    emu = undefined;
  });
  const running = (): E => {
    if (!emu) throw new Error('the test has not started its emulator');
    return emu;
  };
  return {
    get db() {
      return db();
    },
    get clock() {
      return clock;
    },
    get emu() {
      return running();
    },
    async start(over?: O) {
      emu = await opts.start({ ...opts.defaults, ...over, clock, now: new Date(T0) });
      return emu;
    },
    unit(spec) {
      const target = opts.target(running());
      const config = { ...target.config, ...spec.config };
      return unitContext({ ...target, ...opts.unit, ...spec, config, db: db(), clock });
    },
  };
}

/** Rows of a normalized table, by external id. */
export async function rows<T = Record<string, unknown>>(db: Db, table: string): Promise<T[]> {
  return (await db.query<T>(`SELECT * FROM ${db.schema.table(table)} ORDER BY external_id`)).rows;
}

/** How many rows a normalized table holds. */
export async function count(db: Db, table: string): Promise<number> {
  return (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${db.schema.table(table)}`)).rows[0]!.n;
}
