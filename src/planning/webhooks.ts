/**
 * Webhook deliveries as triggers (SPEC §8): a signed delivery's row (unique per provider delivery id)
 * and the targeted incremental run it arms are written in ONE transaction.
 *
 * A delivery for an enabled source, of an event that maps to enabled datasets, either
 * - joins the integration's planned webhook run covering that source and those datasets (its dispatch
 *   is due SYNC_WEBHOOK_DEBOUNCE_SECONDS after the delivery that armed it: deliveries that close
 *   together coalesce into one run, read after all of them);
 * - or, while a live run of the integration reads that source (any of its datasets: a scheduled
 *   poll, a backfill, a webhook run already dispatched) or the integration has
 *   SYNC_INTEGRATION_MAX_LIVE_RUNS live runs, is remembered (webhook_pending_runs): the reconciler
 *   arms one run for the remembered sources no longer read by a live run (`armRememberedRuns`),
 *   in the transaction that takes their rows;
 * - or arms a run limited to that source and those datasets (taking what was remembered for
 *   sources no live run reads, too). Runs of disjoint sources run side by side: each source's
 *   watermarks are its own.
 * A redelivered id is recorded `duplicate` and arms nothing. A delivery that deletes a work item
 * (GitHub `issues.deleted`, Linear `Issue` `remove`, `jira:issue_deleted`) also tombstones it in the
 * normalized store, in the same transaction; one that names a work item a lagging listing may not
 * show yet (Jira) records it for the run to read directly (webhook_named_items). The source is the
 * one the delivery names, or, when it names only a Linear team's id or a work item's id, the one the
 * store has for that (./sourceHints.ts).
 *
 * Locks: joining locks the planned run's row FOR SHARE (it cannot be dispatched before the delivery
 * commits); remembering locks the source's webhook_pending_runs row (a run that ends meanwhile
 * leaves it to the reconciler's next pass). Only arming takes the integration's row lock — then
 * looks again, as another delivery may have armed meanwhile — so deliveries that join or are
 * remembered, the common case under load, do not queue behind one another. Where a delivery goes
 * is decided before it writes anything. The integration's row lock is FOR NO KEY UPDATE: the
 * key-share lock every row referencing the integration takes does not wait for it, so a delivery
 * that only writes rows never waits for an arming one (which may be waiting for it: the same
 * delivery id redelivered, a pending-run row).
 */
import type { Logger } from 'pino';
import type { ResolvedSettings } from '../config.js';
import type { Db, Tx } from '../db/types.js';
import type { TriggeredBy } from '../domain/statuses.js';
import { describeError } from '../errors.js';
import { markDeleted } from '../sinks/normalized/tombstones.js';
import {
  getIntegration,
  listDatasets,
  listSources,
  type IntegrationRow,
  type SourceRow,
} from '../store/integrations.js';
import { countLiveRuns } from '../store/runs.js';
import { nameItem } from '../store/webhookNamedItems.js';
import {
  armPendingDeliveries,
  insertDecidedDelivery,
  insertInertDelivery,
  insertReceivedDelivery,
  setDeliveryOutcome,
  type NewDelivery,
  type RememberedRead,
  type WebhookOutcome,
} from '../store/webhookDeliveries.js';
import {
  integrationsWithPendingRuns,
  readRoutingFacts,
  takeFreePendingRuns,
  takePendingRuns,
  type PendingRun,
  type RoutingFacts,
} from '../store/webhookRuns.js';
import { sourceKeyOf } from './sourceHints.js';
import { triggerInTx, type TriggerDeps } from './triggers.js';
import type { WebhookDelivery } from './webhookPayload.js';

/** What a webhook-armed run (and its JobRun) records as its trigger. */
export const WEBHOOK_TRIGGER = 'webhook' satisfies TriggeredBy;

export interface WebhookDeps extends TriggerDeps {
  settings: TriggerDeps['settings'] & Pick<ResolvedSettings, 'webhookDebounceMs'>;
}

export interface ReceivedDelivery {
  /** The row recorded for this delivery. */
  id: string;
  duplicate: boolean;
  /** What it did (null for a duplicate). */
  outcome: WebhookOutcome | null;
  /** The run it armed or joined. */
  syncRunId: string | null;
}

