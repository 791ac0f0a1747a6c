/**
 * Jira objects (Cloud's REST v3, Data Center's REST v2 and Agile shapes) mapped onto the normalized
 * surfaces.
 *
 * Ids: a work item's `external_id` is the issue id (stable when an issue moves to another project;
 * its key goes to `number`), a comment's is the comment id, an event's `<issue id>:<history id>:<n>`
 * (the n-th changed field of a changelog entry; `:+label` / `:-label` for each label change), a
 * member's the account id (also what `assignees` and event actors hold), a project's the project
 * id, a sprint's the sprint id. Data Center users have no account id: their `key` stands for it
 * (`userId`; stable when a user is renamed, unlike `name`), and changelog assignee items hold keys.
 *
 * Status: `jiraStatus` over the status category key and the resolution. `started_at` is the
 * first changelog transition into a status of the `indeterminate` category; `completed_at` the last
 * transition into a `done` category status while the item is done (its resolution date when the
 * changelog shows none), null otherwise.
 */
import { ValidationError } from '../../errors.js';
import type { WorkItemStatus } from '../../sdk/normalized.js';
import { jiraStatus } from './status.js';
import { adfToText } from './adf.js';
import { jiraDate, parseJiraTime } from './timeZone.js';
import { baseRow as base, type RowScope as UnitRowScope } from '../kit/rows.js';

type Row = Record<string, unknown>;

/** What every row of a unit carries: the unit's scope and the Jira site. */
export interface RowScope extends UnitRowScope {
  siteUrl: string;
}

export interface JiraUser {
  /** Cloud's user id. */
  accountId?: string;
  /** Data Center's user key (stable) and user name (the login, which may change). */
  key?: string;
  name?: string;
  accountType?: string;
  displayName?: string;
  emailAddress?: string;
  avatarUrls?: Record<string, string>;
  active?: boolean;
  timeZone?: string;
  self?: string;
}

export interface JiraStatusCategory {
  id?: number;
  key: string;
  name?: string;
}

export interface JiraStatus {
  id: string;
  name: string;
  statusCategory?: JiraStatusCategory;
}

export interface JiraComment {
  id: string;
  author?: JiraUser;
  body?: unknown;
  created: string;
  updated: string;
  self?: string;
}

export interface JiraChangeItem {
  field: string;
  fieldtype?: string;
  fieldId?: string;
  from: string | null;
  fromString: string | null;
  to: string | null;
  toString: string | null;
}

export interface JiraHistory {
  id: string;
  author?: JiraUser;
  created: string;
  items: JiraChangeItem[];
}

export interface JiraCommentPage {
  comments: JiraComment[];
  startAt?: number;
  maxResults?: number;
  total?: number;
}

export interface JiraSprintRef {
  id: number;
  name?: string;
  state?: string;
}

export interface JiraIssueFields {
  summary?: string;
  status?: JiraStatus;
  resolution?: { id?: string; name: string } | null;
  issuetype?: { id?: string; name: string };
  assignee?: JiraUser | null;
  labels?: string[];
  created?: string;
  updated?: string;
  resolutiondate?: string | null;
  parent?: { id: string; key: string };
  project?: { id: string; key: string };
  comment?: JiraCommentPage;
  [field: string]: unknown;
}

export interface JiraIssue {
  id: string;
  key: string;
  self?: string;
  fields: JiraIssueFields;
  changelog?: { histories: JiraHistory[]; startAt?: number; maxResults?: number; total?: number };
}

export interface JiraProject {
  id: string;
  key: string;
  name: string;
  description?: string;
  lead?: JiraUser;
  archived?: boolean;
  deleted?: boolean;
  self?: string;
}

export interface JiraSprint {
  id: number;
  self?: string;
  state: string;
  name: string;
  startDate?: string;
  endDate?: string;
  completeDate?: string;
  createdDate?: string;
  originBoardId?: number;
  goal?: string;
}

/** A user's id: Cloud's account id, else Data Center's user key (its name when it has no key). */
export function userId(u: JiraUser | null | undefined): string | null {
  return u?.accountId ?? u?.key ?? u?.name ?? null;
}

/** Plain text of a rich-text field: ADF (Cloud) or wiki markup (Data Center), by the caller's deployment. */
export type TextOf = (body: unknown) => string | null;

