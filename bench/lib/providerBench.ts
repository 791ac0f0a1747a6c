/**
 * What the provider benchmarks (GitHub, Linear, Jira and the verify scenario) share: the emulator
 * as the driver sees it, what differs between the providers, and the budget each is given.
 */
import type { OutboundPolicy } from '../../src/providers/kit/outbound.js';
import type { Provider } from '../../src/sdk/types.js';

/**
 * Requests the shared budget keeps back. The default (1 %, at least 10) would hold back half of
 * these small windows; the sync is the credential's only user here, so one request is kept.
 */
export const RESERVE = 1;
/** No effective budget. */
export const UNLIMITED: Budget = { limit: 1_000_000_000, windowSeconds: 1 };

export interface Budget {
  limit: number;
  windowSeconds: number;
}

/** An emulator as the driver sees it. */
export interface BenchEmulator {
  url: string;
  token: string;
  sources: string[];
  config: Record<string, unknown>;
  issues: number;
  /** Items the source holds, the per-item figures' denominator (@default issues). */
  items?: number;
  /** What the emulator's records call for in work_items and work_item_comments. */
  expected: { work_items: number; work_item_comments: number };
  /** Answered requests (2xx). */
  ok(): number;
  /** Every request answered. */
  total(): number;
  /** Every request answered so far, by kind: its path with ids as `{id}`, or its GraphQL operation. */
  requestKinds?(): Record<string, number>;
  /** Limit responses per budget window. */
  limitsPerWindow(): number[];
  /** Deletes `n` issues spread over the data; returns their ids as the store keys them. */
  deleteIssues(n: number): string[];
  /** Replaces the budget the emulator enforces from now on. */
  setBudget(budget: Budget): void;
  /**
   * Epoch ms from which the credential's next request starts a fresh budget window (a full bucket),
   * as the emulator's own state has it now; `now` or later.
   */
  freshWindowAt(now: number): Promise<number>;
  close(): Promise<void>;
}

/** What differs between the providers benchmarked this way. */
export interface ProviderBench {
  name: string;
  scenario: string;
  /** The provider, under `outbound` (the bench's settings: plain http to the emulator allowed). */
  provider: (outbound: OutboundPolicy) => Provider;
  /** Every dataset (phase 3) and the work-item family's members that have units of their own. */
  datasets: readonly string[];
  family: readonly string[];
  /** Days of data the emulator holds. */
  days: number;
  /** Units a worker runs at once. @default 8 */
  concurrency?: number;
  /** Starts an emulator of the scenario's scale with `budget` enforced. */
  start(budget: Budget): Promise<BenchEmulator>;
  /** The budget's nominal figure, quick or full. */
  nominal: Budget;
  /** The nominal budget as it is, not lowered to half the measured capacity (GitHub's). */
  fixedBudget?: boolean;
  /**
   * The window the budget is enforced over when the emulator lengthens the nominal one (Jira ends
   * windows on a whole minute: 59 s from a minute's start lasts 60 s). @default nominal.windowSeconds
   */
  enforcedWindowSeconds?: number;
  /** Trigger the budgeted run on a whole minute (the first window then is a whole one too). */
  startOnMinute?: boolean;
}

/** The window the budget is enforced over, in seconds. */
export function enforcedWindow(bench: ProviderBench): number {
  return bench.enforcedWindowSeconds ?? bench.nominal.windowSeconds;
}

/**
 * R: the nominal limit, lowered to half of what the sync reached unthrottled (`capacityRate`,
 * requests per second) when the machine is slower, so the budget, not the CPU, bounds the run.
 */
export function bindingLimit(bench: ProviderBench, capacityRate: number): number {
  if (bench.fixedBudget) return bench.nominal.limit;
  return Math.max(1, Math.min(bench.nominal.limit, Math.floor(0.5 * capacityRate * enforcedWindow(bench))));
}

/**
 * Waits until the emulator's next request starts a fresh budget window, asking the emulator again
 * after each wait (at the instant it named, so a window due to start then is not pushed on).
 */
export async function freshWindow(emu: BenchEmulator): Promise<void> {
  let at = await emu.freshWindowAt(Date.now());
  while (at > Date.now()) {
    await new Promise((r) => setTimeout(r, at - Date.now()));
    at = await emu.freshWindowAt(at);
  }
}

/** A request path as a kind: no query, a repository as `{o}/{r}`, numeric segments as `{id}`. */
export function pathKind(path: string): string {
  return path
    .split('?')[0]!
    .replace(/^\/repos\/[^/]+\/[^/]+/, '/repos/{o}/{r}')
    .replace(/\/\d+(?=\/|$)/g, '/{id}');
}

/** How many of `kinds` there are of each. */
export function tallyKinds(kinds: Iterable<string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of kinds) out[k] = (out[k] ?? 0) + 1;
  return out;
}
