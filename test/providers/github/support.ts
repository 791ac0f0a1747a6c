/**
 * What the GitHub provider's tests share: the normalized tables of the test's database (cloned from
 * the migrated template) written through the normalized sink, a lease guard the test can revoke,
 * and a UnitContext built by hand with a credential.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { Clock } from '../../../src/clock.js';
import type { Db } from '../../../src/db/types.js';
import { LeaseLostError } from '../../../src/errors.js';
import type { LeaseGuard, UnitContext, UnitInfo } from '../../../src/sdk/types.js';
import type { SyncMode } from '../../../src/domain/statuses.js';
import { NORMALIZED_SURFACES, normalizedSink } from '../../../src/sinks/normalized/index.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js';

/**
 * The test file's own database, cloned from the migrated template (its normalized tables and
 * rate_budgets emptied before each test); call at the top of a file or `describe`, then read it
 * inside hooks and tests.
 */
export function useGithubDatabase(): () => TestDatabase {
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
  return () => t!;
}

/** Empties the normalized tables and the recorded rate budgets between tests. */
export async function truncateSurfaces(db: Db): Promise<void> {
  const tables = [...NORMALIZED_SURFACES.map((t) => db.schema.table(t)), db.schema.rate_budgets];
  await db.exec(`TRUNCATE ${tables.join(', ')}`);
}

/** A lease the test revokes: once `lose()` is called every fenced write throws and writes nothing. */
export class TestGuard implements LeaseGuard {
  readonly owner = 'owner-1';
  lost = false;
  /** Fenced writes that went through. */
  writes = 0;
  /** Lose the lease after this many writes (null: never). */
  loseAfter: number | null = null;
  constructor(readonly unitId: string) {}
  lose(): void {
    this.lost = true;
  }
  assertHeld(): Promise<void> {
    return this.check();
  }
  assertHeldIn(): Promise<void> {
    return this.check();
  }
  private check(): Promise<void> {
    if (this.loseAfter !== null && this.writes >= this.loseAfter) this.lost = true;
    if (this.lost) return Promise.reject(new LeaseLostError(this.unitId));
    this.writes++;
    return Promise.resolve();
  }
}

export const TOKEN = 'ghp_TESTSECRET0123456789abcdefABCDEF0000';
export const INTEGRATION_ID = '00000000-0000-4000-8000-00000000a001';
export const ORG = 'org-gh';

export interface UnitSpec {
  db: Db;
  clock: Clock;
  baseUrl: string;
  datasetKey: string;
  /** Every dataset the unit fetches. @default [datasetKey] */
  datasets?: string[];
  mode?: SyncMode;
  since?: Date | null;
  before?: Date | null;
  unitId?: string;
  sourceKey?: string | null;
  token?: string;
  credentialId?: string;
  integrationId?: string;
  config?: Record<string, unknown>;
  guard?: TestGuard;
  signal?: AbortSignal;
}

let seq = 0;

export function unitContext(s: UnitSpec): UnitContext & { lease: TestGuard } {
  const id = s.unitId ?? `00000000-0000-4000-8000-${String(++seq).padStart(12, '0')}`;
  const unit: UnitInfo = {
    id,
    orgId: ORG,
    runId: '00000000-0000-4000-8000-0000000000f1',
    integrationId: s.integrationId ?? INTEGRATION_ID,
    sourceId: '00000000-0000-4000-8000-0000000000f2',
    sourceKey: s.sourceKey === undefined ? 'acme/app' : s.sourceKey,
    provider: 'github',
    datasetKey: s.datasetKey,
    datasets: s.datasets ?? [s.datasetKey],
    tier: 'work_item',
    mode: s.mode ?? 'backfill',
    since: s.since ?? null,
    before: s.before ?? null,
    attempt: 1,
  };
  const token = s.token ?? TOKEN;
  return {
    unit,
    integration: {
      id: unit.integrationId,
      orgId: ORG,
      provider: 'github',
      name: 'acme-github',
      config: { baseUrl: s.baseUrl, ...s.config },
    },
    signal: s.signal ?? new AbortController().signal,
    lease: s.guard ?? new TestGuard(id),
    sink: normalizedSink(s.db),
    logger: pino({ level: 'silent' }),
    clock: s.clock,
    db: s.db,
    credential: { id: s.credentialId ?? 'cred-1', reveal: () => token },
    checkpoint: null,
  };
}

/** Rows of a surface table. */
export async function rows<T = Record<string, unknown>>(db: Db, table: string): Promise<T[]> {
  return (await db.query<T>(`SELECT * FROM ${db.schema.table(table)} ORDER BY external_id`)).rows;
}

export async function count(db: Db, table: string): Promise<number> {
  return (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${db.schema.table(table)}`)).rows[0]!.n;
}
