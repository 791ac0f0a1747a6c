/**
 * Linear's injectable faults: the kinds and the settings they take (a fault applies to requests
 * whose operation name contains `operation`). Their answers are in answers.ts.
 */
import { parseFaultText, type FaultRules, type FaultSpecBase } from '../core/faultSpec.js';

export const LINEAR_FAULT_KINDS = [
  'too-many-requests', // HTTP 429 with the RATELIMITED body and the budget headers
  'ratelimited', // a RATELIMITED GraphQL error (status 400, or `status` 200)
  'complexity', // a QUERY_TOO_COMPLEX GraphQL error
  'unauthenticated', // HTTP 401 AUTHENTICATION_ERROR
  'server-error', // 500, 502, 503 or 504
  'slow', // answer normally after `delayMs`
  'partial', // HTTP 200 with `data` and `errors`: one nullable field resolved to null, its error's `path` naming it
] as const;

export type LinearFaultKind = (typeof LINEAR_FAULT_KINDS)[number];

/** An injected fault: applies to matching requests with `probability`, or to the next `count` of them. */
export interface LinearFaultSpec extends FaultSpecBase {
  kind: LinearFaultKind;
  /** Only requests whose operation name contains this text. */
  operation?: string;
  /** server-error: 500, 502, 503 or 504 (default 502); ratelimited: 200 or 400 (default 400). */
  status?: number;
  /** too-many-requests / ratelimited: seconds until the reported reset (default: the window's own). */
  resetSeconds?: number;
}

export const LINEAR_FAULTS: FaultRules<LinearFaultSpec> = {
  kinds: LINEAR_FAULT_KINDS,
  match: { field: 'operation', names: ['op'] },
  extras: ['resetSeconds'],
  statuses: [200, 400, 500, 502, 503, 504],
};

/** `--faults` text: a JSON array, or comma-separated `kind[:key=value…]` (e.g. `ratelimited:count=2`). */
export function parseLinearFaults(text: string): LinearFaultSpec[] {
  return parseFaultText(LINEAR_FAULTS, text);
}
