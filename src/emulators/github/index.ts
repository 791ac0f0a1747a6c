/**
 * A local GitHub REST API emulator for tests and benchmarks: a seeded organisation served in
 * GitHub's real shapes, with its pagination, authentication, primary rate limit and injectable
 * faults. Not part of the engine: only the `emulate` and `demo --provider github` commands, the benchmark
 * and tests import it.
 */
import { hashText, prepareEmulator, serveEmulator, type EmulatorControls } from '../core/index.js';
import { GITHUB_FAULTS, type FaultSpec } from './faults.js';
import { generateOrg } from './generate.js';
import type { OrgData } from './model.js';
import { mutateOrg, type MutationSummary } from './mutate.js';
import {
  resolveRateLimit,
  SCALE_RULES,
  validateTokens,
  type EmulatorScale,
  type EmulatorToken,
  type GithubEmulatorOptions,
  type RateLimitSpec,
} from './options.js';
import { RateLimiter } from './ratelimit.js';
import { createHandler, type RequestLogEntry } from './server.js';

export { countsPerDay, type DayCounts } from './stats.js';
export type { MutationSummary } from './mutate.js';
export type { RequestLogEntry } from './server.js';
export * from './faults.js';
export * from './options.js';
export type * from './model.js';

export interface GithubEmulator extends EmulatorControls<FaultSpec, MutationSummary> {
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
}

let instances = 0;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A `ghp_`-style token derived from the seed (a local emulator token, not a GitHub one). */
export function emulatorToken(seed: number, id: string): string {
  return `ghp_${hashText(`${seed}:token:${id}`, BASE62, 36)}`;
}

export function defaultTokens(seed: number): EmulatorToken[] {
  return [
    { id: 'demo', token: emulatorToken(seed, 'demo') },
    { id: 'public-only', token: emulatorToken(seed, 'public-only'), repos: [] },
  ];
}

export async function startGithubEmulator(opts: GithubEmulatorOptions = {}): Promise<GithubEmulator> {
  const rules = { scales: SCALE_RULES, faults: GITHUB_FAULTS };
  const { seed, clock, nowMs, logLimit, scale, faults } = prepareEmulator(opts, rules, opts.faults);
  const rateLimit = resolveRateLimit(opts.rateLimit);
  const tokens = validateTokens(opts.tokens ?? defaultTokens(seed));
  const data = generateOrg(seed, opts.org ?? 'emulated-org', scale, nowMs);
  const log: RequestLogEntry[] = [];
  const render = { api: '', html: '', data };
  const { origin, controls } = await serveEmulator(
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
      logLimit,
    }),
    opts,
    { faults, clock },
    (round, at) => mutateOrg(data, scale, round, at),
  );
  render.api = origin;
  render.html = `${origin}/_web`;
  return {
    url: origin,
    token: tokens[0]?.token ?? '',
    tokens,
    log,
    data,
    scale,
    rateLimit,
    ...controls,
  };
}
