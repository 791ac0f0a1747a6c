/**
 * Jira's injectable faults: the kinds and the settings they take (a fault applies to requests
 * whose path contains `path`). Their answers are in answers.ts.
 */
import { parseFaultText, type FaultRules, type FaultSpecBase } from '../core/faultSpec.js';

export const FAULT_KINDS = ['rate-limit', 'unauthorized', 'forbidden', 'server-error', 'slow'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * An injected fault, for requests whose path contains `path` (all when absent): the next `count`,
 * each with `probability`, or every one. `rate-limit`: 429 with `Retry-After: retryAfter` (default
 * 30) and `X-RateLimit-Reset`; `unauthorized`: 401; `forbidden`: 403 without rate-limit headers;
 * `server-error`: `status` (500, 502, 503 or 504; default 503); `slow`: answers `delayMs` later.
 */
export interface FaultSpec extends FaultSpecBase {
  kind: FaultKind;
  path?: string;
  retryAfter?: number;
}

export const JIRA_FAULTS: FaultRules<FaultSpec> = {
  kinds: FAULT_KINDS,
  match: { field: 'path', names: [] },
  extras: ['retryAfter'],
  statuses: [500, 502, 503, 504],
};

/** A JSON array of FaultSpec, or `kind[:key=value…]` entries separated by commas. */
export function parseFaults(text: string): FaultSpec[] {
  return parseFaultText(JIRA_FAULTS, text);
}
