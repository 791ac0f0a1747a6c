/**
 * The verify of the integration's members (./verifyReference.ts; the steps: ../kit/verify.ts),
 * compared with every `members` row of the integration (members belong to no source).
 *
 * The listing is the members unit's read (units.ts `assignableUsers`) of each project in turn:
 * every range of the assignable-user search up to its cap. A listed user has no update time; one
 * the store lacks (or holds marked deleted) is written from the page just listed, mapped as the
 * members unit maps it.
 *
 * Unlisted is not gone: a user may merely have stopped being assignable in these projects, be
 * assignable only in a project not synced, or sit past the search's cap. A member is marked deleted
 * only when the user no longer exists on the site: the direct read answers 404 — Cloud `GET
 * /rest/api/3/user?accountId=…` ("404: Returned if the user is not found",
 * https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-users/#api-rest-api-3-user-get),
 * Data Center `GET /rest/api/2/user?key=…`, then `?username=…` (its rows hold the user key, or the
 * name of a user without one: https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/
 * #api/2/user-getUser). Any other answer is the user as it is now: a deactivated user
 * (`active: false`) still exists and stays live.
 */
import type { ListedItem } from '../../domain/verify.js';
import { NonRetryableError } from '../../errors.js';
import { mapLimited } from '../kit/concurrency.js';
import { CONFIRM_SINGLES, type VerifyReader } from '../kit/verify.js';
import { PageWriter } from '../kit/write.js';
import { jiraApi } from './api.js';
import { memberRow, userId, type JiraUser } from './mapping.js';
import { assignableUsers, pastTheCap, type Job } from './units.js';

/** The members reader, and what its listing could not see (a search cut at its cap), once listed. */
export interface MemberReader {
  reader: VerifyReader;
  incomplete: () => { surface: string; reason: string } | null;
}

/** The reader of the integration's members over the job's projects; rows written are counted into `counts`. */
export function memberReader(job: Job, counts: Record<string, number>): MemberReader {
  const known = new Map<string, JiraUser>(); // the page or batch just handed to the kit
  let cut: { surface: string; reason: string } | null = null;
  const writer = new PageWriter(job.ctx, counts);
  const keep = (users: readonly JiraUser[]): ListedItem[] => {
    known.clear();
    for (const u of users) {
      const id = userId(u);
      if (id) known.set(id, u);
    }
    return [...known.keys()].map((id) => ({ id, updatedAt: null }));
  };
  const read = (ids: readonly string[]) =>
    mapLimited(ids, job.detailConcurrency, (id) => readUser(job, id), job.ctx.signal);
  const reader: VerifyReader = {
    scope: { ...scopeOf(job), surface: 'members', source: null },
    confirmBatch: CONFIRM_SINGLES,
    async *list() {
      for (const project of job.projects) {
        let last = 0;
        for await (const users of assignableUsers(job, project)) {
          last = users.length;
          yield keep(users);
        }
        if (last > 0) cut = pastTheCap(job, project);
      }
    },
    async confirm(ids) {
      return keep((await read(ids)).filter((u): u is JiraUser => u !== null));
    },
    async fetch(ids) {
      // Every id the kit fetches is of the page or batch just handed to it; anything else is read.
      const users = ids.map((id) => known.get(id)).filter((u): u is JiraUser => u !== undefined);
      const others = await read(ids.filter((id) => !known.has(id)));
      users.push(...others.filter((u): u is JiraUser => u !== null));
      await writer.write(
        'members',
        users.map((u) => memberRow(job.scope, u, 'assignee')),
      );
    },
  };
  return { reader, incomplete: () => cut };
}

function scopeOf(job: Job) {
  const { unit } = job.ctx;
  return { orgId: unit.orgId, integrationId: unit.integrationId, provider: job.scope.provider };
}

/** The user resource (`/rest/api/{3|2}/user`): the parent of the assignable-user search. */
function userPath(job: Job): string {
  return jiraApi(job.config).assignableUsers.replace(/\/assignable\/search$/, '');
}

/**
 * The user with id `id` as the site has it now, or null when the site has no such user (404). On
 * Data Center the id is a user key, or a user name for a user without a key: both are asked.
 */
async function readUser(job: Job, id: string): Promise<JiraUser | null> {
  const asked: Record<string, string>[] =
    jiraApi(job.config).deployment === 'datacenter' ? [{ key: id }, { username: id }] : [{ accountId: id }];
  for (const query of asked) {
    const user = await userOrNull(job, query);
    if (user) return user;
  }
  return null;
}

async function userOrNull(job: Job, query: Record<string, string>): Promise<JiraUser | null> {
  try {
    return await job.jira.get<JiraUser>(userPath(job), query);
  } catch (err) {
    if (err instanceof NonRetryableError && err.category === 'not_found') return null;
    throw err;
  }
}
