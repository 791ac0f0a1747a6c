/**
 * What the GitHub provider's tests share: surface tables of the agreed normalized shape (in a test
 * schema of their own, written through the fenced Postgres sink), a lease guard the test can revoke,
 * and a UnitContext built by hand with a credential.
 */
import { pino } from 'pino';
import type { Clock } from '../../../src/clock.js';
import type { Db } from '../../../src/db/types.js';
import { LeaseLostError } from '../../../src/errors.js';
import type { LeaseGuard, UnitContext, UnitInfo } from '../../../src/providers/types.js';
import type { SyncMode } from '../../../src/domain/statuses.js';
import { PostgresSink } from '../../../src/sinks/postgres.js';

const KEY = ['org_id', 'integration_id', 'provider', 'external_id'];
const COMMON = [...KEY, 'last_synced_at', 'raw'];

/** The normalized surfaces' own columns (NORMALIZED.md), with SQL types. */
export const SURFACE_COLUMNS: Record<string, Record<string, string>> = {
  repositories: {
    name: 'text',
    description: 'text',
    url: 'text',
    private: 'boolean',
    archived: 'boolean',
    default_branch: 'text',
    created_at: 'timestamptz',
    updated_at: 'timestamptz',
  },
  members: { login: 'text', name: 'text', email: 'text', avatar_url: 'text', role: 'text' },
  work_items: {
    number: 'text',
    title: 'text',
    type: 'text',
    status: "text CHECK (status IN ('todo', 'in_progress', 'done', 'cancelled'))",
    status_raw: 'text',
    assignees: 'text[]',
    labels: 'text[]',
    created_at: 'timestamptz',
    updated_at: 'timestamptz',
    started_at: 'timestamptz',
    completed_at: 'timestamptz',
    parent_external_id: 'text',
    container: 'text',
    milestone: 'text',
    url: 'text',
  },
  work_item_comments: {
    work_item_external_id: 'text',
    author: 'text',
    body: 'text',
    created_at: 'timestamptz',
    updated_at: 'timestamptz',
  },
  work_item_events: {
    work_item_external_id: 'text',
    kind: "text CHECK (kind IN ('state', 'label', 'assignee', 'other'))",
    actor: 'text',
    from_value: 'text',
    to_value: 'text',
    occurred_at: 'timestamptz',
  },
  pull_requests: {
    number: 'integer',
    title: 'text',
    state: "text CHECK (state IN ('open', 'closed', 'merged'))",
    draft: 'boolean',
    author: 'text',
    base_ref: 'text',
    head_ref: 'text',
    container: 'text',
    created_at: 'timestamptz',
    updated_at: 'timestamptz',
    merged_at: 'timestamptz',
    closed_at: 'timestamptz',
    additions: 'integer',
    deletions: 'integer',
    changed_files: 'integer',
    url: 'text',
  },
  pull_request_reviews: {
    pull_request_external_id: 'text',
    author: 'text',
    state: 'text',
    submitted_at: 'timestamptz',
  },
  commits: {
    sha: 'text',
    container: 'text',
    author: 'text',
    committed_at: 'timestamptz',
    message_first_line: 'text',
    additions: 'integer',
    deletions: 'integer',
  },
};

/** Creates the surface tables in schema `gh` of the test's own database. */
export async function createSurfaceTables(db: Db): Promise<void> {
  await db.exec('CREATE SCHEMA IF NOT EXISTS gh');
  for (const [name, cols] of Object.entries(SURFACE_COLUMNS)) {
    const own = Object.entries(cols).map(([c, t]) => `${c} ${t}`);
    await db.exec(`CREATE TABLE gh.${name} (
      org_id text NOT NULL, integration_id uuid NOT NULL, provider text NOT NULL, external_id text NOT NULL,
      first_seen_at timestamptz NOT NULL DEFAULT now(), last_synced_at timestamptz NOT NULL,
      raw jsonb NOT NULL DEFAULT '{}', ${own.join(', ')},
      PRIMARY KEY (org_id, integration_id, provider, external_id))`);
  }
}

export function surfaceSink(db: Db): PostgresSink {
  const specs = Object.fromEntries(
    Object.entries(SURFACE_COLUMNS).map(([name, cols]) => [
      name,
      {
        table: `gh.${name}`,
        conflictColumns: KEY,
        columns: [...COMMON, ...Object.keys(cols)],
        jsonColumns: ['raw'],
        retrySafe: true,
      },
    ]),
  );
  return new PostgresSink(db, specs, 'normalized-test');
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
    datasets: [s.datasetKey],
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
    sink: surfaceSink(s.db),
    logger: pino({ level: 'silent' }),
    clock: s.clock,
    db: s.db,
    credential: { id: s.credentialId ?? 'cred-1', reveal: () => token },
  };
}

/** Rows of a surface table. */
export async function rows<T = Record<string, unknown>>(db: Db, table: string): Promise<T[]> {
  return (await db.query<T>(`SELECT * FROM gh.${table} ORDER BY external_id`)).rows;
}

export async function count(db: Db, table: string): Promise<number> {
  return (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM gh.${table}`)).rows[0]!.n;
}