/** What a delivery row records of it. */
type DeliveryFields = Pick<NewDelivery, 'deliveryId' | 'event' | 'action' | 'source' | 'summary'>;

function rowOf(integration: Pick<IntegrationRow, 'id' | 'org_id' | 'provider'>, d: DeliveryFields): NewDelivery {
  return {
    orgId: integration.org_id,
    integrationId: integration.id,
    provider: integration.provider,
    deliveryId: d.deliveryId,
    event: d.event,
    action: d.action,
    source: d.source,
    summary: d.summary,
  };
}

/** Records a signed delivery that cannot be read (`rejected`); arms nothing. Returns its row id. */
export function recordRejectedDelivery(
  tx: Tx,
  integration: IntegrationRow,
  partial: { deliveryId: string | null; event: string | null; reason: string },
  now: Date,
): Promise<string> {
  const d = { ...partial, action: null, source: null, summary: { reason: partial.reason } };
  return insertInertDelivery(tx, rowOf(integration, d), 'rejected', now);
}

/**
 * Records a readable signed delivery to the `provider` integration `integrationId` and does what it
 * asks (see the module's comment), in `tx`. Null when there is no such integration of that provider.
 * A delivery that joins a run, is remembered or is ignored takes two statements (what its route
 * depends on; its row with the outcome, and what it remembers); only arming takes more.
 */
export async function receiveDeliveryInTx(
  tx: Tx,
  deps: WebhookDeps,
  target: { provider: string; integrationId: string },
  d: WebhookDelivery,
): Promise<ReceivedDelivery | null> {
  const key = await deliverySourceKey(tx, target, d);
  if (key === undefined) return null;
  const ask = { integrationId: target.integrationId, sourceKey: key ?? '', datasets: d.datasets };
  const facts = await readRoutingFacts(tx, { ...ask, triggeredBy: WEBHOOK_TRIGGER });
  const integration = facts.integration;
  if (!integration || integration.provider !== target.provider) return null;
  const now = deps.clock.now();
  const resolved = { ...d, source: key };
  const source = integration.enabled ? facts.source : null;
  // Decided before anything is written; only arming takes the integration's row lock.
  const route = source === null ? null : await routeOf(tx, deps, facts, source, ask);
  const row = rowOf(integration, resolved);
  if (route !== null && 'arm' in route) return receiveArming(tx, deps, route, source!, resolved, now);
  const decided = decidedOf(route);
  const id = await insertDecidedDelivery(tx, row, decided, now);
  if (id === null) return duplicateOf(tx, row, now);
  if (source !== null) await applyToStore(tx, integration, source, resolved, route !== null, now);
  return { id, duplicate: false, outcome: decided.outcome, syncRunId: decided.runId };
}

/**
 * The source key the delivery names, or the stored one its hint leads to (null: none); undefined
 * when a hint must be followed and there is no such integration of that provider.
 */
async function deliverySourceKey(
  tx: Tx,
  target: { provider: string; integrationId: string },
  d: WebhookDelivery,
): Promise<string | null | undefined> {
  if (d.source !== null || d.sourceHint === null) return d.source;
  const integration = await getIntegration(tx, target.integrationId);
  if (!integration || integration.provider !== target.provider) return undefined;
  return sourceKeyOf(tx, integration, d);
}

/** The outcome written with a delivery that does not arm: its run joined, or its read remembered. */
function decidedOf(route: Exclude<Route, { arm: Wanted }> | null): {
  outcome: WebhookOutcome;
  runId: string | null;
  remember: RememberedRead | null;
} {
  if (route === null) return { outcome: 'ignored', runId: null, remember: null };
  if ('join' in route) return { outcome: 'coalesced', runId: route.join, remember: null };
  const { sourceId, datasets } = route.remember;
  return { outcome: 'pending', runId: null, remember: { sourceId, datasets } };
}

async function duplicateOf(tx: Tx, row: NewDelivery, now: Date): Promise<ReceivedDelivery> {
  const dup = await insertInertDelivery(tx, row, 'duplicate', now);
  return { id: dup, duplicate: true, outcome: null, syncRunId: null };
}

