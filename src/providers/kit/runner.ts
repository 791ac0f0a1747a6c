/**
 * The per-unit runner every provider on the kit shares. A provider describes itself once
 * (`ProviderUnits`: name, dataset table, config parser, source format, client, jobs) and the
 * runner does the rest of every unit:
 *
 * 1. names the integration (`subject`), finds the unit's dataset, parses the config (under the
 *    provider's outbound policy: a URL it refuses fails the unit as `provider_error`), and lists the
 *    sources the unit reads (its own; every enabled one for a reference unit planned without);
 * 2. a dataset with nothing to call returns at once, naming the dataset that covers it;
 * 3. requires a credential, and opens the shared budget(s) of (org, budget name, credential — or
 *    whose limit it spends, `budgetHolder`);
 * 4. builds the provider's client and runs the dataset's function over the provider's jobs, one
 *    after another, combining their results;
 * 5. records what the budgets saw however the unit ends.
 */
import { NonRetryableError, ValidationError } from '../../errors.js';
import type { SurfaceHookMap } from '../../sdk/normalized.js';
import type { Provider, UnitContext, UnitCredential, UnitResult } from '../../sdk/types.js';
import { BudgetLedger, type BudgetWindowRules, type RateBudget } from './budget.js';
import type { ClientOptions } from './call.js';
import type { SourceKeys } from './config.js';
import { specsOf, type DatasetDef, type DatasetRunner } from './datasets.js';
import type { OutboundPolicy } from './outbound.js';
import { UnitPages } from './pages.js';
import {
  combineResults,
  credentialOf,
  datasetOf,
  outboundOf,
  recordBudgetsQuietly,
  sourcesOf,
  subjectOf,
  unitBudget,
  type HttpProviderOptions,
} from './unitScaffold.js';

/** What every job of a unit carries, whatever the provider. */
export interface UnitBase {
  ctx: UnitContext;
  since: Date | null;
  before: Date | null;
  backfill: boolean;
  /** Every dataset the unit fetches: its own first, then those fetched with it. */
  datasets: readonly string[];
  /** Pages an incremental unit reads before it stops (and moves its watermark to what it read). */
  maxPages: number;
  /** Every listing's pages, each walked as a trail (loops refused) and counted against the unit's bound. */
  pages: UnitPages;
}

/** What the runner hands a provider to build its client from. */
export interface UnitSetup<O, C> {
  ctx: UnitContext;
  opts: O;
  config: C;
  credential: UnitCredential;
  /** Whose limit the unit spends (`ProviderUnits.budgetHolder`, else the credential's id). */
  budgetHolder: string;
  /** What every client on the kit is made with (call.ts): subject, clock, signal, logger, retries, fetch. */
  call: ClientOptions;
  /** The unit's view of the credential's shared budget `name` (@default the provider's name). */
  budget: (name?: string) => RateBudget;
}

/** What the runner hands a provider to build its jobs from. */
export interface JobSetup<O, C, K> extends UnitSetup<O, C> {
  client: K;
  base: UnitBase;
}

/**
 * A provider on the kit: O its options, C its parsed config, S a parsed source, K its client,
 * J the job its dataset functions take.
 */
export interface ProviderUnits<O extends HttpProviderOptions, C extends { budgetShare: number }, S, K, J> {
  name: string;
  datasets: readonly DatasetDef<J>[];
  /** `Provider.incrementalOverlapMs`: how far behind its writes the provider's listings may be. */
  incrementalOverlapMs: number;
  /** How its budgets' windows read and start (budget.ts). @default exact resets, the engine's jitter */
  budgetWindows?: BudgetWindowRules;
  /** Reads an integration's config, its URL under `outbound`, throwing `ValidationError` naming `config.<key>`. */
  parseConfig: (config: unknown, outbound: OutboundPolicy) => C;
  sources: SourceKeys<S>;
  client(u: UnitSetup<O, C>): K;
  /**
   * The jobs a unit runs, in order, over the sources it reads: one per source, or one for them all.
   * Produced lazily (a generator) when each job should take its time when it starts.
   */
  jobs(u: JobSetup<O, C, K>, sources: readonly S[]): Iterable<J>;
  /** Its hooks on the normalized surfaces (`Provider.surfaceHooks`). @default none */
  surfaceHooks?: SurfaceHookMap;
  /**
   * Checks a credential before it is stored, with the config it is for (`Provider.validateCredential`),
   * throwing `ValidationError` naming `credential` and never quoting it. @default the generic checks only
   */
  checkCredential?(credential: string, config: C): void;
  /**
   * Whose rate limit a unit spends (budgets are kept per org, budget name and this): e.g. a GitHub
   * App installation's, whatever key signs for it. @default the credential's id
   */
  budgetHolder?(config: C, credential: UnitCredential): string;
}

/** Pages an incremental unit reads before it stops, when the options give none. */
export const DEFAULT_MAX_PAGES = 200;

/**
 * A provider on the kit (weekly backfill windows, 30 days of first incremental depth) whose units
 * share one in-process ledger of what they know of each credential's budget.
 */
