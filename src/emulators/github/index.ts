/**
 * A local GitHub REST API emulator for tests and benchmarks: a seeded organisation served in
 * GitHub's real shapes, with its pagination, authentication, primary rate limit and injectable
 * faults. Not part of the engine: only the `emulate` and `demo --provider github` commands, the benchmark
 * and tests import it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../../clock.js';
import { ValidationError } from '../../errors.js';
import { FaultInjector } from './faults.js';
import { generateOrg, type OrgData } from './generate.js';
import { mutateOrg, type MutationSummary } from './mutate.js';
import {
  DEFAULT_RATE_LIMIT,
  parseRateLimit,
  resolveScale,
  validateRateLimit,
  validateTokens,
  type EmulatorScale,
  type EmulatorToken,
  type FaultSpec,
  type GithubEmulatorOptions,
  type RateLimitSpec,
} from './options.js';
import { hash32 } from '../core/random.js';
import { RateLimiter } from './ratelimit.js';
import { createHandler, type RequestLogEntry } from './server.js';

export { parseFaults } from './faults.js';
export { countsPerDay, type DayCounts } from './stats.js';
export { parseRateLimit, parseScale, SCALES, FAULT_KINDS } from './options.js';
export type {
  EmulatorScale,
  EmulatorToken,
  FaultKind,
  FaultSpec,
  GithubEmulatorOptions,
  RateLimitSpec,
} from './options.js';
export type { OrgData } from './generate.js';
export type { MutationSummary } from './mutate.js';
export type { RequestLogEntry } from './server.js';
export type * from './model.js';

export interface GithubEmulator {
  /** `http://127.0.0.1:<port>`: the API root (use as Octokit's baseUrl). */
  url: string;
  /** The full-access token (id `demo`). */
  token: string;
  tokens: readonly EmulatorToken[];
  /** Every request, oldest first (bounded by `logLimit`). */
  log: RequestLogEntry[];
  /** The organisation's records, for computing expected results. */
  data: OrgData;
  scale: EmulatorScale;
  rateLimit: RateLimitSpec;
  /** Replaces the injected faults. */
  setFaults(faults: FaultSpec[]): void;
  /** Changes some data at the clock's now (see MutationSummary). */
  mutate(): MutationSummary;
  close(): Promise<void>;
}

let instances = 0;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A `ghp_`-style token derived from the seed (a local emulator token, not a GitHub one). */
export function emulatorToken(seed: number, id: string): string {
  let out = 'ghp_';
  for (let i = 0; out.length < 40; i++) out += BASE62[hash32(`${seed}:token:${id}:${i}`) % 62];
  return out;
}

export function defaultTokens(seed: number): EmulatorToken[] {
  return [
    { id: 'demo', token: emulatorToken(seed, 'demo') },
    { id: 'public-only', token: emulatorToken(seed, 'public-only'), repos: [] },
  ];
}

export async function startGithubEmulator(opts: GithubEmulatorOptions = {}): Promise<GithubEmulator> {
  const seed = opts.seed ?? 1;
  const clock: Clock = opts.clock ?? systemClock;
  const scale = resolveScale(opts.scale);
  const rateLimit =
    typeof opts.rateLimit === 'string'
      ? parseRateLimit(opts.rateLimit)
      : validateRateLimit(opts.rateLimit ?? DEFAULT_RATE_LIMIT);
  const tokens = validateTokens(opts.tokens ?? defaultTokens(seed));
  if (!Number.isInteger(seed)) throw new ValidationError('seed', `expected an integer, got ${seed}`);
  const faults = new FaultInjector(seed, opts.faults ?? []);
  const data = generateOrg(seed, opts.org ?? 'emulated-org', scale, (opts.now ?? clock.now()).getTime());
  const log: RequestLogEntry[] = [];
  const render = { api: '', html: '', data };
  const server: Server = createServer(
    createHandler({
      instance: ++instances,
      clock,
      render,
      tokens: new Map(tokens.map((t) => [t.token, t])),
      viewerOf: (t) => data.members[Math.max(0, tokens.indexOf(t)) % data.members.length]!,
      limiter: new RateLimiter(rateLimit, clock),
      anonymous: new RateLimiter({ limit: 60, windowSeconds: 3600 }, clock),
      rateSpec: rateLimit,
      faults,
      log,
      logLimit: opts.logLimit ?? 100_000,
    }),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host ?? '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  render.api = url;
  render.html = `${url}/_web`;
  let rounds = 0;
  let closed: Promise<void> | null = null;
  return {
    url,
    token: tokens[0]?.token ?? '',
    tokens,
    log,
    data,
    scale,
    rateLimit,
    setFaults: (f) => faults.set(f),
    mutate: () => mutateOrg(data, scale, ++rounds, clock.now().getTime()),
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
