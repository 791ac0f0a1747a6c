/**
 * Statuses as SQL text, rendered once at load from src/domain/statuses.ts — the only place a status
 * is spelled. Statements interpolate these constants (or their own, built from the same tables at
 * module level); none writes a status literal of its own. Values stay bound parameters: a status
 * is a constant of the statement, like its table names, so a partial index on it is still used.
 */
import {
  JOB_RUN_STATUSES,
  OPEN_RUN_STATUSES,
  OPEN_UNIT_STATUSES,
  OUTBOX_STATUSES,
  OUTBOX_TRANSITIONS,
  RUN_STATUSES,
  TERMINAL_RUN_STATUSES,
  TERMINAL_UNIT_STATUSES,
  UNIT_STATUSES,
  UNIT_TRANSITIONS,
  type JobRunStatus,
  type OutboxStatus,
  type RunStatus,
  type Transition,
  type UnitStatus,
} from '../domain/statuses.js';

/** Any status of a run, unit, JobRun or outbox row. */
export type AnyStatus = RunStatus | UnitStatus | JobRunStatus | OutboxStatus;

const KNOWN: ReadonlySet<string> = new Set<string>([
  ...RUN_STATUSES,
  ...UNIT_STATUSES,
  ...JOB_RUN_STATUSES,
  ...OUTBOX_STATUSES,
]);

/** One status as a SQL string literal: `'running'`. Anything but a domain status is refused. */
export function sqlLit(status: AnyStatus): string {
  if (!KNOWN.has(status)) throw new Error(`not a syncrelay status: ${JSON.stringify(status)}`);
  return `'${status.replace(/'/g, "''")}'`;
}

/** A status set as a SQL list for IN: `('planned', 'dispatching')`. An empty set is refused. */
export function sqlList(statuses: readonly AnyStatus[]): string {
  if (statuses.length === 0) throw new Error('an empty status list is not SQL');
  return `(${statuses.map(sqlLit).join(', ')})`;
}

/**
 * A status guard for a statement that finds its rows by primary key: `= ANY (<the set>)` with the
 * set read through a scalar subquery, so the planner cannot prove a partial index's predicate from
 * it and reaches the rows through the key. Written as a plain IN list, the guard implies
 * the predicate of the in-flight and lease indexes; their statistics still describe the run before
 * its units moved (and their dead entries are not counted), so they look cheaper than the key and
 * the planner scans one of them whole for every statement (~8 ms per end batch per 60,000 units
 * that had passed through it, 400 ms per batch late in a 100,000-unit run).
 */
export function sqlKeyedIn(statuses: readonly AnyStatus[]): string {
  if (statuses.length === 0) throw new Error('an empty status list is not SQL');
  return `= ANY (CAST((SELECT ARRAY[${statuses.map(sqlLit).join(', ')}]) AS text[]))`;
}

/**
 * The members of `set` by name, each as a literal, for a statement that guards them differently
 * (`DISPATCH.retrying` and `available_at <= now`). `names` must be exactly the set, so a status
 * added to a transition fails here, at load, until its statements handle it.
 */
export function sqlEach<const S extends readonly AnyStatus[], N extends S[number]>(
  set: S,
  ...names: readonly N[]
): Readonly<Record<N, string>> {
  const missing = set.filter((s) => !(names as readonly AnyStatus[]).includes(s));
  if (missing.length > 0 || names.length !== new Set(set).size) {
    throw new Error(`statuses ${JSON.stringify(names)} do not cover ${JSON.stringify(set)} exactly`);
  }
  return Object.fromEntries(names.map((n) => [n, sqlLit(n)])) as Record<N, string>;
}

/**
 * The statuses every one of `transitions` moves from, as a SQL list: the guard of a statement that
 * performs whichever of them its values choose (a unit's end: succeed or fail).
 */
export function sqlFrom<S extends AnyStatus>(...transitions: readonly Transition<S>[]): string {
  return sqlList(commonFrom(...transitions));
}

/** The statuses every one of `transitions` moves from. */
export function commonFrom<S extends AnyStatus>(...transitions: readonly Transition<S>[]): S[] {
  const [first, ...rest] = transitions;
  return (first?.from ?? []).filter((s) => rest.every((t) => t.from.includes(s)));
}

/** Terminal runs: a unit CAS requires its run NOT IN these. */
export const RUN_TERMINAL = sqlList(TERMINAL_RUN_STATUSES);
/** Live runs: planned, dispatching (the live-runs partial index). */
export const RUN_OPEN = sqlList(OPEN_RUN_STATUSES);
/** Terminal units: success, failed, cancelled. */
export const UNIT_TERMINAL = sqlList(TERMINAL_UNIT_STATUSES);
/** Non-terminal units (the bucket indexes' predicate). */
export const UNIT_OPEN = sqlList(OPEN_UNIT_STATUSES);

/** Open units by name: the end probes read planned and in-flight ones through different indexes. */
const OPEN = sqlEach(OPEN_UNIT_STATUSES, 'planned', 'dispatching', 'running', 'retrying');
/** Open units past dispatch: dispatching, running, retrying (the in-flight partial index's predicate). */
export const UNIT_IN_FLIGHT = `(${OPEN.dispatching}, ${OPEN.running}, ${OPEN.retrying})`;

/** The units dispatch takes, each under its guard: planned at once, retrying once due. */
export const DISPATCH = sqlEach(UNIT_TRANSITIONS.dispatch.from, 'planned', 'retrying');
/** The dispatching units dispatch takes again: once stale (updated_at) or unpublished (dispatched_at NULL). */
export const STALE = sqlEach(UNIT_TRANSITIONS.redispatch_stale.from, 'dispatching');
/** A published unit: dispatched, awaiting its claim (in flight while fresh). */
export const UNIT_PUBLISHED = sqlLit(UNIT_TRANSITIONS.dispatch.to);
/** A leased unit: the status a claim gives, which every lease write requires. */
export const UNIT_LEASED = sqlLit(UNIT_TRANSITIONS.claim.to);
/** UNIT_PUBLISHED and UNIT_LEASED as guards of statements that find units by key (sqlKeyedIn). */
export const KEYED = {
  published: sqlKeyedIn([UNIT_TRANSITIONS.dispatch.to]),
  leased: sqlKeyedIn([UNIT_TRANSITIONS.claim.to]),
};

/** An armed outbox row: due at available_at, claimed by the relay while pending. */
export const OUTBOX_PENDING = sqlLit(OUTBOX_TRANSITIONS.arm.to);
/** An outbox row the relay marked (the dispatched partial index). */
export const OUTBOX_DISPATCHED = sqlLit(OUTBOX_TRANSITIONS.mark_dispatched.to);
