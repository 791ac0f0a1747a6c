/**
 * The seeded workspace: teams with their workflow states, users, labels, projects, cycles and
 * issues, each issue with a history (state, assignee and label changes) and comments. The same
 * seed, scale and `now` always give the same workspace. Times are epoch milliseconds.
 */
import { nthName, phrase } from '../core/names.js';
import { hashHex, Rng } from '../core/random.js';
import type { LinearScale } from './options.js';

export interface TeamRec {
  id: string;
  key: string;
  name: string;
  createdAt: number;
}
export interface UserRec {
  id: string;
  name: string;
  displayName: string;
  email: string;
  admin: boolean;
  createdAt: number;
}
export interface StateRec {
  id: string;
  teamId: string;
  name: string;
  type: 'triage' | 'backlog' | 'unstarted' | 'started' | 'completed' | 'canceled';
  color: string;
  position: number;
}
export interface LabelRec {
  id: string;
  name: string;
  color: string;
}
export interface ProjectRec {
  id: string;
  name: string;
  leadId: string;
  statusType: 'backlog' | 'planned' | 'started' | 'completed' | 'canceled';
  createdAt: number;
  updatedAt: number;
}
export interface CycleRec {
  id: string;
  teamId: string;
  number: number;
  startsAt: number;
  endsAt: number;
  completedAt: number | null;
}
export interface CommentRec {
  id: string;
  userId: string;
  body: string;
  createdAt: number;
  updatedAt: number;
}
/** A comment deleted from its issue (Linear's `commentDelete`): what a ground truth needs of it. */
export interface DeletedCommentRec {
  id: string;
  issueId: string;
  deletedAt: number;
}
export interface HistoryRec {
  id: string;
  createdAt: number;
  actorId: string;
  fromStateId?: string;
  toStateId?: string;
  fromAssigneeId?: string | null;
  toAssigneeId?: string | null;
  addedLabelIds?: string[];
  removedLabelIds?: string[];
}
export interface IssueRec {
  id: string;
  teamId: string;
  number: number;
  title: string;
  priority: number;
  createdAt: number;
  updatedAt: number;
  stateId: string;
  assigneeId: string | null;
  creatorId: string;
  parentId: string | null;
  projectId: string | null;
  cycleId: string | null;
  labelIds: string[];
  startedAt: number | null;
  completedAt: number | null;
  canceledAt: number | null;
  /** Set when the issue is archived (or trashed): it leaves the listings. */
  archivedAt?: number | null;
  comments: CommentRec[];
  history: HistoryRec[];
}

export interface Workspace {
  seed: number;
  urlKey: string;
  teams: TeamRec[];
  users: UserRec[];
  states: StateRec[];
  labels: LabelRec[];
  projects: ProjectRec[];
  cycles: CycleRec[];
  /** Kept sorted by (updatedAt, id): the order `orderBy: updatedAt` serves. */
  issues: IssueRec[];
  issueById: Map<string, IssueRec>;
  /** The comments deleted from issues, in deletion order (gone from every read). */
  deletedComments: DeletedCommentRec[];
  /** Ids handed out by `mutate` (a counter per kind). */
  next: { issue: number; comment: number; history: number };
}

const DAY = 86_400_000;
const TEAM_NAMES = ['Engineering', 'Design', 'Platform', 'Mobile', 'Growth', 'Infra', 'Data', 'Support'];
const LABELS = ['Bug', 'Feature', 'Improvement', 'Tech debt', 'Security', 'Performance', 'Docs', 'UX'];
const WORDS = ['sync', 'cache', 'login', 'export', 'billing', 'search', 'webhook', 'dashboard', 'import', 'filter'];
const VERBS = ['Fix', 'Add', 'Improve', 'Refactor', 'Investigate', 'Remove', 'Document', 'Speed up'];
const STATE_DEFS: [StateRec['type'], string, string][] = [
  ['triage', 'Triage', '#fc7840'],
  ['backlog', 'Backlog', '#bec2c8'],
  ['unstarted', 'Todo', '#e2e2e2'],
  ['started', 'In Progress', '#f2c94c'],
  ['started', 'In Review', '#5e6ad2'],
  ['completed', 'Done', '#5e6ad2'],
  ['canceled', 'Canceled', '#95a2b3'],
];

