/**
 * The seeded site: users, projects (a company-managed one with a scrum and a kanban board, the
 * scrum board with sprints; every second project team-managed, with one `simple` board that has
 * sprints in every other such project) and issues with a status lifecycle in their changelog
 * (To Do → In Progress → In Review → Done, some resolved Won't Do), label and assignee changes, and
 * comments. Same seed, same site.
 */
import { phrase } from '../core/names.js';
import { Rng } from '../core/random.js';
import type { JiraScale } from './options.js';
import {
  compareIssues,
  RESOLUTIONS,
  STATUSES,
  type HistoryRec,
  type IssueRec,
  type ProjectRec,
  type SiteData,
  type SprintRec,
  type UserRec,
} from './model.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const NAMES = ['Ada', 'Grace', 'Linus', 'Barbara', 'Ken', 'Margaret', 'Dennis', 'Frances', 'Alan', 'Radia'];
const KEYS = ['ENG', 'OPS', 'WEB', 'API', 'DATA', 'MOB', 'SEC', 'INFRA'];
const LABELS = ['backend', 'frontend', 'bug-bash', 'tech-debt', 'customer', 'perf'];
const WORDS = ['fix', 'add', 'remove', 'refactor', 'login', 'billing', 'search', 'export', 'cache', 'timeout'];
const TYPES: IssueRec['type'][] = ['Story', 'Bug', 'Task', 'Task', 'Story', 'Bug'];
const SPRINT_DAYS = 14;

function accountId(rng: Rng): string {
  let hex = '';
  for (let i = 0; i < 24; i++) hex += Math.floor(rng.next() * 16).toString(16);
  return `712020:${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 24)}`;
}

function users(rng: Rng, n: number): UserRec[] {
  return Array.from({ length: n }, (_, i) => {
    const first = NAMES[i % NAMES.length]!;
    const name = `${first} ${String.fromCharCode(65 + ((i * 7) % 26))}.${i >= NAMES.length ? ` ${i}` : ''}`;
    return {
      accountId: accountId(rng),
      key: `JIRAUSER${10100 + i}`,
      name: `${first.toLowerCase()}${i}`,
      displayName: name,
      email: `${first.toLowerCase()}${i}@example.com`,
      timeZone: 'UTC',
    };
  });
}

function projectKey(i: number): string {
  return i < KEYS.length ? KEYS[i]! : `P${i}`;
}

export function generateSite(seed: number, site: string, scale: JiraScale, now: number): SiteData {
  const rng = new Rng(seed, 'site');
  const data: SiteData = {
    site,
    users: users(rng, scale.users),
    statuses: [...STATUSES],
    projects: [],
    boards: [],
    sprints: [],
    issuesById: new Map(),
    hiddenUsers: scale.hiddenUsers,
    next: { issue: 10_001, comment: 10_001, history: 10_001 },
  };
  for (let p = 0; p < scale.projects; p++) {
    const key = projectKey(p);
    const lead = data.users[p % data.users.length]!.accountId;
    const teamManaged = p % 2 === 1;
    data.projects.push({
      id: String(10_000 + p),
      key,
      name: `${key} project`,
      description: `Work of ${key}`,
      lead,
      teamManaged,
      issues: [],
    });
    if (teamManaged) {
      const sprints = p % 4 === 1;
      data.boards.push({ id: p * 2 + 1, name: `${key} board`, type: 'simple', projectKey: key, sprints });
    } else {
      data.boards.push(
        { id: p * 2 + 1, name: `${key} board`, type: 'scrum', projectKey: key, sprints: true },
        { id: p * 2 + 2, name: `${key} kanban`, type: 'kanban', projectKey: key, sprints: false },
      );
    }
    if (data.boards.some((b) => b.id === p * 2 + 1 && b.sprints)) {
      data.sprints.push(...sprintsOf(data, p * 2 + 1, key, scale.sprints, now));
    }
  }
  // Long lists spread evenly over the issues and the projects.
  const long = new Set<number>();
  for (let k = 0; k < Math.min(scale.longLists, scale.issues); k++) {
    long.add(Math.min(scale.issues - 1, Math.floor((k * scale.issues) / scale.longLists) + (k % scale.projects)));
  }
  for (let n = 0; n < scale.issues; n++) {
    const project = data.projects[n % data.projects.length]!;
    addIssue(data, project, new Rng(seed, `issue:${n}`), scale, now, long.has(n));
  }
  for (const p of data.projects) p.issues.sort(compareIssues);
  return data;
}

function sprintsOf(data: SiteData, boardId: number, key: string, count: number, now: number): SprintRec[] {
  const out: SprintRec[] = [];
  for (let s = 0; s < count; s++) {
    const start = now - (count - 1 - s) * SPRINT_DAYS * DAY - 7 * DAY;
    const end = start + SPRINT_DAYS * DAY;
    const state = end < now ? 'closed' : start <= now ? 'active' : 'future';
    out.push({
      id: data.sprints.length + out.length + 1,
      boardId,
      name: `${key} Sprint ${s + 1}`,
      state,
      startDate: start,
      endDate: end,
      completeDate: state === 'closed' ? end : null,
      createdDate: start - DAY,
      goal: s % 2 === 0 ? `Ship ${key} milestone ${s + 1}` : '',
    });
  }
  return out;
}

