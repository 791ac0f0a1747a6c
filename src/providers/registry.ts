/** Providers, their sinks and post-sync handlers, looked up by name (one registry per engine). */
import { SyncRelayError } from '../errors.js';
import type { ResolvedSettings } from '../config.js';
import type { Db } from '../db/types.js';
import type { IntegrationInfo, PostSyncHandler, Provider, Sink } from '../sdk/types.js';
import { createGithubProvider } from './github/index.js';
import { createJiraProvider } from './jira/index.js';
import type { ProviderLimits } from './kit/limits.js';
import type { OutboundPolicy } from './kit/outbound.js';
import { createLinearProvider } from './linear/index.js';
import { createSyntheticProvider, syntheticSink } from './synthetic.js';
import { normalizedSink, workItemMetricsHandler, type StoredLimits } from '../sinks/normalized/index.js';

/** No provider is registered under `provider` (an integration names one this process lacks). */
export class UnknownProviderError extends SyncRelayError {
  constructor(readonly provider: string) {
    super('unknown_provider', `unknown provider "${provider}"`);
  }
}

/**
 * Look providers up by `integrations.provider`, never by a unit's `provider` column: a synthetic
 * integration's units may carry an impersonated name such as `linear`.
 */
export class ProviderRegistry {
  private readonly providers = new Map<string, Provider>();
  private readonly sinks = new Map<string, Sink>();
  private readonly extraHandlers: PostSyncHandler[] = [];

  /** Registers `provider` (and the sink its units write through); a name may be used once. */
  register(provider: Provider, sink?: Sink): this {
    if (this.providers.has(provider.name)) {
      throw new SyncRelayError('duplicate_provider', `provider "${provider.name}" is already registered`);
    }
    this.providers.set(provider.name, provider);
    if (sink) this.setSink(provider.name, sink);
    return this;
  }

  /** Sets (or replaces) the sink units of `provider` write through. */
  setSink(provider: string, sink: Sink): this {
    const hooks = this.get(provider).surfaceHooks;
    if (hooks) sink.useSurfaceHooks?.(hooks);
    this.sinks.set(provider, sink);
    return this;
  }

  /** A handler for every integration it `appliesTo`, besides the providers' own handlers. */
  registerPostSyncHandler(handler: PostSyncHandler): this {
    if (this.allHandlers().some((h) => h.name === handler.name)) {
      throw new SyncRelayError('duplicate_handler', `post-sync handler "${handler.name}" is already registered`);
    }
    this.extraHandlers.push(handler);
    return this;
  }

  has(name: string): boolean {
    return this.providers.has(name);
  }

  /** Throws `UnknownProviderError` (code `unknown_provider`) when `name` is not registered. */
  get(name: string): Provider {
    const provider = this.providers.get(name);
    if (!provider) throw new UnknownProviderError(name);
    return provider;
  }

  list(): Provider[] {
    return [...this.providers.values()];
  }

  /** The sink units of `provider` write through; throws when the provider or its sink is missing. */
  sinkFor(provider: string | Provider): Sink {
    const name = typeof provider === 'string' ? provider : provider.name;
    this.get(name);
    const sink = this.sinks.get(name);
    if (!sink) throw new SyncRelayError('unknown_sink', `provider "${name}" has no sink registered`);
    return sink;
  }

  /** The handlers that serve `integration`: its provider's own, then registry-wide ones, filtered by `appliesTo`. */
  postSyncHandlersFor(integration: IntegrationInfo): PostSyncHandler[] {
    const own = this.providers.get(integration.provider)?.postSyncHandlers ?? [];
    return [...own, ...this.extraHandlers].filter((h) => h.appliesTo?.(integration) ?? true);
  }

  private allHandlers(): PostSyncHandler[] {
    return [...this.list().flatMap((p) => p.postSyncHandlers ?? []), ...this.extraHandlers];
  }
}

/**
 * The built-ins: the synthetic provider writing through its Postgres sink, and GitHub, Linear and Jira
 * writing the normalized surfaces (one sink, running the hooks they declare), with the
 * `work-item-metrics` handler after each of their syncs. The HTTP providers follow `opts.outbound`
 * (the engine's, from its settings) or, without one, the process environment's outbound policy.
 */
export function defaultRegistry(
  db: Db,
  opts: { outbound?: OutboundPolicy; limits?: BuiltInLimits } = {},
): ProviderRegistry {
  const postSyncHandlers = [workItemMetricsHandler];
  const outbound = opts.outbound ? { outbound: opts.outbound } : {};
  const { maxResponseBytes, unitMaxPages, textMaxChars, rawMaxBytes } = opts.limits ?? {};
  const limits = { limits: { maxResponseBytes, unitMaxPages } };
  const normalized = normalizedSink(db, { limits: { textMaxChars, rawMaxBytes } });
  return new ProviderRegistry()
    .register(createSyntheticProvider(), syntheticSink(db))
    .register(createGithubProvider({ postSyncHandlers, ...outbound, ...limits }), normalized)
    .register(createLinearProvider({ postSyncHandlers, ...outbound, ...limits }), normalized)
    .register(createJiraProvider({ postSyncHandlers, ...outbound, ...limits }), normalized);
}

/** What the built-ins bound: each answer, each unit's pages (kit/limits.ts), each stored row (normalized sink). */
export type BuiltInLimits = Partial<ProviderLimits & StoredLimits>;

/** The built-ins' limits of `settings` (SYNC_PROVIDER_MAX_RESPONSE_BYTES, SYNC_UNIT_MAX_PAGES, SYNC_STORED_*). */
export function builtInLimits(
  settings: Pick<
    ResolvedSettings,
    'providerMaxResponseBytes' | 'unitMaxPages' | 'storedTextMaxChars' | 'storedRawMaxBytes'
  >,
): BuiltInLimits {
  return {
    maxResponseBytes: settings.providerMaxResponseBytes,
    unitMaxPages: settings.unitMaxPages,
    textMaxChars: settings.storedTextMaxChars,
    rawMaxBytes: settings.storedRawMaxBytes,
  };
}