/** A UUID (version 4 layout) derived from the seed and a tag. */
export function uuidFor(seed: number, tag: string): string {
  const hex = hashHex(`${seed}:${tag}`, 32);
  const v = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${v}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const TEAM_KEYS = TEAM_NAMES.map((name) => name.slice(0, 3).toUpperCase());

export function generateWorkspace(seed: number, scale: LinearScale, nowMs: number): Workspace {
  const start = nowMs - scale.days * DAY;
  const teams = Array.from({ length: scale.teams }, (_, i) => ({
    id: uuidFor(seed, `team:${i}`),
    key: nthName(TEAM_KEYS, i, String),
    name: nthName(TEAM_NAMES, i, (round) => ` ${round}`),
    createdAt: start - 30 * DAY,
  }));
  const users = Array.from({ length: scale.users }, (_, i) => ({
    id: uuidFor(seed, `user:${i}`),
    name: `User ${i + 1}`,
    displayName: `user${i + 1}`,
    email: `user${i + 1}@example.test`,
    admin: i === 0,
    createdAt: start - 60 * DAY,
  }));
  const states = teams.flatMap((t) =>
    STATE_DEFS.map(([type, name, color], p) => ({
      id: uuidFor(seed, `state:${t.key}:${p}`),
      teamId: t.id,
      name,
      type,
      color,
      position: p,
    })),
  );
  const labels = LABELS.map((name, i) => ({ id: uuidFor(seed, `label:${i}`), name, color: '#888888' }));
  const rng = new Rng(seed, 'workspace');
  const projects = Array.from({ length: scale.projects }, (_, i): ProjectRec => {
    const createdAt = start + Math.floor(rng.next() * (nowMs - start) * 0.5);
    return {
      id: uuidFor(seed, `project:${i}`),
      name: `Project ${WORDS[i % WORDS.length] ?? 'x'} ${i + 1}`,
      leadId: rng.pick(users).id,
      statusType: rng.pick(['backlog', 'planned', 'started', 'started', 'completed', 'canceled'] as const),
      createdAt,
      updatedAt: createdAt + Math.floor(rng.next() * (nowMs - createdAt)),
    };
  });
  const cycles = teams.flatMap((t) =>
    Array.from({ length: scale.cycles }, (_, i): CycleRec => {
      const startsAt = nowMs - (scale.cycles - 2 - i) * 14 * DAY;
      const endsAt = startsAt + 14 * DAY;
      return {
        id: uuidFor(seed, `cycle:${t.key}:${i}`),
        teamId: t.id,
        number: i + 1,
        startsAt,
        endsAt,
        completedAt: endsAt <= nowMs ? endsAt : null,
      };
    }),
  );
  const ws: Workspace = {
    seed,
    urlKey: 'emulated',
    teams,
    users,
    states,
    labels,
    projects,
    cycles,
    issues: [],
    issueById: new Map(),
    deletedComments: [],
    next: { issue: scale.issues, comment: 0, history: 0 },
  };
  const numbers = new Map<string, number>();
  for (let i = 0; i < scale.issues; i++) {
    const team = teams[i % teams.length]!;
    const n = (numbers.get(team.id) ?? 0) + 1;
    numbers.set(team.id, n);
    const issue = makeIssue(
      ws,
      scale,
      rng,
      i,
      team,
      n,
      start + Math.floor(((i + rng.next()) / scale.issues) * (nowMs - start) * 0.9),
      nowMs,
    );
    ws.issues.push(issue);
    ws.issueById.set(issue.id, issue);
  }
  sortIssues(ws);
  return ws;
}

export function sortIssues(ws: Workspace): void {
  ws.issues.sort((a, b) => a.updatedAt - b.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function statesOf(ws: Workspace, teamId: string, type: StateRec['type']): StateRec {
  return ws.states.find((s) => s.teamId === teamId && s.type === type)!;
}

/** One issue and its life so far: created in backlog, then maybe started, then maybe done or canceled. */
export function makeIssue(
  ws: Workspace,
  scale: LinearScale,
  rng: Rng,
  index: number,
  team: TeamRec,
  number: number,
  createdAt: number,
  nowMs: number,
): IssueRec {
  const id = uuidFor(ws.seed, `issue:${index}`);
  const span = Math.max(1, nowMs - createdAt);
  const creatorId = rng.pick(ws.users).id;
  const issue: IssueRec = {
    id,
    teamId: team.id,
    number,
    title: phrase(rng, VERBS, WORDS, WORDS),
    priority: rng.int(0, 4),
    createdAt,
    updatedAt: createdAt,
    stateId: statesOf(ws, team.id, 'backlog').id,
    assigneeId: null,
    creatorId,
    parentId: null,
    projectId: ws.projects.length > 0 && rng.chance(0.6) ? rng.pick(ws.projects).id : null,
    cycleId: null,
    labelIds: [],
    startedAt: null,
    completedAt: null,
    canceledAt: null,
    comments: [],
    history: [],
  };
  let t = createdAt;
  const step = () => (t = Math.min(nowMs - 1, t + 1 + Math.floor(rng.next() * span * 0.2)));
  const labels = rng.sample(ws.labels, rng.int(0, scale.maxLabels));
  if (labels.length > 0)
    addHistory(ws, issue, { createdAt: step(), actorId: creatorId, addedLabelIds: labels.map((l) => l.id) });
  if (rng.chance(0.8)) {
    const to = rng.pick(ws.users).id;
    addHistory(ws, issue, { createdAt: step(), actorId: creatorId, fromAssigneeId: null, toAssigneeId: to });
  }
  const teamCycles = ws.cycles.filter((c) => c.teamId === team.id);
  if (teamCycles.length > 0 && rng.chance(0.5)) issue.cycleId = rng.pick(teamCycles).id;
  const roll = rng.next();
  if (roll < 0.7) moveTo(ws, issue, rng.chance(0.5) ? 'started' : 'unstarted', step());
  if (roll < 0.5 && stateType(ws, issue) !== 'started') moveTo(ws, issue, 'started', step());
  if (roll < 0.45) moveTo(ws, issue, 'completed', step());
  else if (roll > 0.93) moveTo(ws, issue, 'canceled', step());
  const comments = rng.int(0, scale.maxComments);
  for (let c = 0; c < comments; c++)
    addComment(ws, issue, rng.pick(ws.users).id, `Comment ${c + 1} on ${team.key}-${number}`, step());
  if (index > 0 && index % 17 === 0) {
    const parent = ws.issues[index - 1];
    if (parent && parent.teamId === team.id) issue.parentId = parent.id;
  }
  return issue;
}

export function stateType(ws: Workspace, issue: IssueRec): StateRec['type'] {
  return ws.states.find((s) => s.id === issue.stateId)!.type;
}

export function addHistory(ws: Workspace, issue: IssueRec, h: Omit<HistoryRec, 'id'>): void {
  const rec: HistoryRec = {
    id: uuidFor(ws.seed, `history:${issue.id}:${issue.history.length}:${ws.next.history++}`),
    ...h,
  };
  if (h.toAssigneeId !== undefined) issue.assigneeId = h.toAssigneeId;
  for (const l of h.addedLabelIds ?? []) if (!issue.labelIds.includes(l)) issue.labelIds.push(l);
  if (h.removedLabelIds) issue.labelIds = issue.labelIds.filter((l) => !h.removedLabelIds!.includes(l));
  issue.history.push(rec);
  issue.updatedAt = Math.max(issue.updatedAt, h.createdAt);
}

/** Moves the issue into the team's first state of `type`, recording the transition. */
export function moveTo(ws: Workspace, issue: IssueRec, type: StateRec['type'], at: number): void {
  const to = statesOf(ws, issue.teamId, type);
  if (to.id === issue.stateId) return;
  addHistory(ws, issue, {
    createdAt: at,
    actorId: issue.assigneeId ?? issue.creatorId,
    fromStateId: issue.stateId,
    toStateId: to.id,
  });
  issue.stateId = to.id;
  if (type === 'started') issue.startedAt ??= at;
  issue.completedAt = type === 'completed' ? at : null;
  issue.canceledAt = type === 'canceled' ? at : null;
}

export function addComment(ws: Workspace, issue: IssueRec, userId: string, body: string, at: number): void {
  issue.comments.push({
    id: uuidFor(ws.seed, `comment:${issue.id}:${ws.next.comment++}`),
    userId,
    body,
    createdAt: at,
    updatedAt: at,
  });
  issue.updatedAt = Math.max(issue.updatedAt, at);
}
