/**
 * What the Linear provider's tests share: a UnitContext built by hand over the normalized sink (the
 * normalized tables of the test's own database), with a revocable lease and a credential.
 */
import { pino } from 'pino';
import type { Clock } from '../../../src/clock.js';
import type { Db } from '../../../src/db/types.js';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import type { SyncMode, Tier } from '../../../src/domain/statuses.js';
import type { UnitContext, UnitInfo } from '../../../src/sdk/types.js';
import { normalizedSink } from '../../../src/sinks/normalized/index.js';
import { TestGuard } from '../github/support.js';

export { TestGuard };

export const INTEGRATION_ID = '00000000-0000-4000-8000-00000000b001';
export const ORG = 'org-ln';

export interface LinearUnitSpec {
  db: Db;
  clock: Clock;
  apiUrl: string;
  token: string;
  datasetKey: string;
  /** @default [datasetKey] */
  datasets?: string[];
  tier?: Tier;
  mode?: SyncMode;
  since?: Date | null;
  before?: Date | null;
  sourceKey?: string | null;
  credentialId?: string;
  integrationId?: string;
  config?: Record<string, unknown>;
  guard?: TestGuard;
  /** Where an earlier attempt stopped (what its RateLimitError carried). @default null */
  checkpoint?: UnitCheckpoint | null;
}

let seq = 0;

export function linearContext(s: LinearUnitSpec): UnitContext & { lease: TestGuard } {
  const id = `00000000-0000-4000-8000-${String(++seq).padStart(12, '0')}`;
  const unit: UnitInfo = {
    id,
    orgId: ORG,
    runId: '00000000-0000-4000-8000-0000000000f1',
    integrationId: s.integrationId ?? INTEGRATION_ID,
    sourceId: '00000000-0000-4000-8000-0000000000f2',
    sourceKey: s.sourceKey === undefined ? 'ENG' : s.sourceKey,
    provider: 'linear',
    datasetKey: s.datasetKey,
    datasets: s.datasets ?? [s.datasetKey],
    tier: s.tier ?? 'work_item',
    mode: s.mode ?? 'backfill',
    since: s.since ?? null,
    before: s.before ?? null,
    attempt: 1,
  };
  return {
    unit,
    integration: {
      id: unit.integrationId,
      orgId: ORG,
      provider: 'linear',
      name: 'acme-linear',
      config: { apiUrl: s.apiUrl, ...s.config },
    },
    signal: new AbortController().signal,
    lease: s.guard ?? new TestGuard(id),
    sink: normalizedSink(s.db),
    logger: pino({ level: 'silent' }),
    clock: s.clock,
    db: s.db,
    credential: { id: s.credentialId ?? 'cred-ln', reveal: () => s.token },
    checkpoint: s.checkpoint ?? null,
  };
}

const TABLES = ['teams', 'members', 'projects', 'sprints', 'work_items', 'work_item_comments', 'work_item_events'];

export async function truncateSurfaces(db: Db): Promise<void> {
  await db.exec(
    `TRUNCATE ${TABLES.map((t) => db.schema.table(t)).join(', ')}; TRUNCATE ${db.schema.table('rate_budgets')}`,
  );
}

export async function rowsOf<T = Record<string, unknown>>(db: Db, table: string): Promise<T[]> {
  return (await db.query<T>(`SELECT * FROM ${db.schema.table(table)} ORDER BY external_id`)).rows;
}

export async function countOf(db: Db, table: string): Promise<number> {
  return (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${db.schema.table(table)}`)).rows[0]!.n;
}
