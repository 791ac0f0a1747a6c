/** What an invariant check reports, and what every check is given (no check imports another's module). */
import type { PostSyncDelivery } from '../config.js';

export interface InvariantResult {
  id: string;
  title: string;
  ok: boolean;
  /** What was looked at, for the report. */
  checked: string;
  violations: number;
  /** Up to MAX_EXAMPLES counter-examples, each naming the ids involved. */
  examples: string[];
}

const MAX_EXAMPLES = 20;

export function finding(
  id: string,
  title: string,
  r: { checked: string; examples: string[]; violations?: number },
): InvariantResult {
  const violations = r.violations ?? r.examples.length;
  return {
    id,
    title,
    ok: violations === 0,
    checked: r.checked,
    violations,
    examples: r.examples.slice(0, MAX_EXAMPLES),
  };
}

export interface CheckContext {
  orgId: string;
  /** Every run the trigger committed (id → when it was triggered, ms epoch). */
  runs: Map<string, number>;
  faultsStoppedAt: number;
  boundMs: number;
  postSync: PostSyncDelivery;
  /** Runs held to being terminal but not to the bound: the final incremental of a `--provider` run. */
  unbounded?: ReadonlySet<string>;
}