function sprintAt(data: SiteData, projectKey: string, t: number): number[] {
  const board = data.boards.find((b) => b.projectKey === projectKey && b.sprints);
  const s = data.sprints.find((sp) => sp.boardId === board?.id && sp.startDate! <= t && t < sp.endDate!);
  return s ? [s.id] : [];
}

/** One issue with its lifecycle; `long` gives it more comments and changelog entries than a search embeds. */
export function addIssue(data: SiteData, project: ProjectRec, rng: Rng, scale: JiraScale, now: number, long = false) {
  const number = project.issues.length + 1;
  const created = now - Math.floor(rng.next() * scale.days * DAY) - HOUR;
  const users = data.users;
  const issue: IssueRec = {
    id: String(data.next.issue++),
    key: `${project.key}-${number}`,
    projectKey: project.key,
    summary: `${phrase(rng, WORDS, WORDS)} ${number}`,
    type: number % 25 === 1 ? 'Epic' : rng.pick(TYPES),
    statusId: STATUSES[0]!.id,
    resolution: null,
    assignee: rng.chance(0.8) ? rng.pick(users).accountId : null,
    reporter: rng.pick(users).accountId,
    labels: rng.chance(0.6) ? [rng.pick(LABELS)] : [],
    created,
    updated: created,
    resolutiondate: null,
    parentId: null,
    sprintIds: sprintAt(data, project.key, created),
    comments: [],
    histories: [],
  };
  const epic = project.issues.find((i) => i.type === 'Epic');
  if (issue.type !== 'Epic' && epic && rng.chance(0.3)) issue.parentId = epic.id;
  let t = created;
  const step = () => (t = Math.min(now - 1000, t + Math.floor(rng.next() * 2 * DAY) + 60_000));
  const stage = rng.next();
  const path = stage < 0.25 ? [] : stage < 0.5 ? ['3'] : stage < 0.6 ? ['3', '10001'] : ['3', '10001', '10002'];
  for (const to of path) transition(data, issue, to, step(), rng.pick(users).accountId);
  if (issue.statusId === '10002') {
    issue.resolution = rng.chance(0.15) ? "Won't Do" : 'Done';
    issue.resolutiondate = issue.updated;
    issue.histories.at(-1)!.items.push(resolutionItem(issue.resolution));
  }
  const extra = long ? rng.int(25, 34) : rng.int(0, scale.maxHistories);
  for (let h = 0; h < extra; h++) labelChange(data, issue, step(), rng.pick(users).accountId, rng.pick(LABELS));
  const comments = long ? rng.int(25, 44) : rng.int(0, scale.maxComments);
  for (let c = 0; c < comments; c++)
    addComment(data, issue, step(), rng.pick(users).accountId, `${rng.pick(WORDS)} ${c}`);
  project.issues.push(issue);
  data.issuesById.set(issue.id, issue);
  return issue;
}

export function resolutionItem(name: string | null) {
  return {
    field: 'resolution' as const,
    from: null,
    fromString: null,
    to: name === null ? null : (RESOLUTIONS[name] ?? null),
    toString: name,
  };
}

/** A new changelog entry of `issue` at `at` (its `updated` moves there); the caller adds its items. */
export function history(data: SiteData, issue: IssueRec, at: number, author: string): HistoryRec {
  const h: HistoryRec = { id: String(data.next.history++), author, created: at, items: [] };
  issue.histories.push(h);
  issue.updated = Math.max(issue.updated, at);
  return h;
}

/** A status change in the changelog (and the issue's status). */
export function transition(data: SiteData, issue: IssueRec, to: string, at: number, author: string): void {
  const from = data.statuses.find((s) => s.id === issue.statusId)!;
  const target = data.statuses.find((s) => s.id === to)!;
  history(data, issue, at, author).items.push({
    field: 'status',
    from: from.id,
    fromString: from.name,
    to: target.id,
    toString: target.name,
  });
  issue.statusId = to;
}

/** A label added (or removed when present) in the changelog. */
export function labelChange(data: SiteData, issue: IssueRec, at: number, author: string, label: string): void {
  const before = issue.labels.join(' ');
  issue.labels = issue.labels.includes(label) ? issue.labels.filter((l) => l !== label) : [...issue.labels, label];
  history(data, issue, at, author).items.push({
    field: 'labels',
    from: null,
    fromString: before,
    to: null,
    toString: issue.labels.join(' '),
  });
}

export function addComment(data: SiteData, issue: IssueRec, at: number, author: string, text: string): void {
  issue.comments.push({ id: String(data.next.comment++), author, text, created: at, updated: at });
  issue.updated = Math.max(issue.updated, at);
}