/** A delivery that arms a run (the integration locked): its row, what it asks of the store, the run. */
async function receiveArming(
  tx: Tx,
  deps: WebhookDeps,
  route: { arm: Wanted; integration: IntegrationRow },
  source: SourceRef,
  d: WebhookDelivery,
  now: Date,
): Promise<ReceivedDelivery> {
  const row = rowOf(route.integration, d);
  const id = await insertReceivedDelivery(tx, row, now);
  if (id === null) return duplicateOf(tx, row, now);
  await applyToStore(tx, route.integration, source, d, true, now);
  const dispatchAt = new Date(now.getTime() + deps.settings.webhookDebounceMs);
  const sourceRun = { source_id: route.arm.sourceId, datasets: route.arm.datasets };
  const runId = await armWebhookRun(tx, deps, route.integration, [sourceRun], dispatchAt);
  const { outcome, runId: armed } = runId === null ? IGNORED : { outcome: 'armed' as const, runId };
  await setDeliveryOutcome(tx, id, outcome, armed);
  return { id, duplicate: false, outcome, syncRunId: armed };
}

type Acted = { outcome: WebhookOutcome; runId: string | null };
const IGNORED: Acted = { outcome: 'ignored', runId: null };

/** The source a delivery is about: its id and key. */
type SourceRef = Pick<SourceRow, 'id' | 'external_key'>;

/** A delivery's source and datasets, to read. */
type Wanted = { orgId: string; integrationId: string; sourceId: string; datasets: string[] };

/** What a delivery will do: join a planned run, be remembered, or arm one (the integration then locked). */
type Route = { join: string } | { remember: Wanted } | { arm: Wanted; integration: IntegrationRow };

/** What the routing facts are read for. */
type RoutingAsk = { integrationId: string; sourceKey: string; datasets: readonly string[] };

/**
 * Where the delivery goes: the planned webhook run covering its source and datasets (its row locked
 * FOR SHARE by `facts`), remembered while a unit of the source is open or the integration has its
 * cap of live runs, or a run to arm — decided again under the integration's row lock (another
 * delivery may have armed meanwhile). Null when none of its datasets is enabled. Writes nothing.
 * Remembering on what was read without the lock is safe: a run that ends meanwhile leaves the
 * remembered read to the reconciler's next pass, as one that ends after the commit does.
 */
async function routeOf(
  tx: Tx,
  deps: WebhookDeps,
  facts: RoutingFacts,
  source: SourceRef,
  ask: RoutingAsk,
): Promise<Route | null> {
  if (facts.datasets.length === 0) return null;
  const integration = facts.integration!;
  const wanted: Wanted = {
    orgId: integration.org_id,
    integrationId: integration.id,
    sourceId: source.id,
    datasets: facts.datasets,
  };
  const cap = deps.settings.integrationMaxLiveRuns;
  const first = joinOrRemember(facts, wanted, cap);
  if (first) return first;
  const locked = await getIntegration(tx, integration.id, { lock: true });
  if (!locked?.enabled) return null;
  const again = await readRoutingFacts(tx, { ...ask, triggeredBy: WEBHOOK_TRIGGER });
  return joinOrRemember(again, wanted, cap) ?? { arm: wanted, integration: locked };
}

/** The run to join, or remembering while the source is busy or the integration at `cap`; null: neither — arm one. */
function joinOrRemember(facts: RoutingFacts, wanted: Wanted, cap: number): Route | null {
  if (facts.joinable !== null) return { join: facts.joinable };
  return facts.busy || facts.liveRuns >= cap ? { remember: wanted } : null;
}

/**
 * What the delivery asks of the store besides its run: a deleted work item tombstoned; one a lagging
 * listing may not show yet named for the run to read directly (only when it goes to a run: `routed`).
 */
async function applyToStore(
  tx: Tx,
  integration: Pick<IntegrationRow, 'id' | 'org_id' | 'provider'>,
  source: SourceRef,
  d: WebhookDelivery,
  routed: boolean,
  now: Date,
): Promise<void> {
  if (d.deletesWorkItem !== null) {
    const scope = {
      orgId: integration.org_id,
      integrationId: integration.id,
      provider: integration.provider,
      surface: 'work_items' as const,
      source: source.external_key,
    };
    await markDeleted(tx, scope, [d.deletesWorkItem], now);
  }
  if (routed && d.namesWorkItem !== null) {
    const named = { orgId: integration.org_id, integrationId: integration.id, sourceId: source.id };
    await nameItem(tx, { ...named, externalId: d.namesWorkItem }, now);
  }
}

