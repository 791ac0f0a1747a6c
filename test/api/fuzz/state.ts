/** What the fuzz knows while it runs (ids, cursors, tokens), and generated values that read it. */
import fc from 'fast-check';
import type { FuzzTokens } from './server.js';
import { junkSegment } from './values.js';

/** A well-formed id nobody has. */
export const NONE = '00000000-0000-4000-8000-000000000000';

export interface Ids {
  integrations: string[];
  runs: string[];
  schedules: string[];
}

/** What the fuzz has learnt: ids of each org (in creation order), page cursors, tokens. */
export interface FuzzState {
  own: Ids;
  foreign: Ids;
  cursors: string[];
  tokens: FuzzTokens;
  /** The GitHub integration of org A that webhook deliveries go to. */
  github: string;
  /** Org A's Linear and Jira integrations, for their webhook routes. */
  linear: string;
  jira: string;
  /** Keys of a rate budget of each org (the budget history route). */
  budgets: { own: string; foreign: string };
  /** The webhook secret last shown for each integration. */
  webhookSecrets: Record<string, string>;
}

/** A value computed when the request is sent, from what the fuzz knows then. */
export type StateValue<T> = (s: FuzzState) => T;

/** One of the newest few of `list`, or a well-formed id nobody has. */
export function recent(list: readonly string[], n: number): string {
  if (list.length === 0) return NONE;
  return list[list.length - 1 - (n % Math.min(list.length, 6))]!;
}

/** An id of `kind` for a path or a field: mostly the caller's own, else another kind, another org's, junk. */
export function idOf(kind: keyof Ids): fc.Arbitrary<StateValue<string>> {
  const kinds = ['integrations', 'runs', 'schedules'] as const;
  return fc.oneof(
    { weight: 12, arbitrary: fc.nat().map((n) => (s: FuzzState) => recent(s.own[kind], n)) },
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom(...kinds), fc.constantFrom<'own' | 'foreign'>('own', 'foreign'), fc.nat())
        .map(
          ([k, who, n]) =>
            (s: FuzzState) =>
              recent(s[who][k], n),
        ),
    },
    { weight: 1, arbitrary: fc.nat().map((n) => (s: FuzzState) => recent(s.own[kind], n).toUpperCase()) },
    { weight: 2, arbitrary: fc.uuid().map((u) => () => u) },
    { weight: 3, arbitrary: junkSegment.map((j) => () => j) },
  );
}
