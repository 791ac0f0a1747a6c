/** Creating integrations: validated against the provider before anything is written. */
import type { Clock } from '../clock.js';
import type { ResolvedSettings } from '../config.js';
import type { Db, Tx } from '../db/types.js';
import { IntegrationBusyError, NotFoundError, ValidationError } from '../errors.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { deleteIntegrationRecords, lockIntegration } from '../store/integrationDelete.js';
import { storeCredential, validateCredential } from '../secrets/credentials.js';
import { SecretError } from '../secrets/errors.js';
import type { Keyring } from '../secrets/keyring.js';
import type { Provider } from '../sdk/types.js';
import { insertDatasets, insertIntegration, insertSources, type IntegrationRow } from '../store/integrations.js';
import { purgeNormalizedData, type PurgedRows } from '../store/normalizedPurge.js';
import { countLiveRuns } from '../store/runs.js';
import { notifySchedulesChanged } from '../store/schedules.js';

export interface NewIntegration {
  orgId: string;
  provider: string;
  name: string;
  /**
   * Source keys; or `'all'`: the provider finds them (`Provider.sourceDiscovery`, e.g. a GitHub App
   * installation's repositories) before each run is planned, and the integration starts with none.
   */
  sources: readonly string[] | 'all';
  datasets: readonly string[];
  config?: Record<string, unknown>;
  /** The integration's credential (a token): stored encrypted, never returned. */
  credential?: string;
}

export interface CreatedIntegration extends IntegrationRow {
  sources: string[];
  datasets: string[];
}

/**
 * How long an integration's text may be (characters) and how many sources and datasets it may list.
 * Every one of them ends up in an index, whose entries PostgreSQL caps at about 2.7 kB.
 */
export const INTEGRATION_LIMITS = {
  org: 200,
  provider: 64,
  name: 200,
  sourceKey: 200,
  sources: 500,
  datasetKey: 100,
  datasets: 100,
} as const;

/** A provider name (an integration's, or one a provider makes its units carry): `linear`, `git-hub_2`. */
export const PROVIDER_NAME_RE = /^[a-z][a-z0-9_-]{0,63}$/;
export const PROVIDER_NAME_RULE = 'must be a lower-case letter, then at most 63 lower-case letters, digits, _ or -';

/** C0 and C1 control characters and DEL: refused in names and keys, escaped by the CLI. */
export const CONTROL_RE = /\p{Cc}/u;
/** An unpaired surrogate: not storable as PostgreSQL text. */
const LONE_SURROGATE_RE = /\p{Cs}/u;

/** Why `value` is not acceptable text of at most `max` characters, or null when it is. */
export function textProblem(value: string, max: number): string | null {
  if (value.trim() === '') return 'must not be empty';
  if (value.length > max) return `must be at most ${max} characters`;
  if (CONTROL_RE.test(value)) return 'must not contain control characters';
  if (LONE_SURROGATE_RE.test(value)) return 'must not contain unpaired surrogates';
  return null;
}

function checkText(field: string, value: string, max: number): void {
  const problem = textProblem(value, max);
  if (problem) throw new ValidationError(field, problem);
}

/** An integration as it is stored: its listed sources (none when they are found) and its config. */
export interface ResolvedIntegration extends NewIntegration {
  sources: readonly string[];
  config: Record<string, unknown>;
}

/**
 * Throws `ValidationError` naming the field of the first problem; writes nothing. Returns the
 * integration as it would be stored (`sources: 'all'`: none listed, the config saying they are found).
 */
export function validateIntegration(
  registry: ProviderRegistry,
  i: NewIntegration,
  opts: { allowFaultInjection: boolean } = { allowFaultInjection: false },
): ResolvedIntegration {
  checkText('org', i.orgId, INTEGRATION_LIMITS.org);
  if (/\s/.test(i.orgId)) throw new ValidationError('org', 'must not contain white space');
  if (!PROVIDER_NAME_RE.test(i.provider)) throw new ValidationError('provider', PROVIDER_NAME_RULE);
  checkText('name', i.name, INTEGRATION_LIMITS.name);
  const sources = i.sources === 'all' ? [] : i.sources;
  checkSources(sources);
  if (!registry.has(i.provider)) {
    throw new ValidationError(
      'provider',
      `unknown provider "${i.provider}" (known: ${registry
        .list()
        .map((p) => p.name)
        .join(', ')})`,
    );
  }
  const provider = registry.get(i.provider);
  provider.validateConfig?.(i.config ?? {}, { allowFaultInjection: opts.allowFaultInjection });
  sources.forEach((s, n) => provider.validateSource?.(s, `sources.${n}`));
  const config = configFor(provider, i.config ?? {}, i.sources);
  const info = { id: '', orgId: i.orgId, provider: i.provider, name: i.name, config };
  const known = new Set((provider.datasetsFor?.(info) ?? provider.datasets).map((d) => d.key));
  if (i.datasets.length === 0) throw new ValidationError('datasets', 'at least one dataset is required');
  for (const d of i.datasets)
    if (!known.has(d)) throw new ValidationError('datasets', `unknown dataset "${d}" for ${i.provider}`);
  if (new Set(i.datasets).size !== i.datasets.length) throw new ValidationError('datasets', 'contains duplicates');
  if (i.credential !== undefined) checkCredentialFor(registry, i.provider, config, i.credential);
  return { ...i, sources, config };
}

