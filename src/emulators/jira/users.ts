/**
 * The assignable-user search's pool. Jira "takes the users in the range defined by `startAt` and
 * `maxResults`, up to the thousandth user, and then returns only the users from that range that can
 * be assigned" (`GET /rest/api/3/user/assignable/search`): a page may come back short or empty
 * before the end, and no user past the 1,000th of the pool is ever returned.
 *
 * The pool here: the first half of the site's users with two hidden accounts after every third, a
 * run of the remaining hidden accounts (long enough for empty pages), then the other half. A user
 * deleted from the site or no longer assignable (referenceDeletions.ts) keeps a hidden place.
 */
import type { SiteData, UserRec } from './model.js';
import { isAssignable } from './referenceDeletions.js';

/** The assignable-user search looks no further than this many users of its pool. */
export const USER_SEARCH_CAP = 1000;

/** The pool in order: a user, or null for an account that cannot be assigned. */
export function userPool(users: readonly UserRec[], hidden: number): (UserRec | null)[] {
  const half = Math.ceil(users.length / 2);
  const out: (UserRec | null)[] = [];
  let left = hidden;
  users.slice(0, half).forEach((u, k) => {
    out.push(u);
    if (k % 3 === 2 && left >= 2) {
      out.push(null, null);
      left -= 2;
    }
  });
  for (; left > 0; left--) out.push(null);
  out.push(...users.slice(half));
  return out;
}

/** One page: the pool's users in `[startAt, startAt + maxResults)`, cut at the cap, hidden ones left out. */
export function assignablePage(data: SiteData, startAt: number, maxResults: number): UserRec[] {
  const end = Math.min(startAt + maxResults, USER_SEARCH_CAP);
  return sitePool(data)
    .slice(startAt, Math.max(startAt, end))
    .filter((u): u is UserRec => u !== null);
}

/** The users the search can return at all (those within the cap): what a complete read finds. */
export function reachableUsers(data: SiteData): UserRec[] {
  return sitePool(data)
    .slice(0, USER_SEARCH_CAP)
    .filter((u): u is UserRec => u !== null);
}

/** The site's pool, its users deleted or no longer assignable hidden in their places. */
function sitePool(data: SiteData): (UserRec | null)[] {
  return userPool(data.users, data.hiddenUsers).map((u) => (u && isAssignable(data, u) ? u : null));
}
