/** The demo's settings, its org and integration, and the clean-up of runs an earlier demo left behind. */
import type { ResolvedSettings } from '../../config.js';
import type { Engine } from '../../engine.js';
import { listIntegrations } from '../../store/integrations.js';
import { listRuns } from '../../store/runs.js';

export const DEMO_ORG = 'demo';
export const DEMO_INTEGRATION = 'Demo Linear';
export const DEMO_SOURCES = ['team-core', 'team-web', 'team-infra'];
export const DEMO_DATASETS = ['teams', 'members', 'work-items', 'work-item-comments'];
/** A Linear-like synthetic provider with a little trouble: some failures, some rate limits, no hangs. */
export const DEMO_CONFIG = {
  impersonate: 'linear',
  itemsPerDay: 5,
  latencyMs: 30,
  failRate: 0.03,
  rateLimitRate: 0.05,
  rateLimitRetryAfterMs: 500,
  hangRate: 0,
  seed: 7,
};
export const DEMO_CONCURRENCY = 4;

/** Demo-friendly values (a fast reconciler and short waits), each applied only if its variable is unset. */
const DEMO_DEFAULTS: readonly { env: string; key: keyof ResolvedSettings; ms: number }[] = [
  { env: 'SYNC_RECONCILE_INTERVAL_SECONDS', key: 'reconcileIntervalMs', ms: 1000 },
  { env: 'SYNC_DISPATCH_REDISPATCH_COUNTDOWN', key: 'redispatchCountdownMs', ms: 1000 },
  { env: 'SYNC_UNIT_EXPIRED_LEASE_RETRY_BACKOFF_SECONDS', key: 'expiredLeaseRetryBackoffMs', ms: 1000 },
  { env: 'SYNC_UNIT_DISPATCH_STALE_SECONDS', key: 'dispatchStaleMs', ms: 30_000 },
  { env: 'SYNC_UNIT_RUNNING_LEASE_SECONDS', key: 'leaseMs', ms: 30_000 },
];

/**
 * Overrides for loadSettings: the demo values for every setting the user left unset. `base` is the
 * environment's own (already validated) settings, so the lease never exceeds the user's max lifetime.
 * Fault injection is always allowed: the demo integration's failures and rate limits are fault knobs.
 * So are plain http and loopback provider URLs (SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS): the
 * emulators the demo starts listen on http://127.0.0.1.
 */
export function demoOverrides(
  base: ResolvedSettings,
  env: Record<string, string | undefined> = process.env,
): Partial<ResolvedSettings> {
  const out: Partial<Record<keyof ResolvedSettings, number>> = {};
  for (const d of DEMO_DEFAULTS) {
    if (env[d.env] !== undefined && env[d.env] !== '') continue;
    out[d.key] = d.key === 'leaseMs' ? Math.min(d.ms, base.maxLifetimeMs) : d.ms;
  }
  return {
    ...(out as Partial<ResolvedSettings>),
    allowFaultInjection: true,
    providerOutbound: { ...base.providerOutbound, allowInsecure: true },
  };
}

/** The demo integration: reused when it exists, created otherwise. */
export async function ensureDemoIntegration(engine: Engine): Promise<{ id: string; created: boolean }> {
  const existing = (await listIntegrations(engine.db, DEMO_ORG)).find(
    (i) => i.name === DEMO_INTEGRATION && i.provider === 'synthetic' && i.enabled,
  );
  if (existing) return { id: existing.id, created: false };
  const created = await engine.createIntegration({
    orgId: DEMO_ORG,
    provider: 'synthetic',
    name: DEMO_INTEGRATION,
    sources: DEMO_SOURCES,
    datasets: DEMO_DATASETS,
    config: DEMO_CONFIG,
  });
  return { id: created.id, created: true };
}

/**
 * With the embedded database this process holds the only lock on it, so a non-terminal demo run
 * is an orphan of an earlier demo that was killed: its queued tasks died with that process, yet
 * its dispatching and running units would hold bucket capacity until they go stale or their
 * leases expire. Cancel such runs; returns their ids.
 */
export async function cancelOrphanedRuns(engine: Engine, integrationId: string): Promise<string[]> {
  const open = [
    ...(await listRuns(engine.db, { orgId: DEMO_ORG, integrationId, status: 'planned', limit: 1000 })),
    ...(await listRuns(engine.db, { orgId: DEMO_ORG, integrationId, status: 'dispatching', limit: 1000 })),
  ];
  const cancelled: string[] = [];
  for (const run of open) {
    if ((await engine.cancel(run.id, DEMO_ORG)) === 'cancelled') cancelled.push(run.id);
  }
  return cancelled;
}
