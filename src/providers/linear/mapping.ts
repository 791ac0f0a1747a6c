/**
 * Linear GraphQL objects mapped onto the normalized surfaces. A work item's external id is the
 * issue's id (stable when the issue moves between teams); `number` is its identifier (`ENG-12`).
 */
import { linearStatus } from './status.js';
import { at, baseRow as base, type RowScope } from '../kit/rows.js';

/** What every row of a unit carries: the unit's scope (Linear rows name no container). */
export type { RowScope };

type Row = Record<string, unknown>;

export interface LnPageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}

export interface LnConnection<T> {
  nodes: T[];
  pageInfo: LnPageInfo;
}

export interface LnUser {
  id: string;
  name?: string | null;
  displayName?: string | null;
  email?: string | null;
  avatarUrl?: string | null;
  active?: boolean;
  admin?: boolean;
}

export interface LnState {
  id: string;
  name: string;
  type: string;
}

export interface LnLabel {
  id: string;
  name: string;
}

export interface LnComment {
  id: string;
  body: string;
  createdAt: string;
  updatedAt: string;
  url?: string;
  user?: LnUser | null;
}

export interface LnHistory {
  id: string;
  createdAt: string;
  actor?: LnUser | null;
  fromState?: LnState | null;
  toState?: LnState | null;
  fromAssignee?: LnUser | null;
  toAssignee?: LnUser | null;
  addedLabels?: LnLabel[] | null;
  removedLabels?: LnLabel[] | null;
}

export interface LnIssue {
  id: string;
  identifier: string;
  updatedAt: string;
  number?: number;
  title?: string;
  url?: string;
  priority?: number;
  createdAt?: string;
  startedAt?: string | null;
  completedAt?: string | null;
  canceledAt?: string | null;
  /** When Linear archived it (asked for with `includeArchived`); null while it is not. */
  archivedAt?: string | null;
  state?: LnState;
  assignee?: LnUser | null;
  parent?: { id: string; identifier: string } | null;
  project?: { id: string; name: string } | null;
  cycle?: { id: string; number: number; name?: string | null } | null;
  team?: { id: string; key: string };
  comments?: LnConnection<LnComment>;
  history?: LnConnection<LnHistory>;
  labels?: LnConnection<LnLabel>;
}

export interface LnTeam {
  id: string;
  key: string;
  name: string;
  description?: string | null;
}

export interface LnProject {
  id: string;
  name: string;
  description?: string | null;
  url?: string;
  createdAt?: string;
  updatedAt?: string;
  lead?: LnUser | null;
  status?: { id: string; name: string; type: string } | null;
}

export interface LnCycle {
  id: string;
  number: number;
  name?: string | null;
  startsAt: string;
  endsAt: string;
  completedAt?: string | null;
  team?: { id: string; key: string } | null;
}

/** A user as the normalized tables name them: display name, else name, else id. */
function login(u: LnUser | null | undefined): string | null {
  if (!u) return null;
  return u.displayName ?? u.name ?? u.id;
}

/** The issue without its nested connections (they have their own rows). */
function issueRaw(i: LnIssue): Row {
  const { comments: _c, history: _h, labels: _l, ...rest } = i;
  return rest;
}

/** When the issue first moved into a started state: from its history when read, else Linear's `startedAt`. */
export function firstStarted(i: LnIssue): Date | null {
  const starts = (i.history?.nodes ?? [])
    .filter((h) => h.toState?.type === 'started')
    .map((h) => Date.parse(h.createdAt))
    .sort((a, b) => a - b);
  if (starts.length > 0) return new Date(starts[0]!);
  return at(i.startedAt);
}

export function workItemRow(s: RowScope, i: LnIssue): Row {
  const stateType = i.state?.type ?? 'backlog';
  const status = linearStatus({ stateType });
  const completed = status === 'done' ? at(i.completedAt) : status === 'cancelled' ? at(i.canceledAt) : null;
  return {
    ...base(s, i.id, issueRaw(i)),
    number: i.identifier,
    title: i.title ?? null,
    type: 'issue',
    status,
    status_raw: i.state?.name ?? null,
    assignees: i.assignee ? [login(i.assignee)!] : [],
    labels: (i.labels?.nodes ?? []).map((l) => l.name),
    created_at: at(i.createdAt),
    updated_at: at(i.updatedAt),
    started_at: firstStarted(i),
    completed_at: completed,
    parent_external_id: i.parent?.id ?? null,
    container: i.team?.key ?? null,
    milestone: i.cycle ? (i.cycle.name ?? `Cycle ${i.cycle.number}`) : (i.project?.name ?? null),
    url: i.url ?? null,
    // An archived issue is kept, not deleted: Linear still has it.
    archived_at: at(i.archivedAt),
  };
}

export function commentRow(s: RowScope, issueId: string, c: LnComment): Row {
  return {
    ...base(s, c.id, c),
    work_item_external_id: issueId,
    author: login(c.user),
    body: c.body,
    created_at: at(c.createdAt),
    updated_at: at(c.updatedAt),
  };
}

/** One history entry → one event per change it records (state, assignee, each label added or removed). */
export function eventRows(s: RowScope, issueId: string, h: LnHistory): Row[] {
  const event = (suffix: string, kind: string, from: string | null, to: string | null): Row => ({
    ...base(s, `${h.id}${suffix}`, h),
    work_item_external_id: issueId,
    kind,
    actor: login(h.actor),
    from_value: from,
    to_value: to,
    occurred_at: at(h.createdAt),
  });
  const out: Row[] = [];
  if (h.fromState || h.toState) out.push(event('', 'state', h.fromState?.type ?? null, h.toState?.type ?? null));
  if (h.fromAssignee || h.toAssignee) {
    out.push(event(':assignee', 'assignee', login(h.fromAssignee), login(h.toAssignee)));
  }
  for (const l of h.addedLabels ?? []) out.push(event(`:label+${l.id}`, 'label', null, l.name));
  for (const l of h.removedLabels ?? []) out.push(event(`:label-${l.id}`, 'label', l.name, null));
  return out;
}

export function memberRow(s: RowScope, u: LnUser): Row {
  return {
    ...base(s, u.id, u),
    login: login(u),
    name: u.name ?? null,
    email: u.email ?? null,
    avatar_url: u.avatarUrl ?? null,
    role: u.admin ? 'admin' : 'member',
  };
}

export function teamRow(s: RowScope, t: LnTeam): Row {
  return { ...base(s, t.id, t), key: t.key, name: t.name, description: t.description ?? null, url: null };
}

export function projectRow(s: RowScope, p: LnProject): Row {
  return {
    ...base(s, p.id, p),
    key: null,
    name: p.name,
    description: p.description ?? null,
    state: p.status?.type ?? null,
    lead: login(p.lead),
    url: p.url ?? null,
    created_at: at(p.createdAt),
    updated_at: at(p.updatedAt),
  };
}

export function sprintRow(s: RowScope, c: LnCycle, now: Date): Row {
  const t = now.getTime();
  const state = c.completedAt ? 'closed' : Date.parse(c.startsAt) > t ? 'future' : 'active';
  return {
    ...base(s, c.id, c),
    name: c.name ?? `Cycle ${c.number}`,
    state,
    container: c.team?.key ?? null,
    starts_at: at(c.startsAt),
    ends_at: at(c.endsAt),
    completed_at: at(c.completedAt),
  };
}