/** Status id → status category key (`new`, `indeterminate`, `done`). */
export type StatusCategories = ReadonlyMap<string, string>;

export function projectRow(s: RowScope, p: JiraProject): Row {
  return {
    ...base(s, p.id, p),
    key: p.key,
    name: p.name,
    description: p.description ?? null,
    state: p.deleted ? 'deleted' : p.archived ? 'archived' : 'active',
    lead: userId(p.lead),
    url: `${s.siteUrl}/browse/${encodeURIComponent(p.key)}`,
  };
}

export function memberRow(s: RowScope, u: JiraUser, role: string): Row {
  const id = userId(u) ?? '';
  return {
    ...base(s, id, u),
    login: id,
    name: u.displayName ?? null,
    email: u.emailAddress ?? null,
    avatar_url: u.avatarUrls?.['48x48'] ?? null,
    role,
  };
}

export function sprintRow(s: RowScope, projectKey: string, sp: JiraSprint): Row {
  return {
    ...base(s, String(sp.id), sp),
    name: sp.name,
    state: sp.state,
    container: projectKey,
    starts_at: jiraDate(sp.startDate),
    ends_at: jiraDate(sp.endDate),
    completed_at: jiraDate(sp.completeDate),
  };
}

/** Changelog entries oldest first (ties by id). */
export function chronological(histories: readonly JiraHistory[]): JiraHistory[] {
  return [...histories].sort(
    (a, b) => parseJiraTime(a.created) - parseJiraTime(b.created) || Number(a.id) - Number(b.id),
  );
}

/** When each status change happened, oldest first, with the category of the status entered. */
function statusChanges(histories: readonly JiraHistory[], categories: StatusCategories) {
  const out: { at: number; category: string | null }[] = [];
  for (const h of chronological(histories)) {
    for (const item of h.items) {
      if (item.field !== 'status' && item.fieldId !== 'status') continue;
      out.push({ at: parseJiraTime(h.created), category: item.to === null ? null : (categories.get(item.to) ?? null) });
    }
  }
  return out.filter((c) => Number.isFinite(c.at));
}

function normalized(f: JiraIssueFields): WorkItemStatus | null {
  const category = f.status?.statusCategory?.key;
  if (category === undefined) return null;
  try {
    return jiraStatus({ category, resolution: f.resolution?.name ?? null });
  } catch (err) {
    if (err instanceof ValidationError) return null;
    throw err;
  }
}

/** The sprint an issue is in: its open one if any, else the last listed. */
function sprintOf(f: JiraIssueFields, sprintField: string): string | null {
  const raw = f[sprintField];
  if (!Array.isArray(raw) || raw.length === 0) return null;
  const sprints = raw.map(sprintRef).filter((x): x is JiraSprintRef => x !== null);
  const open = sprints.find((sp) => sp.state === 'active') ?? sprints.at(-1);
  return open?.name ?? null;
}

/**
 * A sprint field's entry: Cloud's object, or Data Center's text form
 * (`com.atlassian.greenhopper.service.sprint.Sprint@1a2b[id=7,rapidViewId=3,state=ACTIVE,name=Sprint 7,…]`,
 * the `toString` Cloud dropped: developer.atlassian.com/cloud/jira/platform/deprecation-notice-tostring-
 * representation-of-sprints-in-get-issue-response/). Its name runs to the next known key, so a name
 * holding a comma is read whole.
 */
const SPRINT_KEYS = [
  'id',
  'rapidViewId',
  'state',
  'name',
  'goal',
  'startDate',
  'endDate',
  'completeDate',
  'activatedDate',
  'sequence',
  'autoStartStop',
  'synced',
  'incompleteIssuesDestinationId',
].join('|');

function sprintRef(x: unknown): JiraSprintRef | null {
  if (x !== null && typeof x === 'object') return x as JiraSprintRef;
  if (typeof x !== 'string') return null;
  const body = /\[(.*)\]\s*$/s.exec(x)?.[1];
  if (body === undefined) return null;
  const value = (key: string) => new RegExp(`(?:^|,)${key}=(.*?)(?=,(?:${SPRINT_KEYS})=|$)`, 's').exec(body)?.[1];
  const id = Number(value('id'));
  const name = value('name');
  if (!Number.isFinite(id) || name === undefined) return null;
  return { id, name, state: value('state')?.toLowerCase() };
}

