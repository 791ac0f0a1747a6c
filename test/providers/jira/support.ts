/**
 * What the Jira provider's tests share: the normalized sink over the test database's own tables,
 * a lease guard the test can revoke, a UnitContext built by hand, and row readers.
 */
import { pino } from 'pino';
import type { Clock } from '../../../src/clock.js';
import type { Db } from '../../../src/db/types.js';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import { LeaseLostError } from '../../../src/errors.js';
import type { LeaseGuard, UnitContext, UnitInfo } from '../../../src/sdk/types.js';
import type { SyncMode, Tier } from '../../../src/domain/statuses.js';
import { normalizedSink } from '../../../src/sinks/normalized/index.js';

/** A lease the test revokes: once lost, every fenced write throws and writes nothing. */
export class TestGuard implements LeaseGuard {
  readonly owner = 'owner-1';
  lost = false;
  /** Fenced writes that went through. */
  writes = 0;
  /** Lose the lease after this many writes (null: never). */
  loseAfter: number | null = null;
  constructor(readonly unitId: string) {}
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

export const INTEGRATION_ID = '00000000-0000-4000-8000-00000000b001';
export const ORG = 'org-jira';

export interface UnitSpec {
  db: Db;
  clock: Clock;
  siteUrl: string;
  token: string;
  datasetKey: string;
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
  checkpoint?: UnitCheckpoint | null;
}

let seq = 0;

export function unitContext(s: UnitSpec): UnitContext & { lease: TestGuard } {
  const id = `00000000-0000-4000-8000-${String(++seq).padStart(12, '0')}`;
  const unit: UnitInfo = {
    id,
    orgId: ORG,
    runId: '00000000-0000-4000-8000-0000000000f1',
    integrationId: s.integrationId ?? INTEGRATION_ID,
    sourceId: '00000000-0000-4000-8000-0000000000f2',
    sourceKey: s.sourceKey === undefined ? 'ENG' : s.sourceKey,
    provider: 'jira',
    datasetKey: s.datasetKey,
    datasets: s.datasets ?? [s.datasetKey],
    tier: s.tier ?? 'work_item',
    mode: s.mode ?? 'backfill',
    since: s.since ?? null,
    before: s.before ?? null,
    attempt: 1,
  };
  const token = s.token;
  return {
    unit,
    integration: {
      id: unit.integrationId,
      orgId: ORG,
      provider: 'jira',
      name: 'acme-jira',
      config: { siteUrl: s.siteUrl, ...s.config },
    },
    signal: new AbortController().signal,
    lease: s.guard ?? new TestGuard(id),
    sink: normalizedSink(s.db),
    logger: pino({ level: 'silent' }),
    clock: s.clock,
    db: s.db,
    credential: { id: s.credentialId ?? 'cred-1', reveal: () => token },
    checkpoint: s.checkpoint ?? null,
  };
}

/** Rows of a normalized table of this integration. */
export async function rows<T = Record<string, unknown>>(db: Db, table: string): Promise<T[]> {
  const sql = `SELECT * FROM ${db.schema.table(table)} WHERE provider = 'jira' ORDER BY external_id`;
  return (await db.query<T>(sql)).rows;
}

export async function count(db: Db, table: string): Promise<number> {
  const sql = `SELECT count(*)::int AS n FROM ${db.schema.table(table)} WHERE provider = 'jira'`;
  return (await db.query<{ n: number }>(sql)).rows[0]!.n;
}

export const TABLES = ['projects', 'members', 'sprints', 'work_items', 'work_item_comments', 'work_item_events'];

/** Empties the normalized tables and the recorded budgets. */
export async function truncate(db: Db): Promise<void> {
  const list = TABLES.map((t) => db.schema.table(t)).join(', ');
  await db.exec(`TRUNCATE ${list}; TRUNCATE ${db.schema.table('rate_budgets')}`);
}
