/**
 * Sources a provider finds itself (`Provider.sourceDiscovery`: a GitHub App installation's
 * repositories), refreshed before a run of such an integration is planned: the provider is asked
 * outside any transaction (no network call holds a lock), then one short transaction, under the
 * integration's row lock (the one every trigger takes), enables the sources it listed (inserting
 * new ones) and disables the others, whose rows stay. A failed discovery fails the trigger with a
 * `SourceDiscoveryError`; nothing is written.
 *
 * Every path that plans a run through the engine refreshes first: `triggerSync` (the engine's
 * `trigger`, the CLI), the API's sync and backfill routes and the scheduler. `triggerInTx` and
 * `planSyncRun`, which run in the caller's transaction, plan the sources as they are.
 */
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import { classifyError, SyncRelayError, ValidationError, type ErrorCategory } from '../errors.js';
import { silentLogger } from '../logger.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { Provider, SourceDiscovery } from '../sdk/types.js';
import { loadUnitCredential } from '../secrets/credentials.js';
import type { Keyring } from '../secrets/keyring.js';
import {
  disableUnlistedSources,
  enableListedSources,
  getIntegration,
  type IntegrationRow,
} from '../store/integrations.js';
import { INTEGRATION_LIMITS, textProblem } from './integrations.js';

/** How long a discovery may take before the trigger fails. */
export const DISCOVERY_TIMEOUT_MS = 60_000;

/** A provider could not list an integration's sources: the trigger that needed them is refused. */
export class SourceDiscoveryError extends SyncRelayError {
  constructor(
    readonly integrationId: string,
    /** What kind of failure it was (`auth`: the credential or installation; else the provider's side). */
    readonly category: ErrorCategory,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('source_discovery_failed', message, options);
  }
}

export interface DiscoveryDeps {
  db: Db;
  registry: ProviderRegistry;
  clock: Clock;
  logger?: Logger;
  /** Decrypts the integration's credential; without it the provider is handed none. */
  secrets?: Keyring;
}

/** What a refresh changed. */
export interface SourcesRefreshed {
  /** How many sources the provider listed. */
  listed: number;
  /** Keys inserted or enabled again. */
  enabled: string[];
  /** Keys disabled (no longer listed). */
  disabled: string[];
}

/**
 * Refreshes the sources of integration `integrationId` of `orgId` when its provider finds them
 * (see the module comment); null when it does not, or when the integration is missing or disabled
 * (the trigger says so). Throws `SourceDiscoveryError` when the provider cannot list them.
 */
export async function refreshDiscoveredSources(
  deps: DiscoveryDeps,
  orgId: string,
  integrationId: string,
): Promise<SourcesRefreshed | null> {
  const row = await getIntegration(deps.db, integrationId, { orgId });
  const discovery = row?.enabled ? discoveryOf(deps.registry, row) : null;
  if (!row || !discovery) return null;
  const keys = await discover(deps, row, discovery);
  const refreshed = await deps.db.transaction(async (tx) => {
    const locked = await getIntegration(tx, integrationId, { orgId, lock: true });
    if (!locked || !discovery.enabled(locked.config)) return null;
    const enabled = await enableListedSources(tx, orgId, integrationId, keys);
    const disabled = await disableUnlistedSources(tx, integrationId, keys);
    return { listed: keys.length, enabled, disabled };
  });
  if (refreshed && (refreshed.enabled.length > 0 || refreshed.disabled.length > 0)) {
    deps.logger?.info({ integrationId, ...refreshed }, 'discovered sources changed');
  }
  return refreshed;
}

/** Whether the integration's sources are found by its provider (which must be registered). */
export function discoversSources(registry: ProviderRegistry, row: IntegrationRow): boolean {
  return discoveryOf(registry, row) !== null;
}

function discoveryOf(registry: ProviderRegistry, row: IntegrationRow): SourceDiscovery | null {
  if (!registry.has(row.provider)) return null;
  const discovery = registry.get(row.provider).sourceDiscovery;
  return discovery?.enabled(row.config) ? discovery : null;
}

/** The provider's list, checked as create checks listed sources; any failure is a SourceDiscoveryError. */
async function discover(deps: DiscoveryDeps, row: IntegrationRow, discovery: SourceDiscovery): Promise<string[]> {
  const named = `${row.provider} integration "${row.name}"`;
  try {
    const credential = deps.secrets ? await loadUnitCredential(deps.db, deps.secrets, row.id) : null;
    const keys = await discovery.discover({
      integration: { id: row.id, orgId: row.org_id, provider: row.provider, name: row.name, config: row.config },
      credential,
      signal: AbortSignal.timeout(DISCOVERY_TIMEOUT_MS),
      logger: deps.logger?.child({ integrationId: row.id }) ?? silentLogger(),
      clock: deps.clock,
    });
    checkDiscovered(deps.registry.get(row.provider), keys);
    return keys;
  } catch (err) {
    const category = err instanceof ValidationError ? 'provider_error' : classifyError(err);
    const why = err instanceof Error ? err.message : String(err);
    // A provider's error names the integration already: it is named once.
    const said = why.startsWith(`${named}: `) ? why.slice(named.length + 2) : why;
    throw new SourceDiscoveryError(row.id, category, `${named}: its sources could not be found: ${said}`, {
      cause: err,
    });
  }
}

/** Throws `ValidationError` naming the first key create would refuse (or a list over the cap). */
function checkDiscovered(provider: Provider, keys: readonly string[]): void {
  if (keys.length > INTEGRATION_LIMITS.sources) {
    throw new ValidationError(
      'sources',
      `${keys.length} found, over the ${INTEGRATION_LIMITS.sources} an integration may have`,
    );
  }
  keys.forEach((key, n) => {
    const problem = textProblem(key, INTEGRATION_LIMITS.sourceKey);
    if (problem) throw new ValidationError(`sources.${n}`, problem);
    provider.validateSource?.(key, `sources.${n}`);
  });
  if (new Set(keys).size !== keys.length) throw new ValidationError('sources', 'contains duplicates');
}
