/** What a chaos run counts while it runs, and its report reads: the faults and the trouble they made. */
import type { FaultRecord } from './injectors.js';
import type { FaultKind } from './options.js';

export interface ChaosTally {
  /** The faults injected, in order. */
  readonly records: FaultRecord[];
  /** Faults planned but not injected (no target, or the injection failed), by kind. */
  readonly missed: Partial<Record<FaultKind, number>>;
  /** Planned runs whose trigger failed (after waiting out an injected outage). */
  readonly triggerFailures: number;
  /** Planned cancellations that cancelled their run. */
  readonly userCancels: number;
  /** Publishes the flaky broker failed on purpose. */
  readonly publishesFailed: number;
  /** Second deliveries the duplicate-delivery fault published, by task. */
  readonly duplicated: Readonly<Record<string, number>>;
  /** How long the fault phase went on past its planned duration, while a backlog was left (ms). */
  readonly extendedMs: number;
}
