/**
 * A provider unit built by hand for the provider tests: a UnitContext over the normalized sink of
 * the test's database, with a credential and a lease guard the test can revoke.
 */
import { pino } from 'pino';
import type { Clock } from '../../src/clock.js';
import type { Db } from '../../src/db/types.js';
import type { UnitCheckpoint } from '../../src/domain/checkpoint.js';
import type { SyncMode, Tier } from '../../src/domain/statuses.js';
import { LeaseLostError } from '../../src/errors.js';
import type { LeaseGuard, UnitContext, UnitInfo } from '../../src/sdk/types.js';
import { normalizedSink, type SurfaceHookMap } from '../../src/sinks/normalized/index.js';

/** The org every hand-built unit belongs to. */
export const ORG = 'org-provider-test';
/** The integration a unit belongs to unless its spec names another. */
export const INTEGRATION_ID = '00000000-0000-4000-8000-00000000a001';
/** The id of every hand-built unit's credential (the key of its rate budget). */
export const CREDENTIAL_ID = 'cred-1';

/** A lease the test revokes: once lost, every fenced write throws and writes nothing. */
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

/** What a unit reads: its provider, the integration's config, the credential and the source. */
export interface UnitTarget {
  provider: string;
  /** The integration's config (the API's address; a spec's `config` is laid over it). */
  config: Record<string, unknown>;
  /** The credential's secret. */
  token: string;
  /** null: a unit planned without a source. */
  sourceKey: string | null;
  /** The provider's hooks the normalized sink runs (its `surfaceHooks`). @default none */
  hooks?: readonly SurfaceHookMap[];
}

/** The unit a test runs: what it reads, and every setting a test may change. */
export interface UnitSpec extends UnitTarget {
  db: Db;
  clock: Clock;
  datasetKey: string;
  /** Every dataset the unit fetches. @default [datasetKey] */
  datasets?: string[];
  /** @default 'work_item' */
  tier?: Tier;
  /** @default 'backfill' */
  mode?: SyncMode;
  since?: Date | null;
  before?: Date | null;
  unitId?: string;
  credentialId?: string;
  integrationId?: string;
  guard?: TestGuard;
  signal?: AbortSignal;
  /** Where an earlier attempt stopped (what its RateLimitError carried). @default null */
  checkpoint?: UnitCheckpoint | null;
}

let seq = 0;

function unitInfo(s: UnitSpec): UnitInfo {
  return {
    id: s.unitId ?? `00000000-0000-4000-8000-${String(++seq).padStart(12, '0')}`,
    orgId: ORG,
    runId: '00000000-0000-4000-8000-0000000000f1',
    integrationId: s.integrationId ?? INTEGRATION_ID,
    sourceId: '00000000-0000-4000-8000-0000000000f2',
    sourceKey: s.sourceKey,
    provider: s.provider,
    datasetKey: s.datasetKey,
    datasets: s.datasets ?? [s.datasetKey],
    tier: s.tier ?? 'work_item',
    mode: s.mode ?? 'backfill',
    since: s.since ?? null,
    before: s.before ?? null,
    attempt: 1,
  };
}

/** The unit's context: integration `acme-<provider>`, the normalized sink, a silent logger. */
export function unitContext(s: UnitSpec): UnitContext & { lease: TestGuard } {
  const unit = unitInfo(s);
  const { token } = s;
  return {
    unit,
    integration: {
      id: unit.integrationId,
      orgId: ORG,
      provider: s.provider,
      name: `acme-${s.provider}`,
      config: s.config,
    },
    signal: s.signal ?? new AbortController().signal,
    lease: s.guard ?? new TestGuard(unit.id),
    sink: normalizedSink(s.db, { hooks: s.hooks ?? [] }),
    logger: pino({ level: 'silent' }),
    clock: s.clock,
    db: s.db,
    credential: { id: s.credentialId ?? CREDENTIAL_ID, reveal: () => token },
    checkpoint: s.checkpoint ?? null,
  };
}