async function enabledDatasets(tx: Tx, integrationId: string): Promise<Set<string>> {
  return new Set((await listDatasets(tx, integrationId)).filter((r) => r.enabled).map((r) => r.dataset_key));
}

/**
 * Plans one incremental run over `wanted` and what the integration had remembered for sources no
 * live run reads (taken now): the enabled ones of those sources × the enabled ones of those
 * datasets, dispatched at `dispatchAt`. Marks the remembered deliveries of those sources armed with
 * it. The caller holds the integration's lock, has seen none of `wanted` busy and room under the
 * live-run cap. Returns the run's id, or null when nothing enabled is left to read.
 */
async function armWebhookRun(
  tx: Tx,
  deps: WebhookDeps,
  integration: IntegrationRow,
  wanted: readonly PendingRun[],
  dispatchAt: Date,
): Promise<string | null> {
  const all = [...(await takeFreePendingRuns(tx, integration.id)), ...wanted];
  const sources = (await listSources(tx, integration.id)).filter((s) => s.enabled);
  const enabledSources = new Set(sources.map((s) => s.id));
  const enabled = await enabledDatasets(tx, integration.id);
  const sourceIds = [...new Set(all.map((p) => p.source_id))].filter((id) => enabledSources.has(id)).sort();
  const datasets = [...new Set(all.flatMap((p) => p.datasets))].filter((k) => enabled.has(k)).sort();
  if (sourceIds.length === 0 || datasets.length === 0) return null;
  const t = await triggerInTx(tx, deps, {
    orgId: integration.org_id,
    integrationId: integration.id,
    mode: 'incremental',
    triggeredBy: WEBHOOK_TRIGGER,
    datasets,
    sourceIds,
    dispatchAt,
    // Runs of other sources may be live: the caller saw these sources free and room under the cap.
    force: true,
  });
  const keys = sources.filter((s) => sourceIds.includes(s.id)).map((s) => s.external_key);
  await armPendingDeliveries(tx, integration.id, t.syncRunId, keys);
  return t.syncRunId;
}

/**
 * The reconciler's step: for each integration with remembered deliveries of a source no live run
 * reads (at most `limit`), `armRememberedRunOf`. Returns how many runs were armed.
 */
export async function armRememberedRuns(
  db: Db,
  deps: WebhookDeps & { logger: Logger },
  limit: number,
): Promise<number> {
  let armed = 0;
  for (const { integration_id: id } of await integrationsWithPendingRuns(db, limit)) {
    if (await armRememberedRunOf(db, deps, id)) armed++;
  }
  return armed;
}

/**
 * One transaction that locks the integration, checks the live-run cap, takes what was remembered
 * for sources no live run reads and arms one run for it, due now. Taken by the reconciler's pass,
 * and by a worker as soon as a unit whose source had remembered deliveries ends, or a run of the
 * integration ends (the cap may have room again), so a remembered delivery does not wait for the
 * next pass. A failure is logged and the rows stay for the next pass. Returns whether a run was armed.
 */
export async function armRememberedRunOf(
  db: Db,
  deps: WebhookDeps & { logger: Logger },
  integrationId: string,
): Promise<boolean> {
  try {
    const runId = await db.transaction(async (tx) => {
      const integration = await getIntegration(tx, integrationId, { lock: true });
      if (!integration) return null;
      if (!integration.enabled) {
        await takePendingRuns(tx, integrationId);
        return null;
      }
      if ((await countLiveRuns(tx, integrationId)) >= deps.settings.integrationMaxLiveRuns) return null;
      return armWebhookRun(tx, deps, integration, [], deps.clock.now());
    });
    return runId !== null;
  } catch (err) {
    deps.logger.warn(
      { integrationId, err: describeError(err) },
      'could not arm the run of remembered webhook deliveries',
    );
    return false;
  }
}