/** The config stored with `sources`: the provider's say for `'all'` (or a list it checks), else as given. */
function configFor(
  provider: Provider,
  config: Record<string, unknown>,
  sources: readonly string[] | 'all',
): Record<string, unknown> {
  if (provider.sourceDiscovery) return provider.sourceDiscovery.configFor(config, sources);
  if (sources !== 'all') return config;
  throw new ValidationError('sources', `"all" is for a provider that finds sources; list ${provider.name}'s sources`);
}

/**
 * Throws `ValidationError` naming `credential` unless it passes the generic checks and, for a
 * provider that has its own (`Provider.validateCredential`), the provider's for `config`.
 */
export function checkCredentialFor(
  registry: ProviderRegistry,
  provider: string,
  config: Record<string, unknown>,
  credential: unknown,
): asserts credential is string {
  validateCredential(credential);
  if (registry.has(provider)) registry.get(provider).validateCredential?.(credential, config);
}

function checkSources(sources: readonly string[]): void {
  if (sources.length > INTEGRATION_LIMITS.sources) {
    throw new ValidationError('sources', `must list at most ${INTEGRATION_LIMITS.sources} sources`);
  }
  sources.forEach((s, n) => checkText(`sources.${n}`, s, INTEGRATION_LIMITS.sourceKey));
  if (new Set(sources).size !== sources.length) throw new ValidationError('sources', 'contains duplicates');
}

/** Creates the integration with its sources and datasets in one transaction. */
export interface IntegrationDeps {
  registry: ProviderRegistry;
  clock: Clock;
  settings: Pick<ResolvedSettings, 'allowFaultInjection'>;
  /** Needed to store a credential. */
  secrets?: Keyring;
}

export async function createIntegration(db: Db, deps: IntegrationDeps, i: NewIntegration): Promise<CreatedIntegration> {
  const resolved = validateIntegration(deps.registry, i, { allowFaultInjection: deps.settings.allowFaultInjection });
  return db.transaction((tx) => insertIntegrationInTx(tx, deps, resolved));
}

/**
 * Validates and writes the integration, its sources and its datasets inside the caller's open
 * transaction (e.g. with the Idempotency-Key answer that records it).
 */
export async function createIntegrationInTx(
  tx: Tx,
  deps: IntegrationDeps,
  i: NewIntegration,
): Promise<CreatedIntegration> {
  const resolved = validateIntegration(deps.registry, i, { allowFaultInjection: deps.settings.allowFaultInjection });
  return insertIntegrationInTx(tx, deps, resolved);
}

async function insertIntegrationInTx(
  tx: Tx,
  deps: IntegrationDeps,
  i: ResolvedIntegration,
): Promise<CreatedIntegration> {
  const row = await insertIntegration(
    tx,
    { orgId: i.orgId, provider: i.provider, name: i.name, config: i.config },
    deps.clock.now(),
  );
  await insertSources(tx, i.orgId, row.id, i.sources);
  await insertDatasets(tx, i.orgId, row.id, i.datasets);
  if (i.credential !== undefined) {
    if (!deps.secrets) throw new SecretError('secret_key_missing', 'credentials cannot be stored without a keyring');
    const c = { orgId: i.orgId, integrationId: row.id, secret: i.credential };
    await storeCredential(tx, deps.secrets, c, deps.clock.now());
  }
  return { ...row, sources: [...i.sources], datasets: [...i.datasets] };
}

export interface IntegrationDeletion {
  /** The integration as it was. */
  integration: IntegrationRow;
  /** Its runs (with their units and outbox rows) and schedules, deleted with it. */
  runsDeleted: number;
  schedulesDeleted: number;
  /** Rows deleted from each normalized table with `purgeData`; null without (the synced data stays). */
  purged: PurgedRows | null;
}

/** Deletes an integration in one transaction (see deleteIntegrationInTx). */
export async function deleteIntegration(
  db: Db,
  id: string,
  opts: { orgId: string | null; purgeData: boolean },
): Promise<IntegrationDeletion> {
  return db.transaction((tx) => deleteIntegrationInTx(tx, id, opts));
}

/**
 * Deletes the integration of `orgId` (any org when null) inside the caller's transaction: its
 * sources, datasets, runs, JobRuns, schedules and watermarks go with it. Its synced data in the
 * normalized tables and its work-item metrics stay unless `purgeData`, which deletes them in the
 * same transaction. Throws `NotFoundError` when there is no such integration and
 * `IntegrationBusyError` (nothing deleted) while it has unfinished runs.
 */
export async function deleteIntegrationInTx(
  tx: Tx,
  id: string,
  opts: { orgId: string | null; purgeData: boolean },
): Promise<IntegrationDeletion> {
  const integration = await lockIntegration(tx, id, opts.orgId);
  if (!integration) throw new NotFoundError('integration', id);
  const live = await countLiveRuns(tx, id);
  if (live > 0) throw new IntegrationBusyError(id, live);
  const deleted = await deleteIntegrationRecords(tx, id);
  if (deleted.schedules > 0) await notifySchedulesChanged(tx);
  const purged = opts.purgeData ? await purgeNormalizedData(tx, integration.org_id, id) : null;
  return { integration, runsDeleted: deleted.runs, schedulesDeleted: deleted.schedules, purged };
}
