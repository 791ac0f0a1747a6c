/**
 * People leaving, as model operations of the organisation (tests and the churn call them through
 * `editHelpers`, edits.ts):
 * - a user removed as a collaborator of one repository: gone from its assignees (nothing else
 *   changes; the account is still there);
 * - a user's GitHub account deleted: gone from every repository's assignees, from the
 *   organisation's members and from the users new activity is drawn from; reading the account,
 *   by id (`GET /user/{account_id}`) or by login (`GET /users/{username}`), answers 404
 *   (routesUsers.ts). The deleted records are kept in `OrgData.deletedUsers`: a ground truth.
 *
 * What the account authored or was assigned stays as the records hold it (GitHub shows it as the
 * "ghost" user's afterwards; not modelled). The organisation's owner is never deleted: GitHub
 * refuses to delete the account of an organisation's only owner, and so every repository keeps an
 * assignee.
 */
import type { OrgData, RepoRecord, UserRecord } from './model.js';

/** The live account `id` (a user, or the organisation), or undefined: none, or deleted. */
export function accountById(data: OrgData, id: number): UserRecord | undefined {
  return id === data.org.id ? data.org : data.users.find((u) => u.id === id);
}

/** The live account whose login is `login` (compared case-insensitively, as GitHub does), or undefined. */
export function accountByLogin(data: OrgData, login: string): UserRecord | undefined {
  const wanted = login.toLowerCase();
  return [data.org, ...data.users].find((u) => u.login.toLowerCase() === wanted);
}

/** The live user `id`; throws for an unknown or deleted one. */
export function liveUser(data: OrgData, id: number): UserRecord {
  const user = data.users.find((u) => u.id === id);
  if (!user) throw new Error(`no user ${id}`);
  return user;
}

/** The users whose account may be deleted: every live one but the organisation's owner. */
export function deletableUsers(data: OrgData): UserRecord[] {
  return data.users.filter((u) => u.association !== 'OWNER');
}

/** Deletes `user`'s account at `at` (module comment); throws for the owner or a deleted one. */
export function deleteAccount(data: OrgData, user: UserRecord, at: number): UserRecord {
  if (user.association === 'OWNER') throw new Error(`${user.login} owns the organisation: it cannot be deleted`);
  if (!data.users.includes(user)) throw new Error(`no user ${user.id}`);
  user.deletedAt = Math.floor(at / 1000) * 1000;
  without(data.users, user);
  without(data.members, user);
  for (const repo of data.repos) if (without(repo.collaborators, user)) repo.version++;
  data.deletedUsers.push(user);
  return user;
}

/** Removes `user` as a collaborator of `repo` (gone from its assignees); throws when not one, or the last. */
export function unassign(repo: RepoRecord, user: UserRecord): UserRecord {
  if (!repo.collaborators.includes(user)) throw new Error(`${user.login} is no assignee of ${repo.name}`);
  if (repo.collaborators.length === 1) throw new Error(`${user.login} is the last assignee of ${repo.name}`);
  without(repo.collaborators, user);
  repo.version++;
  return user;
}

/** Removes `item` from `list` in place; whether it was there. */
function without<T>(list: T[], item: T): boolean {
  const i = list.indexOf(item);
  if (i >= 0) list.splice(i, 1);
  return i >= 0;
}