/** The issue as a work item; `histories` is its whole changelog (for started/completed). */
export function workItemRow(
  s: RowScope,
  i: JiraIssue,
  histories: readonly JiraHistory[],
  categories: StatusCategories,
  sprintField: string,
): Row {
  const f = i.fields;
  const status = normalized(f);
  const changes = statusChanges(histories, categories);
  const started = changes.find((c) => c.category === 'indeterminate');
  const doneAt = changes.filter((c) => c.category === 'done').at(-1)?.at ?? parseJiraTime(f.resolutiondate);
  const { comment: _comment, ...fields } = f;
  return {
    ...base(s, i.id, { id: i.id, key: i.key, self: i.self, fields }),
    number: i.key,
    title: f.summary ?? null,
    type: f.issuetype?.name ?? null,
    status,
    status_raw: f.status?.name ?? null,
    assignees: userId(f.assignee) === null ? [] : [userId(f.assignee)!],
    labels: f.labels ?? [],
    created_at: jiraDate(f.created),
    updated_at: jiraDate(f.updated),
    started_at: started ? new Date(started.at) : null,
    completed_at: (status === 'done' || status === 'cancelled') && Number.isFinite(doneAt) ? new Date(doneAt) : null,
    parent_external_id: f.parent?.id ?? null,
    container: f.project?.key ?? null,
    milestone: sprintOf(f, sprintField),
    url: `${s.siteUrl}/browse/${encodeURIComponent(i.key)}`,
  };
}

export function commentRow(s: RowScope, issueId: string, c: JiraComment, textOf: TextOf = adfToText): Row {
  return {
    ...base(s, c.id, c),
    work_item_external_id: issueId,
    author: userId(c.author),
    body: textOf(c.body),
    created_at: jiraDate(c.created),
    updated_at: jiraDate(c.updated),
  };
}

const EVENT_KINDS: Readonly<Record<string, 'state' | 'assignee' | 'label'>> = {
  status: 'state',
  assignee: 'assignee',
  labels: 'label',
};

interface Change {
  /** Distinguishes the changes of one changelog item (a label's name). */
  part: string;
  from: string | null;
  to: string | null;
}

/** A labels item (`fromString`/`toString` list labels separated by spaces) as one change per label. */
function labelChanges(item: JiraChangeItem): Change[] {
  const words = (s: string | null) => new Set((s ?? '').split(/\s+/).filter((w) => w !== ''));
  const before = words(item.fromString);
  const after = words(item.toString);
  return [
    ...[...after].filter((l) => !before.has(l)).map((l) => ({ part: `+${l}`, from: null, to: l })),
    ...[...before].filter((l) => !after.has(l)).map((l) => ({ part: `-${l}`, from: l, to: null })),
  ];
}

function changesOf(kind: 'state' | 'assignee' | 'label', item: JiraChangeItem): Change[] {
  if (kind === 'label') return labelChanges(item);
  if (kind === 'assignee') return [{ part: '', from: item.from, to: item.to }];
  return [{ part: '', from: item.fromString, to: item.toString }];
}

/**
 * The status, assignee and label changes of an issue's changelog (other fields are left out): a
 * status change by status names, an assignee change by account ids, a label change one event per
 * label added (`to`) or removed (`from`), as GitHub's label events.
 */
export function eventRows(s: RowScope, issueId: string, histories: readonly JiraHistory[]): Row[] {
  const rows: Row[] = [];
  for (const h of histories) {
    h.items.forEach((item, n) => {
      const kind = EVENT_KINDS[item.fieldId ?? item.field] ?? EVENT_KINDS[item.field];
      if (!kind) return;
      for (const c of changesOf(kind, item)) {
        const id = `${issueId}:${h.id}:${n}${c.part ? `:${c.part}` : ''}`;
        rows.push({
          ...base(s, id, { history: h.id, created: h.created, author: h.author, item }),
          work_item_external_id: issueId,
          kind,
          actor: userId(h.author),
          from_value: c.from,
          to_value: c.to,
          occurred_at: jiraDate(h.created),
        });
      }
    });
  }
  return rows;
}
