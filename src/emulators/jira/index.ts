/**
 * A local Jira Cloud emulator (REST v3 and the Jira Software Agile API) for tests, demos and
 * benchmarks: a seeded site served in Jira's real shapes, `nextPageToken` search pagination, an
 * enforced budget with Jira's rate-limit headers, injectable faults and data that changes between
 * runs. Not part of the engine: only `emulate jira`, `demo --provider jira`, benchmarks and tests
 * import it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../../clock.js';
import { ValidationError } from '../../errors.js';
import { hash32 } from '../core/random.js';
import { DEFAULT_SPRINT_FIELD } from '../../providers/jira/config.js';
import { generateSite } from './generate.js';
import { FaultInjector, RateLimiter } from './limits.js';
import type { SiteData } from './model.js';
import { mutateSite, type MutationSummary } from './mutate.js';
import {
  DEFAULT_RATE_LIMIT,
  parseFaults,
  parseRateLimit,
  resolveScale,
  validateRateLimit,
  validateTimeZone,
  type FaultSpec,
  type JiraEmulatorOptions,
  type JiraScale,
  type RateLimitSpec,
} from './options.js';
import { createHandler, type RequestLogEntry } from './server.js';

export {
  parseJiraEmulatorArgs,
  parseFaults,
  parseRateLimit,
  parseScale,
  SCALES,
  FAULT_KINDS,
  type FaultKind,
  type FaultSpec,
  type JiraEmulatorOptions,
  type JiraScale,
  type RateLimitSpec,
} from './options.js';
export type { MutationSummary } from './mutate.js';
export type { RequestLogEntry } from './server.js';
export type * from './model.js';
export { EMBEDDED } from './render.js';

export interface JiraEmulatorStats {
  requests: number;
  byStatus: Record<string, number>;
  /** Requests per route (path without ids and query). */
  byRoute: Record<string, number>;
}

export interface JiraEmulator {
  /** `http://127.0.0.1:<port>`: the site URL (use as `config.siteUrl`). */
  url: string;
  /** The credential in Jira Cloud's `email:api_token` form (basic auth). */
  token: string;
  email: string;
  /** The API token alone (also accepted as a bearer token). */
  apiToken: string;
  /** Every request, oldest first (bounded by `logLimit`). */
  requestLog: RequestLogEntry[];
  data: SiteData;
  scale: JiraScale;
  rateLimit: RateLimitSpec;
  timeZone: string;
  stats(): JiraEmulatorStats;
  setFaults(faults: FaultSpec[]): void;
  /** Changes some data at the clock's now (see MutationSummary). */
  mutate(): MutationSummary;
  close(): Promise<void>;
}

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-';

/** An Atlassian-style API token derived from the seed (a local emulator token, not a real one). */
export function emulatorApiToken(seed: number): string {
  let out = 'ATATT3x';
  for (let i = 0; out.length < 48; i++) out += ALPHABET[hash32(`${seed}:jira-token:${i}`) % ALPHABET.length];
  return out;
}

function routeName(path: string): string {
  return path
    .split('?')[0]!
    .replace(/\/issue\/[^/]+\//, '/issue/{id}/')
    .replace(/\/board\/\d+\//, '/board/{id}/')
    .replace(/\/project\/(?!search)[^/]+$/, '/project/{key}');
}

export async function startJiraEmulator(opts: JiraEmulatorOptions = {}): Promise<JiraEmulator> {
  const seed = opts.seed ?? 1;
  if (!Number.isInteger(seed)) throw new ValidationError('seed', `expected an integer, got ${seed}`);
  const clock: Clock = opts.clock ?? systemClock;
  const scale = resolveScale(opts.scale);
  const rateLimit =
    typeof opts.rateLimit === 'string'
      ? parseRateLimit(opts.rateLimit)
      : validateRateLimit(opts.rateLimit ?? DEFAULT_RATE_LIMIT);
  const timeZone = validateTimeZone(opts.timeZone);
  const faults = new FaultInjector(seed, typeof opts.faults === 'string' ? parseFaults(opts.faults) : opts.faults);
  const data = generateSite(seed, opts.site ?? 'emulated', scale, (opts.now ?? clock.now()).getTime());
  const viewer = {
    accountId: '712020:emulator-admin',
    displayName: 'Site Admin',
    email: `admin@${data.site}.example`,
    timeZone,
  };
  data.users.unshift(viewer);
  const apiToken = emulatorApiToken(seed);
  const requestLog: RequestLogEntry[] = [];
  const site = { url: '', data };
  const server: Server = createServer(
    createHandler({
      clock,
      site,
      email: viewer.email,
      apiToken,
      viewer,
      limiter: new RateLimiter(rateLimit, clock),
      faults,
      sprintField: DEFAULT_SPRINT_FIELD,
      log: requestLog,
      logLimit: opts.logLimit ?? 100_000,
    }),
  );
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  site.url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let rounds = 0;
  let closed: Promise<void> | null = null;
  return {
    url: site.url,
    token: `${viewer.email}:${apiToken}`,
    email: viewer.email,
    apiToken,
    requestLog,
    data,
    scale,
    rateLimit,
    timeZone,
    stats: () => {
      const byStatus: Record<string, number> = {};
      const byRoute: Record<string, number> = {};
      for (const e of requestLog) {
        byStatus[e.status] = (byStatus[e.status] ?? 0) + 1;
        const r = `${e.method} ${routeName(e.path)}`;
        byRoute[r] = (byRoute[r] ?? 0) + 1;
      }
      return { requests: requestLog.length, byStatus, byRoute };
    },
    setFaults: (f) => faults.set(f),
    mutate: () => mutateSite(data, scale, ++rounds, clock.now().getTime()),
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

/** The datasets a demo integration enables (the work-item family is fetched in one unit per project). */
export const JIRA_DEMO_DATASETS = [
  'projects',
  'members',
  'sprints',
  'work-items',
  'work-item-comments',
  'work-item-history',
] as const;

/** The normalized tables a Jira sync writes, in the order a summary lists them. */
export const JIRA_TABLES = [
  'projects',
  'members',
  'sprints',
  'work_items',
  'work_item_comments',
  'work_item_events',
] as const;

/** What an integration pointed at this emulator needs (`engine.createIntegration` fields). */
export function jiraDemoIntegration(emu: JiraEmulator): {
  provider: 'jira';
  sources: string[];
  datasets: string[];
  config: { siteUrl: string };
  credential: string;
} {
  return {
    provider: 'jira',
    sources: emu.data.projects.map((p) => p.key),
    datasets: [...JIRA_DEMO_DATASETS],
    config: { siteUrl: emu.url },
    credential: emu.token,
  };
}

/** One line for a CLI: the URL and what the site holds (never the credential). */
export function describeJiraEmulator(emu: JiraEmulator): string {
  const issues = emu.data.projects.reduce((n, p) => n + p.issues.length, 0);
  return (
    `Jira emulator: ${emu.url}  ·  projects: ${emu.data.projects.map((p) => p.key).join(', ')}  ·  ` +
    `issues: ${issues}  ·  users: ${emu.data.users.length}  ·  sprints: ${emu.data.sprints.length}  ·  ` +
    `budget: ${emu.rateLimit.limit}/${emu.rateLimit.windowSeconds}s  ·  time zone: ${emu.timeZone}`
  );
}
