/**
 * The line protocol between `syncrelay chaos` and its child processes (`syncrelay chaos-role`).
 * Internal: a test / chaos hook, not an interface for anything else.
 *
 * child → parent, one line each on stdout:
 *   ready <pid>                          the worker / reconciler loop is started
 *   unit-start <unitId> <leaseOwner>     the provider starts a unit under a lease
 *   unit-end <unitId> <leaseOwner>       the provider returned or threw
 *   paused-at <faultPoint>               an armed fault point was reached; the process now blocks
 *   publish-failed <messages>            an injected publish failure (that many messages)
 *   duplicated <task>                    an injected second delivery of one message of that task went out
 *
 * parent → child, one line each on stdin (stdin ending makes the child exit at once):
 *   pause-at <faultPoint>                block the next time the code reaches that point
 *   disarm <faultPoint>
 *   publish-fail-rate <p>                fail that fraction of broker publishes from now on
 *   duplicate-rate <p>                   publish that fraction of messages again (see ./flakyBroker.ts)
 */
import type { FaultPoint } from '../faults.js';

/** The reconciler's points between claiming outbox rows and marking them. */
export const RELAY_PAUSE_POINTS: readonly FaultPoint[] = [
  'relay.afterClaim.beforePublish',
  'relay.afterPublish.beforeMark',
];

export type ChildEvent =
  | { kind: 'ready'; pid: number }
  | { kind: 'unit-start'; unitId: string; owner: string }
  | { kind: 'unit-end'; unitId: string; owner: string }
  | { kind: 'paused-at'; point: string }
  | { kind: 'publish-failed'; messages: number }
  | { kind: 'duplicated'; task: string };

/** Parses one stdout line of a child; null for anything else (e.g. a stray log line). */
export function parseChildLine(line: string): ChildEvent | null {
  const [first, a, b] = line.trim().split(/\s+/);
  const word = first ?? '';
  switch (word) {
    case 'ready':
      return Number.isInteger(Number(a)) ? { kind: 'ready', pid: Number(a) } : null;
    case 'unit-start':
    case 'unit-end':
      return a && b ? { kind: word, unitId: a, owner: b } : null;
    case 'paused-at':
      return a ? { kind: 'paused-at', point: a } : null;
    case 'publish-failed':
      return { kind: 'publish-failed', messages: Number(a) || 0 };
    case 'duplicated':
      return a ? { kind: 'duplicated', task: a } : null;
    default:
      return null;
  }
}

export type ChildCommand =
  | { kind: 'pause-at'; point: FaultPoint }
  | { kind: 'disarm'; point: FaultPoint }
  | { kind: 'publish-fail-rate'; rate: number }
  | { kind: 'duplicate-rate'; rate: number };

export function formatCommand(c: ChildCommand): string {
  switch (c.kind) {
    case 'pause-at':
    case 'disarm':
      return `${c.kind} ${c.point}`;
    case 'publish-fail-rate':
    case 'duplicate-rate':
      return `${c.kind} ${c.rate}`;
  }
}

export function parseCommand(line: string): ChildCommand | null {
  const [word, a] = line.trim().split(/\s+/);
  if ((word === 'pause-at' || word === 'disarm') && a) return { kind: word, point: a as FaultPoint };
  if (word === 'publish-fail-rate' || word === 'duplicate-rate') {
    const rate = Number(a);
    return Number.isFinite(rate) && rate >= 0 && rate <= 1 ? { kind: word, rate } : null;
  }
  return null;
}
