/**
 * The steps of every unit on the kit, which the runner (runner.ts) puts together: find the unit's
 * dataset, require a credential, open the shared budget(s) of (org, budget name, credential), list
 * the sources a reference-tier unit reads, combine per-source results, and record what the budgets
 * saw however the unit ends.
 */
import { VERIFY_COUNTS, verifyCountsOf, type VerifyCounts } from '../../domain/verify.js';
import { NonRetryableError } from '../../errors.js';
import { listSources } from '../../store/integrations.js';
import type { DatasetSpec, PostSyncHandler, UnitContext, UnitCredential, UnitResult } from '../../sdk/types.js';
import { BudgetLedger, RateBudget, type BudgetWindowRules } from './budget.js';
import { processOutboundPolicy, type OutboundPolicy } from './outbound.js';
import type { ProviderLimits } from './limits.js';
import type { RetryOptions } from './retry.js';

/** Shared-budget tuning a provider's options may carry (tests). */
export interface BudgetTuning {
  reserve?: number;
  flushEvery?: number;
  probePollMs?: number;
  probePolls?: number;
}

/** The options every provider on the kit takes. */
export interface HttpProviderOptions {
  /** Post-sync handlers (the normalized store's `work-item-metrics`). */
  postSyncHandlers?: readonly PostSyncHandler[];
  /** Pages an incremental unit reads before it stops. @default DEFAULT_MAX_PAGES (200) */
  maxPages?: number;
  /** In-place retries of 5xx and network failures. */
  retry?: RetryOptions;
  /** Shared-budget tuning (tests). */
  budget?: BudgetTuning;
  /** @default the outbound policy's fetch (`outbound`) */
  fetch?: typeof fetch;
  /** Where its requests may go and how long they may take (outbound.ts). @default processOutboundPolicy() */
  outbound?: OutboundPolicy;
  /** What it may return (SYNC_PROVIDER_MAX_RESPONSE_BYTES, SYNC_UNIT_MAX_PAGES). @default DEFAULT_PROVIDER_LIMITS */
  limits?: Partial<ProviderLimits>;
}

/** The outbound policy a provider follows: its own, or the process environment's. */
export function outboundOf(opts: HttpProviderOptions): OutboundPolicy {
  return opts.outbound ?? processOutboundPolicy();
}

/** `<provider> integration "<name>"`: how errors and logs name the integration (never the secret). */
export function subjectOf(ctx: UnitContext, provider: string): string {
  return `${provider} integration "${ctx.integration.name}"`;
}

/** The definition of the unit's dataset; a key the provider does not know is an adapter error. */
export function datasetOf<D extends { spec: DatasetSpec }>(defs: readonly D[], ctx: UnitContext, subject: string): D {
  const def = defs.find((d) => d.spec.key === ctx.unit.datasetKey);
  if (!def) throw new NonRetryableError(`${subject}: unknown dataset ${ctx.unit.datasetKey}`, 'adapter_error');
  return def;
}

/** The integration's credential; none set is a non-retryable `auth` failure naming the integration. */
export function credentialOf(ctx: UnitContext, subject: string): UnitCredential {
  if (!ctx.credential) throw new NonRetryableError(`${subject}: no credential is set`, 'auth');
  return ctx.credential;
}

/** The shared budget `budgetName` (a provider's name, or e.g. `linear:complexity`) of the unit's credential. */
export function unitBudget(
  ctx: UnitContext,
  b: {
    budgetName: string;
    credentialId: string;
    subject: string;
    share?: number;
    ledger?: BudgetLedger;
    windows?: BudgetWindowRules;
  },
  tuning?: BudgetTuning,
): RateBudget {
  return new RateBudget({
    db: ctx.db,
    key: { orgId: ctx.unit.orgId, provider: b.budgetName, credentialId: b.credentialId },
    owner: ctx.unit.id,
    clock: ctx.clock,
    signal: ctx.signal,
    subject: b.subject,
    share: b.share,
    ...(b.ledger ? { ledger: b.ledger } : {}),
    ...b.windows,
    ...tuning,
  });
}

/**
 * The sources a unit reads, each parsed by `parse`: its own; or, for a unit planned once per run
 * without a source (`allSources`), every enabled source of the integration, in order.
 */
export async function sourcesOf<T>(
  ctx: UnitContext,
  allSources: boolean,
  parse: (key: string | null) => T,
): Promise<T[]> {
  if (ctx.unit.sourceKey !== null || !allSources) return [parse(ctx.unit.sourceKey)];
  const sources = (await listSources(ctx.db, ctx.unit.integrationId)).filter((s) => s.enabled);
  return sources.map((s) => parse(s.external_key));
}

/** One result for the sources a unit read (a single one is returned as is). */
export function combineResults(results: readonly UnitResult[]): UnitResult {
  if (results.length === 1) return results[0]!;
  const touched = new Set(results.flatMap((r) => r.touchedSurfaces ?? []));
  const combined: UnitResult = {
    items: results.reduce((n, r) => n + (r.items ?? 0), 0),
    touchedSurfaces: [...touched],
  };
  // A verify unit of several jobs (an integration-wide dataset, one job per source) counts them all.
  const counts = results.map(verifyCountsOf).filter((c): c is VerifyCounts => c !== null);
  if (counts.length > 0) {
    combined.verify = Object.fromEntries(VERIFY_COUNTS.map((k) => [k, counts.reduce((n, c) => n + c[k], 0)]));
  }
  const incomplete = results.find((r) => r.incomplete !== undefined)?.incomplete;
  if (incomplete !== undefined) combined.incomplete = incomplete;
  return combined;
}

/** What the unit saw of each budget is recorded; a failure to record never masks the unit's outcome. */
export async function recordBudgetsQuietly(ctx: UnitContext, budgets: readonly RateBudget[]): Promise<void> {
  for (const budget of budgets) {
    try {
      await budget.flush();
    } catch (err) {
      ctx.logger.warn({ err, unitId: ctx.unit.id }, 'rate_budget_record_failed');
    }
  }
}
