/**
 * Records rendered in Jira Cloud's JSON shapes (REST v3 `User`, `StatusDetails`, `IssueBean`,
 * `Comment`, `Changelog`, `Project`; Agile `Board`, `Sprint`), with `self` links under the
 * emulator's URL. Timestamps as Jira writes them: `2026-03-02T12:00:00.000+0000`.
 */
import { jiraTimestamp } from './time.js';
import {
  ISSUE_TYPES,
  RESOLUTIONS,
  type BoardRec,
  type CommentRec,
  type HistoryRec,
  type IssueRec,
  type ProjectRec,
  type SiteData,
  type SprintRec,
  type StatusRec,
  type UserRec,
} from './model.js';

export interface Site {
  url: string;
  data: SiteData;
}

const CATEGORIES = {
  new: { id: 2, key: 'new', colorName: 'blue-gray', name: 'To Do' },
  indeterminate: { id: 4, key: 'indeterminate', colorName: 'yellow', name: 'In Progress' },
  done: { id: 3, key: 'done', colorName: 'green', name: 'Done' },
} as const;

const t = (ms: number | null) => (ms === null ? null : jiraTimestamp(ms));

function avatars(site: Site, kind: string, id: string): Record<string, string> {
  const base = `${site.url}/secure/${kind}avatar?id=${encodeURIComponent(id)}`;
  return {
    '48x48': base,
    '24x24': `${base}&size=small`,
    '16x16': `${base}&size=xsmall`,
    '32x32': `${base}&size=medium`,
  };
}

export function user(site: Site, u: UserRec): Record<string, unknown> {
  return {
    self: `${site.url}/rest/api/3/user?accountId=${encodeURIComponent(u.accountId)}`,
    accountId: u.accountId,
    accountType: 'atlassian',
    emailAddress: u.email,
    avatarUrls: avatars(site, 'user', u.accountId),
    displayName: u.displayName,
    active: true,
    timeZone: u.timeZone,
    locale: 'en_US',
  };
}

const usersOf = new WeakMap<SiteData, { size: number; byId: Map<string, UserRec> }>();

export function userById(site: Site, accountId: string | null): Record<string, unknown> | null {
  if (accountId === null) return null;
  let index = usersOf.get(site.data);
  if (!index || index.size !== site.data.users.length) {
    index = { size: site.data.users.length, byId: new Map(site.data.users.map((u) => [u.accountId, u])) };
    usersOf.set(site.data, index);
  }
  const u = index.byId.get(accountId);
  return u ? user(site, u) : null;
}

export function statusCategory(site: Site, s: StatusRec) {
  const c = CATEGORIES[s.category];
  return { self: `${site.url}/rest/api/3/statuscategory/${c.id}`, ...c };
}

export function status(site: Site, s: StatusRec): Record<string, unknown> {
  return {
    self: `${site.url}/rest/api/3/status/${s.id}`,
    description: '',
    iconUrl: `${site.url}/images/icons/statuses/generic.png`,
    name: s.name,
    untranslatedName: s.name,
    id: s.id,
    statusCategory: statusCategory(site, s),
  };
}

function issueType(site: Site, name: IssueRec['type']) {
  const id = ISSUE_TYPES[name];
  return {
    self: `${site.url}/rest/api/3/issuetype/${id}`,
    id,
    description: '',
    iconUrl: `${site.url}/rest/api/2/universal_avatar/view/type/issuetype/avatar/${id}?size=medium`,
    name,
    subtask: false,
    avatarId: Number(id),
    hierarchyLevel: name === 'Epic' ? 1 : 0,
  };
}

function projectRef(site: Site, p: ProjectRec) {
  return {
    self: `${site.url}/rest/api/3/project/${p.id}`,
    id: p.id,
    key: p.key,
    name: p.name,
    projectTypeKey: 'software',
    simplified: p.teamManaged,
    avatarUrls: avatars(site, 'project', p.id),
  };
}

export function project(site: Site, p: ProjectRec): Record<string, unknown> {
  return {
    expand: 'description,lead,issueTypes,url,projectKeys,permissions,insight',
    ...projectRef(site, p),
    description: p.description,
    lead: userById(site, p.lead),
    components: [],
    issueTypes: Object.keys(ISSUE_TYPES).map((n) => issueType(site, n as IssueRec['type'])),
    assigneeType: 'UNASSIGNED',
    versions: [],
    roles: {},
    style: p.teamManaged ? 'next-gen' : 'classic',
    isPrivate: false,
    properties: {},
  };
}

function adf(text: string): Record<string, unknown> {
  return { type: 'doc', version: 1, content: [{ type: 'paragraph', content: [{ type: 'text', text }] }] };
}

export function comment(site: Site, issue: IssueRec, c: CommentRec): Record<string, unknown> {
  return {
    self: `${site.url}/rest/api/3/issue/${issue.id}/comment/${c.id}`,
    id: c.id,
    author: userById(site, c.author),
    body: adf(c.text),
    updateAuthor: userById(site, c.author),
    created: t(c.created),
    updated: t(c.updated),
    jsdPublic: true,
  };
}

export function history(site: Site, h: HistoryRec): Record<string, unknown> {
  return {
    id: h.id,
    author: userById(site, h.author),
    created: t(h.created),
    items: h.items.map((i) => ({ field: i.field, fieldtype: 'jira', fieldId: i.field, ...pickItem(i) })),
  };
}

