/**
 * What a chaos run syncs: four synthetic integrations in one org — two impersonating Linear (a
 * backfill one, whose units are eligible for the expired-lease retry, and an incremental one, whose
 * units are not), two plain ones — with latency, failures and rate limits; and the plan of runs.
 */
import type { SyncMode } from '../domain/statuses.js';
import { DAY_MS } from '../domain/windows.js';
import type { Engine } from '../engine.js';
import type { Rng } from './random.js';
import type { ChaosTarget } from './targets/target.js';

interface Profile {
  key: string;
  name: string;
  linear: boolean;
  modes: readonly SyncMode[];
  datasets: readonly string[];
  /** Per-run work-item units come from sources × datasets × windows. */
  windowDays: number;
  config: Record<string, unknown>;
  weight: number;
}

const TROUBLE = { failRate: 0.02, rateLimitRate: 0.04, rateLimitRetryAfterMs: 300, hangRate: 0 };

const PROFILES: readonly Profile[] = [
  {
    key: 'linear-backfill',
    name: 'Chaos Linear (backfills)',
    linear: true,
    modes: ['backfill'],
    datasets: ['teams', 'work-items', 'work-item-comments'],
    windowDays: 14,
    config: { impersonate: 'linear', latencyMs: 250, itemsPerDay: 12, ...TROUBLE },
    weight: 0.4,
  },
  {
    key: 'linear-incremental',
    name: 'Chaos Linear (incremental)',
    linear: true,
    modes: ['incremental', 'incremental', 'full_resync'],
    datasets: ['teams', 'work-items', 'work-item-comments'],
    windowDays: 14,
    config: { impersonate: 'linear', latencyMs: 200, itemsPerDay: 4, ...TROUBLE },
    weight: 0.2,
  },
  {
    key: 'plain-backfill',
    name: 'Chaos synthetic (backfills)',
    linear: false,
    modes: ['backfill'],
    datasets: ['teams', 'work-items', 'work-item-history'],
    windowDays: 7,
    config: { latencyMs: 200, itemsPerDay: 10, ...TROUBLE },
    weight: 0.2,
  },
  {
    key: 'plain-incremental',
    name: 'Chaos synthetic (incremental)',
    linear: false,
    modes: ['incremental', 'incremental', 'full_resync'],
    datasets: ['teams', 'work-items', 'work-item-labels'],
    windowDays: 7,
    config: { latencyMs: 200, itemsPerDay: 4, ...TROUBLE },
    weight: 0.2,
  },
];

/** Work-item datasets per profile (every profile has one reference dataset, `teams`). */
const WORK_ITEM_DATASETS = 2;
const BACKFILL_SOURCES = 2;

export interface ChaosIntegration {
  id: string;
  profile: Profile;
  sources: number;
}

export interface PlannedRun {
  /** ms after the start of the fault phase. */
  at: number;
  integration: ChaosIntegration;
  mode: SyncMode;
  since?: Date;
  before?: Date;
  /** Cancel the run this long after its trigger (a user cancelling), if set. */
  cancelAfterMs?: number;
}

/** Creates the org's integrations, sized so a run has about `unitsPerRun` units. */
export async function createIntegrations(
  engine: Engine,
  orgId: string,
  unitsPerRun: number,
  seed: number,
): Promise<ChaosIntegration[]> {
  const out: ChaosIntegration[] = [];
  const incrementalSources = Math.max(1, Math.round((unitsPerRun - 1) / WORK_ITEM_DATASETS));
  for (const p of PROFILES) {
    const sources = p.modes.includes('backfill') ? BACKFILL_SOURCES : incrementalSources;
    const row = await engine.createIntegration({
      orgId,
      provider: 'synthetic',
      name: p.name,
      sources: Array.from({ length: sources }, (_, i) => `${p.key}-${i + 1}`),
      datasets: [...p.datasets],
      config: { ...p.config, seed },
    });
    out.push({ id: row.id, profile: p, sources });
  }
  return out;
}

/**
 * With `--provider`: one integration of that provider reading every source and dataset of its
 * emulator, each run's mode drawn from `modes` (an incremental window starts at the last watermark,
 * less the overlap; a full re-sync reads the provider's first depth again).
 */
export async function createProviderIntegration(
  engine: Engine,
  orgId: string,
  target: ChaosTarget,
  modes: readonly SyncMode[],
): Promise<ChaosIntegration> {
  const i = target.integration;
  const profile: Profile = {
    key: i.provider,
    name: `Chaos ${i.provider} (emulator)`,
    linear: false,
    modes,
    datasets: i.datasets,
    windowDays: 7,
    config: i.config,
    weight: 1,
  };
  const row = await engine.createIntegration({
    orgId,
    provider: i.provider,
    name: profile.name,
    sources: i.sources,
    datasets: i.datasets,
    config: i.config,
    credential: i.credential,
  });
  return { id: row.id, profile, sources: i.sources.length };
}

/**
 * N runs spread over the first three quarters of the duration (the faults go on to its end, so the
 * last runs still meet them, and what is open when the faults stop is recovery, not a fresh queue);
 * a few are cancelled by a user shortly after they are triggered.
 */
export function planRuns(
  integrations: readonly ChaosIntegration[],
  n: number,
  unitsPerRun: number,
  durationMs: number,
  rng: Rng,
): PlannedRun[] {
  const span = durationMs * 0.75;
  const runs: PlannedRun[] = [];
  for (let i = 0; i < n; i++) {
    const at = Math.max(0, Math.min(span, ((i + rng.next()) / n) * span));
    const integration = pickWeighted(integrations, rng);
    const mode = rng.pick(integration.profile.modes);
    const run: PlannedRun = { at, integration, mode };
    if (mode === 'backfill') {
      const windows = Math.max(1, Math.round((unitsPerRun - 1) / (BACKFILL_SOURCES * WORK_ITEM_DATASETS)));
      const since = new Date(Date.UTC(2025, 0, 1) + rng.int(0, 300) * DAY_MS);
      run.since = since;
      run.before = new Date(since.getTime() + windows * integration.profile.windowDays * DAY_MS);
    }
    if (rng.next() < 0.05) run.cancelAfterMs = rng.int(300, 3000);
    runs.push(run);
  }
  return runs;
}

function pickWeighted(integrations: readonly ChaosIntegration[], rng: Rng): ChaosIntegration {
  const total = integrations.reduce((a, i) => a + i.profile.weight, 0);
  let x = rng.next() * total;
  for (const i of integrations) {
    x -= i.profile.weight;
    if (x < 0) return i;
  }
  return integrations.at(-1)!;
}

/** Triggers one planned run through the engine's trigger path (what the CLI and the HTTP API use). */
export function triggerRun(engine: Engine, orgId: string, r: PlannedRun) {
  return engine.trigger({
    orgId,
    integrationId: r.integration.id,
    mode: r.mode,
    triggeredBy: r.mode === 'backfill' ? 'backfill' : 'manual',
    since: r.since,
    before: r.before,
    force: true,
  });
}