export function httpProvider<O extends HttpProviderOptions, C extends { budgetShare: number }, S, K, J>(
  p: ProviderUnits<O, C, S, K, J>,
  opts: O,
): Provider {
  const ledger = new BudgetLedger();
  return {
    name: p.name,
    datasets: specsOf(p.datasets),
    validateConfig: (config) => void p.parseConfig(config, outboundOf(opts)),
    validateSource: p.sources.validate,
    ...(p.checkCredential ? { validateCredential: credentialCheck(p, opts) } : {}),
    windowDays: 7,
    initialDepthDays: 30,
    incrementalOverlapMs: p.incrementalOverlapMs,
    runUnit: (ctx) => runUnit(p, ctx, opts, ledger),
    ...(opts.postSyncHandlers ? { postSyncHandlers: opts.postSyncHandlers } : {}),
    ...(p.surfaceHooks ? { surfaceHooks: p.surfaceHooks } : {}),
  };
}

/** `Provider.validateCredential` of `p`: its own check, with the config parsed. */
function credentialCheck<O extends HttpProviderOptions, C extends { budgetShare: number }, S, K, J>(
  p: ProviderUnits<O, C, S, K, J>,
  opts: O,
): NonNullable<Provider['validateCredential']> {
  return (credential, config) => p.checkCredential?.(credential, p.parseConfig(config, outboundOf(opts)));
}

/** Runs one unit of `p` (see the module comment). */
export async function runUnit<O extends HttpProviderOptions, C extends { budgetShare: number }, S, K, J>(
  p: ProviderUnits<O, C, S, K, J>,
  ctx: UnitContext,
  opts: O,
  ledger?: BudgetLedger,
): Promise<UnitResult> {
  const subject = subjectOf(ctx, p.name);
  const def = datasetOf(p.datasets, ctx, subject);
  const config = unitConfig(p.parseConfig, ctx, subject, outboundOf(opts));
  const sources = await sourcesOf(ctx, def.spec.tier === 'reference', (key) => p.sources.of(key, subject));
  const run = ctx.unit.mode === 'verify' ? verifyRunner(def, subject) : def.run;
  if (!run) return { items: 0, touchedSurfaces: [], coveredBy: def.coveredBy ?? def.spec.fetchedWith };
  const credential = credentialOf(ctx, subject);
  const holder = p.budgetHolder?.(config, credential) ?? credential.id;
  const budgets = new Map<string, RateBudget>();
  const budget = (budgetName = p.name) => {
    let b = budgets.get(budgetName);
    if (!b) {
      const share = config.budgetShare;
      const windows = p.budgetWindows;
      b = unitBudget(ctx, { budgetName, credentialId: holder, subject, share, ledger, windows }, opts.budget);
      budgets.set(budgetName, b);
    }
    return b;
  };
  const call = unitCall(ctx, subject, opts);
  const setup: UnitSetup<O, C> = { ctx, opts, config, credential, budgetHolder: holder, call, budget };
  const client = p.client(setup);
  try {
    const results: UnitResult[] = [];
    for (const job of p.jobs({ ...setup, client, base: unitBase(ctx, subject, opts) }, sources)) {
      results.push(await run(job));
    }
    return combineResults(results);
  } finally {
    await recordBudgetsQuietly(ctx, [...budgets.values()]);
  }
}

/** A verify unit's function; a dataset without one was never to be planned in a verify run. */
function verifyRunner<J>(def: DatasetDef<J>, subject: string): DatasetRunner<J> {
  if (def.verify) return def.verify;
  throw new NonRetryableError(`${subject}: dataset ${def.spec.key} cannot be verified`, 'adapter_error');
}

/** The integration's config; one no longer valid (a URL the policy now refuses) fails the unit. */
function unitConfig<C>(
  parse: (c: unknown, o: OutboundPolicy) => C,
  ctx: UnitContext,
  subject: string,
  o: OutboundPolicy,
): C {
  try {
    return parse(ctx.integration.config, o);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    throw new NonRetryableError(`${subject}: ${err.message}`, 'provider_error', { cause: err });
  }
}

function unitCall(ctx: UnitContext, subject: string, opts: HttpProviderOptions): ClientOptions {
  return {
    subject,
    clock: ctx.clock,
    signal: ctx.signal,
    logger: ctx.logger,
    ...(opts.retry ? { retry: opts.retry } : {}),
    fetch: opts.fetch ?? outboundOf(opts).fetch,
    ...(opts.limits?.maxResponseBytes ? { maxResponseBytes: opts.limits.maxResponseBytes } : {}),
  };
}

function unitBase(ctx: UnitContext, subject: string, opts: HttpProviderOptions): UnitBase {
  const { unit } = ctx;
  return {
    ctx,
    since: unit.since,
    before: unit.before,
    backfill: unit.mode === 'backfill',
    datasets: unit.datasets.includes(unit.datasetKey) ? unit.datasets : [unit.datasetKey, ...unit.datasets],
    maxPages: opts.maxPages ?? DEFAULT_MAX_PAGES,
    pages: new UnitPages(subject, opts.limits?.unitMaxPages),
  };
}