function pickItem(i: HistoryRec['items'][number]) {
  return { from: i.from, fromString: i.fromString, to: i.to, toString: i.toString };
}

export function sprint(site: Site, s: SprintRec): Record<string, unknown> {
  return {
    id: s.id,
    self: `${site.url}/rest/agile/1.0/sprint/${s.id}`,
    state: s.state,
    name: s.name,
    ...(s.startDate !== null ? { startDate: new Date(s.startDate).toISOString() } : {}),
    ...(s.endDate !== null ? { endDate: new Date(s.endDate).toISOString() } : {}),
    ...(s.completeDate !== null ? { completeDate: new Date(s.completeDate).toISOString() } : {}),
    createdDate: new Date(s.createdDate).toISOString(),
    originBoardId: s.boardId,
    goal: s.goal,
  };
}

export function board(site: Site, b: BoardRec): Record<string, unknown> {
  const p = site.data.projects.find((x) => x.key === b.projectKey)!;
  return {
    id: b.id,
    self: `${site.url}/rest/agile/1.0/board/${b.id}`,
    name: b.name,
    type: b.type,
    location: {
      projectId: Number(p.id),
      displayName: `${p.name} (${p.key})`,
      projectName: p.name,
      projectKey: p.key,
      projectTypeKey: 'software',
      avatarURI: `${site.url}/secure/projectavatar?size=small&pid=${p.id}`,
      name: `${p.name} (${p.key})`,
    },
  };
}

/** Search embeds at most this many comments and changelog entries per issue. */
export const EMBEDDED = 20;

/**
 * The changelog a search embeds (`expand=changelog`): "a list of recent updates to an issue, sorted
 * by date, starting from the most recent" — the latest EMBEDDED entries, newest first; `total` is
 * left out for issues with an even id (it is optional in Jira's `PageOfChangelogs`).
 */
function embeddedChangelog(site: Site, i: IssueRec): Record<string, unknown> {
  const recent = i.histories.slice(-EMBEDDED).reverse();
  return {
    startAt: 0,
    maxResults: EMBEDDED,
    ...(Number(i.id) % 2 === 1 ? { total: i.histories.length } : {}),
    histories: recent.map((h) => history(site, h)),
  };
}

/** The issue's fields, each one only when `wanted` says so. */
function fields(site: Site, i: IssueRec, wanted: (f: string) => boolean, sprintField: string) {
  const st = site.data.statuses.find((s) => s.id === i.statusId)!;
  const p = site.data.projects.find((x) => x.key === i.projectKey)!;
  const parent = i.parentId === null ? undefined : site.data.issuesById.get(i.parentId);
  const all: Record<string, () => unknown> = {
    summary: () => i.summary,
    status: () => status(site, st),
    resolution: () =>
      i.resolution === null
        ? null
        : {
            self: `${site.url}/rest/api/3/resolution/${RESOLUTIONS[i.resolution] ?? '1'}`,
            id: RESOLUTIONS[i.resolution],
            description: '',
            name: i.resolution,
          },
    issuetype: () => issueType(site, i.type),
    assignee: () => userById(site, i.assignee),
    reporter: () => userById(site, i.reporter),
    labels: () => i.labels,
    created: () => t(i.created),
    updated: () => t(i.updated),
    resolutiondate: () => t(i.resolutiondate),
    project: () => projectRef(site, p),
    [sprintField]: () => (i.sprintIds.length ? sprintsOf(site, i) : null),
    comment: () => ({
      comments: i.comments.slice(0, EMBEDDED).map((c) => comment(site, i, c)),
      self: `${site.url}/rest/api/3/issue/${i.id}/comment`,
      maxResults: EMBEDDED,
      total: i.comments.length,
      startAt: 0,
    }),
  };
  if (parent) {
    all.parent = () => ({
      id: parent.id,
      key: parent.key,
      self: `${site.url}/rest/api/3/issue/${parent.id}`,
      fields: {
        summary: parent.summary,
        status: status(
          site,
          site.data.statuses.find((s) => s.id === parent.statusId)!,
        ),
        issuetype: issueType(site, parent.type),
      },
    });
  }
  const out: Record<string, unknown> = {};
  for (const [name, render] of Object.entries(all)) if (wanted(name)) out[name] = render();
  return out;
}

function sprintsOf(site: Site, i: IssueRec) {
  return i.sprintIds.map((id) => {
    const s = site.data.sprints.find((x) => x.id === id)!;
    const { self: _self, createdDate: _c, originBoardId, ...rest } = sprint(site, s);
    return { ...rest, boardId: originBoardId };
  });
}

export function issue(
  site: Site,
  i: IssueRec,
  wanted: (f: string) => boolean,
  changelog: boolean,
  sprintField: string,
): Record<string, unknown> {
  return {
    expand: 'renderedFields,names,schema,operations,editmeta,changelog,versionedRepresentations',
    id: i.id,
    self: `${site.url}/rest/api/3/issue/${i.id}`,
    key: i.key,
    fields: fields(site, i, wanted, sprintField),
    ...(changelog ? { changelog: embeddedChangelog(site, i) } : {}),
  };
}
