/**
 * Deleting sprints and users, and users who stop being assignable, as a Jira site does them; each
 * site keeps what was deleted, so a ground truth can read it (`deletedSprints`, `deletedUsers`).
 *
 * - A sprint is deleted for good (`DELETE /rest/agile/1.0/sprint/{sprintId}`, 204: "Once a sprint is
 *   deleted, all open issues in the sprint will be moved to the backlog",
 *   https://developer.atlassian.com/cloud/jira/software/rest/api-group-sprint/): it leaves the site's
 *   sprints (its board's list) and the issues that were in it; a read of it answers 404.
 * - A user deleted from the site (`DELETE /rest/api/3/user?accountId=…`) leaves the assignable-user
 *   search, and `GET /rest/api/3/user` (Data Center `/rest/api/2/user`) answers 404. Issues, comments
 *   and changelogs keep naming the user as they did (no issue's `updated` moves).
 * - A user who stops being assignable (`setAssignable(…, false)`) leaves the assignable-user search
 *   only: the site still has the user, whose read answers 200.
 * A user who leaves the search keeps a hidden place in its pool (users.ts), so no other user moves.
 */
import { ValidationError } from '../../errors.js';
import type { SiteData, SprintRec, UserRec } from './model.js';

interface ReferenceState {
  /** Ids of the sprints deleted, in order. */
  sprints: number[];
  /** Account ids of the users deleted, in order. */
  users: string[];
  /** Account ids of users the assignable-user search leaves out: deleted, or no longer assignable. */
  unassignable: Set<string>;
}

/** Each site's state (keyed by its data, so two emulators never share one). */
const states = new WeakMap<SiteData, ReferenceState>();

function stateOf(data: SiteData): ReferenceState {
  let s = states.get(data);
  if (!s) states.set(data, (s = { sprints: [], users: [], unassignable: new Set() }));
  return s;
}

/** The sprint with id `id`, or undefined (deleted, or never there). */
export function findSprint(data: SiteData, id: number): SprintRec | undefined {
  return data.sprints.find((s) => s.id === id);
}

/** Deletes the sprint with id `id` and returns it; throws when there is none. */
export function deleteSprint(data: SiteData, id: number): SprintRec {
  const at = data.sprints.findIndex((s) => s.id === id);
  if (at < 0) throw new ValidationError('sprintId', `no Jira sprint ${id}`);
  const [sprint] = data.sprints.splice(at, 1);
  for (const issue of data.issuesById.values()) issue.sprintIds = issue.sprintIds.filter((s) => s !== id);
  stateOf(data).sprints.push(id);
  return sprint!;
}

/** The user with account id `accountId` the site has (not deleted), or undefined. */
export function findUser(data: SiteData, accountId: string): UserRec | undefined {
  if (stateOf(data).users.includes(accountId)) return undefined;
  return data.users.find((u) => u.accountId === accountId);
}

/** Deletes the user with account id `accountId` from the site and returns it; throws when there is none. */
export function deleteUser(data: SiteData, accountId: string): UserRec {
  const user = findUser(data, accountId);
  if (!user) throw new ValidationError('accountId', `no Jira user ${accountId}`);
  const s = stateOf(data);
  s.users.push(accountId);
  s.unassignable.add(accountId);
  return user;
}

/** Makes a user the site has assignable again, or no longer assignable (it stays on the site). */
export function setAssignable(data: SiteData, accountId: string, assignable: boolean): void {
  if (!findUser(data, accountId)) throw new ValidationError('accountId', `no Jira user ${accountId}`);
  const s = stateOf(data);
  if (assignable) s.unassignable.delete(accountId);
  else s.unassignable.add(accountId);
}

/** Whether the assignable-user search can return `user` (the site has it and it is assignable). */
export function isAssignable(data: SiteData, user: UserRec): boolean {
  return !states.get(data)?.unassignable.has(user.accountId);
}

/** The ids of the sprints deleted from the site so far, in order. */
export function deletedSprints(data: SiteData): readonly number[] {
  return [...(states.get(data)?.sprints ?? [])];
}

/** The account ids of the users deleted from the site so far, in order. */
export function deletedUsers(data: SiteData): readonly string[] {
  return [...(states.get(data)?.users ?? [])];
}
