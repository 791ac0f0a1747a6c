/**
 * A local Linear GraphQL API emulator for tests, demos and benchmarks: a seeded workspace served
 * through a subset of Linear's public schema (schema.ts), requests parsed and validated with
 * `graphql`, Relay pagination, the filters syncrelay uses, Linear's rate-limit headers with
 * enforced request and complexity budgets, and injectable faults. Not part of the engine: only the
 * `emulate` and `demo --provider linear` commands, the benchmark and tests import it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../../clock.js';
import { ValidationError } from '../../errors.js';
import { hash32 } from '../core/random.js';
import { LinearFaults } from './faults.js';
import { generateWorkspace, type Workspace } from './generate.js';
import { mutateWorkspace, type LinearMutationSummary } from './mutate.js';
import {
  resolveLinearScale,
  resolveRateLimit,
  type LinearEmulatorOptions,
  type LinearFaultSpec,
  type LinearRateLimit,
  type LinearScale,
} from './options.js';
import { FixedWindow } from './ratelimit.js';
import { Views } from './resolvers.js';
import { rootValue } from './root.js';
import { linearSchema } from './schema.js';
import { createHandler, type EmulatorKey, type LinearRequestLogEntry } from './server.js';

export {
  LINEAR_FAULT_KINDS,
  LINEAR_SCALES,
  parseBudget,
  parseLinearEmulatorArgs,
  parseLinearFaults,
  parseLinearScale,
  type BudgetSpec,
  type LinearEmulatorFlags,
  type LinearEmulatorOptions,
  type LinearFaultKind,
  type LinearFaultSpec,
  type LinearRateLimit,
  type LinearScale,
} from './options.js';
export { LINEAR_SDL, linearSchema } from './schema.js';
export { queryComplexity } from './complexity.js';
export type { Workspace } from './generate.js';
export type { LinearMutationSummary } from './mutate.js';
export type { EmulatorKey, LinearRequestLogEntry } from './server.js';

export interface LinearEmulatorStats {
  requests: number;
  /** Requests per operation name. */
  byOperation: Record<string, number>;
  /** Answers that were limits (RATELIMITED or 429). */
  limited: number;
  complexity: number;
}

export interface LinearEmulator {
  /** `http://127.0.0.1:<port>/graphql`: use as the integration's `config.apiUrl`. */
  url: string;
  /** The personal API key (id `demo`), sent as `Authorization: <key>`. */
  token: string;
  /** The OAuth access token (id `oauth`), sent as `Authorization: Bearer <token>`. */
  oauthToken: string;
  keys: readonly EmulatorKey[];
  /** Every request, oldest first (bounded by `logLimit`). */
  requestLog: LinearRequestLogEntry[];
  stats(): LinearEmulatorStats;
  /** The workspace's records, for computing expected results. */
  data: Workspace;
  scale: LinearScale;
  rateLimit: Required<LinearRateLimit>;
  /** Replaces the injected faults. */
  setFaults(faults: LinearFaultSpec[]): void;
  /** Changes some data at the clock's now (see LinearMutationSummary). */
  mutate(): LinearMutationSummary;
  close(): Promise<void>;
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A key shaped like Linear's (`lin_api_…` / `lin_oauth_…`) derived from the seed: local only. */
export function emulatorKey(seed: number, prefix: 'lin_api_' | 'lin_oauth_', id: string): string {
  let out = prefix;
  for (let i = 0; out.length < prefix.length + 40; i++) out += ALPHABET[hash32(`${seed}:key:${id}:${i}`) % 62];
  return out;
}

export async function startLinearEmulator(opts: LinearEmulatorOptions = {}): Promise<LinearEmulator> {
  const seed = opts.seed ?? 1;
  if (!Number.isInteger(seed)) throw new ValidationError('seed', `expected an integer, got ${seed}`);
  const clock: Clock = opts.clock ?? systemClock;
  const scale = resolveLinearScale(opts.scale);
  const rateLimit = resolveRateLimit(opts.rateLimit);
  const faults = new LinearFaults(seed, opts.faults ?? []);
  const data = generateWorkspace(seed, scale, (opts.now ?? clock.now()).getTime());
  const keys: EmulatorKey[] = [
    { id: 'demo', key: emulatorKey(seed, 'lin_api_', 'demo'), kind: 'api-key' },
    { id: 'oauth', key: emulatorKey(seed, 'lin_oauth_', 'oauth'), kind: 'oauth' },
  ];
  const log: LinearRequestLogEntry[] = [];
  let base = '';
  const views = new Views(data, () => base);
  const server: Server = createServer(
    createHandler({
      clock,
      schema: linearSchema(),
      root: rootValue(data, views),
      keys,
      requests: new FixedWindow(rateLimit.requests, clock),
      complexity: new FixedWindow(rateLimit.complexity, clock),
      rateLimit,
      faults,
      log,
      logLimit: opts.logLimit ?? 100_000,
    }),
  );
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  base = `${origin}/_web/${data.urlKey}`;
  let rounds = 0;
  let closed: Promise<void> | null = null;
  return {
    url: `${origin}/graphql`,
    token: keys[0]!.key,
    oauthToken: keys[1]!.key,
    keys,
    requestLog: log,
    stats: () => statsOf(log),
    data,
    scale,
    rateLimit,
    setFaults: (f) => faults.set(f),
    mutate: () => mutateWorkspace(data, scale, ++rounds, clock.now().getTime()),
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

/** What an integration reading this emulator is made of (for `demo --provider linear` and tests). */
export function linearIntegrationFor(emu: LinearEmulator): {
  provider: 'linear';
  sources: string[];
  datasets: string[];
  config: { apiUrl: string };
  credential: string;
} {
  return {
    provider: 'linear',
    sources: emu.data.teams.map((t) => t.key),
    datasets: [...LINEAR_EMULATED_DATASETS],
    config: { apiUrl: emu.url },
    credential: emu.token,
  };
}

/** Every dataset the emulator serves data for (all of the provider's). */
export const LINEAR_EMULATED_DATASETS = [
  'teams',
  'members',
  'projects',
  'cycles',
  'workflow-states',
  'work-items',
  'work-item-comments',
  'work-item-history',
  'work-item-labels',
] as const;

/** The normalized tables a Linear sync writes, in the order a summary lists them. */
export const LINEAR_TABLES = [
  'teams',
  'members',
  'projects',
  'sprints',
  'work_items',
  'work_item_comments',
  'work_item_events',
] as const;

function statsOf(log: readonly LinearRequestLogEntry[]): LinearEmulatorStats {
  const byOperation: Record<string, number> = {};
  let limited = 0;
  let complexity = 0;
  for (const e of log) {
    const op = e.operation ?? '(none)';
    byOperation[op] = (byOperation[op] ?? 0) + 1;
    if (e.errorCode === 'RATELIMITED') limited++;
    if (e.status === 200) complexity += e.complexity ?? 0;
  }
  return { requests: log.length, byOperation, limited, complexity };
}
