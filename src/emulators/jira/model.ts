/** The emulated site's records (times in epoch ms); rendered into Jira's JSON by render.ts. */

export interface UserRec {
  /** Cloud's id of the user. */
  accountId: string;
  /** Data Center's user key (`JIRAUSER10100`) and user name (the login): the same user on that flavor. */
  key: string;
  name: string;
  displayName: string;
  email: string;
  timeZone: string;
}

export interface StatusRec {
  id: string;
  name: string;
  /** Status category: 2 new (To Do), 4 indeterminate (In Progress), 3 done. */
  category: 'new' | 'indeterminate' | 'done';
}

export interface ProjectRec {
  id: string;
  key: string;
  name: string;
  description: string;
  lead: string;
  /** A team-managed ("next-gen", `simplified`) project: one board of type `simple`. */
  teamManaged: boolean;
  /** Issues of this project, kept ordered by (updated, id). */
  issues: IssueRec[];
}

export interface BoardRec {
  id: number;
  name: string;
  /** `simple`: a team-managed project's board, which has sprints when the sprints feature is on. */
  type: 'scrum' | 'kanban' | 'simple';
  projectKey: string;
  /** Whether the board has sprints (scrum: always; kanban: never; simple: when the feature is on). */
  sprints: boolean;
}

export interface SprintRec {
  id: number;
  boardId: number;
  name: string;
  state: 'closed' | 'active' | 'future';
  startDate: number | null;
  endDate: number | null;
  completeDate: number | null;
  createdDate: number;
  goal: string;
}

export interface CommentRec {
  id: string;
  author: string;
  text: string;
  created: number;
  updated: number;
}

export interface ChangeItemRec {
  field: 'status' | 'assignee' | 'labels' | 'summary' | 'resolution';
  from: string | null;
  fromString: string | null;
  to: string | null;
  toString: string | null;
}

export interface HistoryRec {
  id: string;
  author: string;
  created: number;
  items: ChangeItemRec[];
}

export interface IssueRec {
  id: string;
  key: string;
  projectKey: string;
  summary: string;
  type: 'Story' | 'Bug' | 'Task' | 'Epic';
  statusId: string;
  resolution: string | null;
  assignee: string | null;
  reporter: string;
  labels: string[];
  created: number;
  updated: number;
  resolutiondate: number | null;
  parentId: string | null;
  sprintIds: number[];
  comments: CommentRec[];
  histories: HistoryRec[];
}

export interface SiteData {
  site: string;
  users: UserRec[];
  statuses: StatusRec[];
  projects: ProjectRec[];
  boards: BoardRec[];
  sprints: SprintRec[];
  issuesById: Map<string, IssueRec>;
  /**
   * Accounts in the user-search pool that cannot be assigned (apps, deactivated users): the
   * assignable-user search skips them after taking its range (users.ts).
   */
  hiddenUsers: number;
  /** Next ids handed out (mutations). */
  next: { issue: number; comment: number; history: number };
}

export const STATUSES: readonly StatusRec[] = [
  { id: '10000', name: 'To Do', category: 'new' },
  { id: '3', name: 'In Progress', category: 'indeterminate' },
  { id: '10001', name: 'In Review', category: 'indeterminate' },
  { id: '10002', name: 'Done', category: 'done' },
];

export const RESOLUTIONS: Readonly<Record<string, string>> = {
  Done: '10000',
  "Won't Do": '10001',
  Duplicate: '10002',
  'Cannot Reproduce': '10003',
};

export const ISSUE_TYPES: Readonly<Record<IssueRec['type'], string>> = {
  Epic: '10000',
  Story: '10001',
  Task: '10002',
  Bug: '10004',
};

/** Keeps a project's issues ordered by (updated, numeric id). */
export function compareIssues(a: IssueRec, b: IssueRec): number {
  return a.updated - b.updated || Number(a.id) - Number(b.id);
}
