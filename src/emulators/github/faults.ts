/**
 * GitHub's injectable faults: the kinds and the settings they take (a fault applies to requests
 * whose path contains `path`). Their answers are in responses.ts.
 */
import { parseFaultText, type FaultRules, type FaultSpecBase } from '../core/faultSpec.js';

export const FAULT_KINDS = [
  'primary-limit',
  'secondary-limit',
  'too-many-requests',
  'bad-credentials',
  'forbidden',
  'not-found',
  'server-error',
  'slow',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** An injected fault: applies to matching requests with `probability`, or to the next `count` of them. */
export interface FaultSpec extends FaultSpecBase {
  kind: FaultKind;
  /** Only requests whose path contains this text. */
  path?: string;
  /** secondary-limit / too-many-requests: the `retry-after` seconds (no header when absent). */
  retryAfter?: number;
  /** server-error: 500, 502, 503 or 504 (default 502). */
  status?: number;
  /** primary-limit: seconds until the drained window resets (default: the window's own reset). */
  resetSeconds?: number;
}

export const GITHUB_FAULTS: FaultRules<FaultSpec> = {
  kinds: FAULT_KINDS,
  match: { field: 'path', names: [] },
  extras: ['retryAfter', 'resetSeconds'],
  statuses: [500, 502, 503, 504],
};

/**
 * `--faults` text: a JSON array of FaultSpec, or comma-separated `kind[:key=value…]`, e.g.
 * `secondary-limit:count=2:retryAfter=3,server-error:p=0.05:status=503,slow:delay=200:path=/pulls`.
 */
export function parseFaults(text: string): FaultSpec[] {
  return parseFaultText(GITHUB_FAULTS, text);
}
