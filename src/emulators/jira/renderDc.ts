/**
 * Records rendered in Jira Data Center's REST v2 shapes
 * (https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/), from the same records as Cloud's
 * (render.ts), so one seed serves both flavors:
 *
 * - users have `key` (stable, `JIRAUSER10100`) and `name` (the login), `displayName`, `emailAddress`,
 *   `active` and `deleted`, and no `accountId`; their `self` is `/rest/api/2/user?username=<name>`;
 * - changelog assignee items hold user keys in `from` / `to` (Cloud: account ids);
 * - rich text is a wiki-markup string (Cloud: ADF): comment bodies here mark their first word strong;
 * - the sprint field lists each sprint in its text form
 *   (`com.atlassian.greenhopper.service.sprint.Sprint@…[id=…,rapidViewId=…,state=ACTIVE,name=…,…]`);
 * - an issue read or searched with `expand=changelog` carries its whole changelog (Cloud caps it);
 * - every `self` link is under `/rest/api/2/`.
 */
import { jiraTimestamp } from './time.js';
import type { CommentRec, HistoryRec, IssueRec, ProjectRec, SprintRec, StatusRec, UserRec } from './model.js';
import * as cloud from './render.js';
import type { Site } from './render.js';

/** Cloud's rendering with its `self` links moved under `/rest/api/2/`. */
export function v2Links<T>(value: T): T {
  if (typeof value === 'string') return value.replace('/rest/api/3/', '/rest/api/2/') as T;
  if (Array.isArray(value)) return value.map(v2Links) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, v2Links(v)])) as T;
  }
  return value;
}

export function user(site: Site, u: UserRec): Record<string, unknown> {
  const avatar = `${site.url}/secure/useravatar?ownerId=${encodeURIComponent(u.name)}`;
  return {
    self: `${site.url}/rest/api/2/user?username=${encodeURIComponent(u.name)}`,
    key: u.key,
    name: u.name,
    emailAddress: u.email,
    avatarUrls: { '48x48': avatar, '24x24': `${avatar}&size=small`, '16x16': `${avatar}&size=xsmall` },
    displayName: u.displayName,
    active: true,
    deleted: false,
    timeZone: u.timeZone,
    locale: 'en_US',
  };
}

/** The record of Cloud account id `accountId` (records are kept by it). */
export function userRec(site: Site, accountId: string | null): UserRec | null {
  return accountId === null ? null : (site.data.users.find((u) => u.accountId === accountId) ?? null);
}

function userOf(site: Site, accountId: string | null): Record<string, unknown> | null {
  const u = userRec(site, accountId);
  return u ? user(site, u) : null;
}

export const status = (site: Site, s: StatusRec) => v2Links(cloud.status(site, s));

export function project(site: Site, p: ProjectRec): Record<string, unknown> {
  return { ...v2Links(cloud.project(site, p)), lead: userOf(site, p.lead) };
}

/** A comment body in wiki markup: its first word strong. */
export function wikiBody(text: string): string {
  return text.replace(/^(\S+)/, '*$1*');
}

export function comment(site: Site, issue: IssueRec, c: CommentRec): Record<string, unknown> {
  return {
    self: `${site.url}/rest/api/2/issue/${issue.id}/comment/${c.id}`,
    id: c.id,
    author: userOf(site, c.author),
    body: wikiBody(c.text),
    updateAuthor: userOf(site, c.author),
    created: jiraTimestamp(c.created),
    updated: jiraTimestamp(c.updated),
  };
}

export function history(site: Site, h: HistoryRec): Record<string, unknown> {
  const key = (id: string | null) => (id === null ? null : (userRec(site, id)?.key ?? id));
  return {
    id: h.id,
    author: userOf(site, h.author),
    created: jiraTimestamp(h.created),
    items: h.items.map((i) => ({
      field: i.field,
      fieldtype: 'jira',
      ...(i.field === 'assignee' ? { from: key(i.from), to: key(i.to) } : { from: i.from, to: i.to }),
      fromString: i.fromString,
      toString: i.toString,
    })),
  };
}

/** A sprint in the sprint field's text form. */
export function sprintText(s: SprintRec): string {
  const date = (ms: number | null) => (ms === null ? '<null>' : new Date(ms).toISOString());
  const hash = (s.id * 2654435761) % 4294967296;
  return (
    `com.atlassian.greenhopper.service.sprint.Sprint@${hash.toString(16)}[id=${s.id},rapidViewId=${s.boardId},` +
    `state=${s.state.toUpperCase()},name=${s.name},startDate=${date(s.startDate)},endDate=${date(s.endDate)},` +
    `completeDate=${date(s.completeDate)},activatedDate=${date(s.startDate)},sequence=${s.id},` +
    `goal=${s.goal === '' ? '<null>' : s.goal},autoStartStop=false,synced=false]`
  );
}

/** The issue: Cloud's fields with Data Center's users, comments and sprints; the whole changelog when asked. */
export function issue(
  site: Site,
  i: IssueRec,
  wanted: (f: string) => boolean,
  changelog: boolean,
  sprintField: string,
): Record<string, unknown> {
  const base = v2Links(cloud.issue(site, i, wanted, false, sprintField));
  const fields = base.fields as Record<string, unknown>;
  if (wanted('assignee')) fields.assignee = userOf(site, i.assignee);
  if (wanted('reporter')) fields.reporter = userOf(site, i.reporter);
  if (wanted(sprintField) && i.sprintIds.length > 0) {
    fields[sprintField] = i.sprintIds.map((id) => sprintText(site.data.sprints.find((s) => s.id === id)!));
  }
  if (wanted('comment')) {
    fields.comment = {
      comments: i.comments.slice(0, cloud.EMBEDDED).map((c) => comment(site, i, c)),
      maxResults: cloud.EMBEDDED,
      total: i.comments.length,
      startAt: 0,
    };
  }
  if (!changelog) return base;
  const n = i.histories.length;
  const histories = i.histories.map((h) => history(site, h));
  return { ...base, changelog: { startAt: 0, maxResults: n, total: n, histories } };
}
