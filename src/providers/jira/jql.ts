/**
 * The one place JQL is built: every value goes in as a quoted JQL string (`"…"`, with `"` and `\`
 * escaped and control characters written as escapes), so no value can end its string early.
 *
 * Windows: JQL compares `updated` to wall-clock dates in the caller's time zone, to the minute.
 * The query asks for `[floor(since), ceil(before))` in whole minutes (an hour wider around a clock
 * change), and `inWindow` keeps exactly `[since, before)` on each issue's `fields.updated`: nothing
 * in the window is missed, and nothing outside it is written twice.
 */
import { jqlMinute, zoneOffset } from './timeZone.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;

/** `value` as a JQL string literal. */
export function jqlString(value: string): string {
  let out = '"';
  for (const ch of value) {
    if (ch === '"' || ch === '\\' || ch === "'") out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch.charCodeAt(0) < 0x20 || ch === '\u2028' || ch === '\u2029') {
      out += `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
    } else out += ch;
  }
  return `${out}"`;
}

export interface IssueQuery {
  project: string;
  /** Issues updated at or after this instant (null: from the start). */
  since: Date | null;
  /** Issues updated before this instant (null: up to now). */
  before: Date | null;
  /** The caller's Jira time zone (IANA), in which JQL reads dates. */
  timeZone: string;
  /** Ties of `updated` ordered by key too (`ORDER BY updated ASC, key ASC`: pages read by `startAt`). */
  byKey?: boolean;
}

/**
 * `project = "X" AND updated >= "yyyy-MM-dd HH:mm" AND updated < "…" ORDER BY updated ASC`:
 * the minute-rounded bounds cover `[since, before)` (see the module comment).
 */
export function issuesJql(q: IssueQuery): string {
  const clauses = [`project = ${jqlString(q.project)}`];
  if (q.since) {
    const from = Math.floor(q.since.getTime() / MINUTE) * MINUTE - clockChangeMargin(q.since.getTime(), q.timeZone);
    clauses.push(`updated >= ${jqlString(jqlMinute(from, q.timeZone))}`);
  }
  if (q.before) {
    const to = Math.ceil(q.before.getTime() / MINUTE) * MINUTE + clockChangeMargin(q.before.getTime(), q.timeZone);
    clauses.push(`updated < ${jqlString(jqlMinute(to, q.timeZone))}`);
  }
  return `${clauses.join(' AND ')} ORDER BY updated ASC${q.byKey ? ', key ASC' : ''}`;
}

/** An hour when the zone's offset changes within two hours of `ms` (a repeated or skipped hour). */
function clockChangeMargin(ms: number, timeZone: string): number {
  const at = zoneOffset(ms, timeZone);
  return zoneOffset(ms - 2 * HOUR, timeZone) !== at || zoneOffset(ms + 2 * HOUR, timeZone) !== at ? HOUR : 0;
}

/** Whether an issue updated at `updatedMs` belongs to `[since, before)`. */
export function inWindow(updatedMs: number, since: Date | null, before: Date | null): boolean {
  if (!Number.isFinite(updatedMs)) return false;
  if (since && updatedMs < since.getTime()) return false;
  return !(before && updatedMs >= before.getTime());
}

/**
 * `project = "X" AND id in (1, 2, …)`: the project's issues among `ids`, numeric issue ids written
 * bare (Jira checks no bare id exists, so a deleted one matches nothing instead of failing the query).
 * An id that is not a number is a caller's error.
 */
export function idsJql(project: string, ids: readonly string[]): string {
  const bad = ids.find((id) => !/^[0-9]{1,18}$/.test(id));
  if (bad !== undefined) throw new Error(`not a Jira issue id: ${JSON.stringify(bad.slice(0, 40))}`);
  return `project = ${jqlString(project)} AND id in (${ids.join(', ')})`;
}
