/**
 * The emulated organisation as compact records (times in epoch milliseconds, whole seconds).
 * Responses are rendered from these on demand (render.ts), so a large organisation costs a few
 * small objects per issue rather than its JSON.
 */

export interface UserRecord {
  index: number;
  id: number;
  login: string;
  type: 'User' | 'Organization';
  association: 'OWNER' | 'MEMBER' | 'COLLABORATOR' | 'CONTRIBUTOR' | 'NONE';
  /** When the account was deleted (it is then in `OrgData.deletedUsers` only: accounts.ts), if it was. */
  deletedAt?: number;
}

export interface LabelRecord {
  id: number;
  name: string;
  color: string;
  description: string | null;
  default: boolean;
}

export interface MilestoneRecord {
  id: number;
  number: number;
  title: string;
  description: string | null;
  creator: UserRecord;
  createdAt: number;
  dueOn: number | null;
}

export interface CommentRecord {
  id: number;
  item: ItemRecord;
  author: UserRecord;
  body: string;
  createdAt: number;
  updatedAt: number;
  /** When the comment was deleted (it is then in its repository's `deletedComments` only), if it was. */
  deletedAt?: number;
}

export type IssueEventKind =
  'labeled' | 'unlabeled' | 'assigned' | 'milestoned' | 'closed' | 'merged' | 'review_requested';

export interface EventRecord {
  id: number;
  item: ItemRecord;
  actor: UserRecord;
  event: IssueEventKind;
  createdAt: number;
  /** labeled, unlabeled: the label added or removed. */
  label?: LabelRecord;
  /** assigned: the assignee; review_requested: the requested reviewer. */
  subject?: UserRecord;
  milestone?: MilestoneRecord;
  commitId: string | null;
}

export type ReviewState = 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED';

export interface ReviewRecord {
  id: number;
  item: ItemRecord;
  author: UserRecord;
  state: ReviewState;
  body: string;
  submittedAt: number;
}

/** What only a pull request has. */
export interface PullDetails {
  headRef: string;
  headSha: string;
  mergeSha: string | null;
  mergedAt: number | null;
  mergedBy: UserRecord | null;
  draft: boolean;
  additions: number;
  deletions: number;
  changedFiles: number;
  commits: number;
  reviews: ReviewRecord[];
  requestedReviewers: UserRecord[];
}

/** An issue or a pull request (they share the number space, as on GitHub). */
export interface ItemRecord {
  repo: RepoRecord;
  id: number;
  number: number;
  title: string;
  body: string | null;
  author: UserRecord;
  createdAt: number;
  updatedAt: number;
  closedAt: number | null;
  closedBy: UserRecord | null;
  labels: LabelRecord[];
  assignees: UserRecord[];
  milestone: MilestoneRecord | null;
  comments: CommentRecord[];
  events: EventRecord[];
  pull: PullDetails | null;
  /** When the issue was deleted (gone from every list; reading it answers 410), if it was. */
  deletedAt?: number;
}

export interface CommitRecord {
  sha: string;
  author: UserRecord;
  date: number;
  message: string;
  parent: string | null;
  additions: number;
  deletions: number;
  files: string[];
}

export interface RepoRecord {
  index: number;
  id: number;
  name: string;
  private: boolean;
  description: string | null;
  language: string;
  createdAt: number;
  labels: LabelRecord[];
  milestones: MilestoneRecord[];
  collaborators: UserRecord[];
  /** By number − 1. */
  items: ItemRecord[];
  /** The comments there are, in creation order (ids ascending). */
  comments: CommentRecord[];
  /** The comments deleted (gone from every list; reading one answers 404), in deletion order. */
  deletedComments: CommentRecord[];
  events: EventRecord[];
  /** The default branch, oldest first. */
  commits: CommitRecord[];
  /** Pull request head commits, found by SHA. */
  heads: Map<string, ItemRecord>;
  /** Bumped on every change, so cached orderings are rebuilt. */
  version: number;
  /** An empty repository: no commits (its commit lists answer 409) and so no pull requests. */
  empty?: boolean;
}

/** The whole emulated organisation. */
export interface OrgData {
  seed: number;
  org: UserRecord;
  members: UserRecord[];
  /** Everyone who appears: members, outside collaborators, other authors (accounts not deleted). */
  users: UserRecord[];
  /** The accounts deleted (reading one answers 404), in deletion order: accounts.ts. */
  deletedUsers: UserRecord[];
  repos: RepoRecord[];
  /** Where the generated history ends. */
  now: number;
  start: number;
}

/** Id ranges per record kind, per repository (ids ascend with creation, as GitHub's do). */
export const ID_BASE = { item: 100_000_000, comment: 200_000_000, event: 400_000_000, review: 600_000_000 };
export const REPO_ID_SPAN = 10_000_000;

export const DAY_MS = 86_400_000;

/** An epoch-ms instant as GitHub writes it: `2026-01-01T00:00:00Z`. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Whether the issue is still there (not deleted). */
export function present(item: ItemRecord): boolean {
  return item.deletedAt === undefined;
}

/** The item's state as GitHub reports it. */
export function itemState(item: ItemRecord): 'open' | 'closed' {
  return item.closedAt === null ? 'open' : 'closed';
}
