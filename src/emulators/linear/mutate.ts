/**
 * Data changing between runs: each round edits some issues (a state move, a comment, a relabel)
 * and creates a few, all at the clock's now, so an incremental sync has something to find. Every
 * change here is announced (the webhook it sends: webhooks.ts).
 */
import { Rng } from '../core/random.js';
import type { Announce } from '../core/webhooks.js';
import {
  addComment,
  addHistory,
  makeIssue,
  moveTo,
  sortIssues,
  stateType,
  type CommentRec,
  type IssueRec,
  type Workspace,
} from './generate.js';
import type { LinearScale } from './options.js';
import { issueFields, updatedFrom, type LinearChange } from './webhooks.js';

const SILENT: Announce<LinearChange> = () => undefined;

export interface LinearMutationSummary {
  round: number;
  /** Ids of issues changed (moved, commented, relabelled). */
  updated: string[];
  /** Ids of issues created. */
  created: string[];
}

export function mutateWorkspace(
  ws: Workspace,
  scale: LinearScale,
  round: number,
  nowMs: number,
  announce: Announce<LinearChange> = SILENT,
): LinearMutationSummary {
  const rng = new Rng(ws.seed, `mutate:${round}`);
  const count = Math.max(1, Math.ceil(ws.issues.length * 0.02));
  const picked = rng.sample(ws.issues, Math.min(count, ws.issues.length));
  const updated: string[] = [];
  picked.forEach((issue, n) => {
    const at = nowMs - picked.length + n;
    const kind = n % 3;
    const before = issueFields(issue);
    if (kind === 0) {
      const type = stateType(ws, issue);
      moveTo(ws, issue, type === 'started' ? 'completed' : type === 'completed' ? 'unstarted' : 'started', at);
    } else if (kind === 1) {
      addComment(ws, issue, rng.pick(ws.users).id, `Follow-up in round ${round}`, at);
    } else {
      const label = rng.pick(ws.labels).id;
      const has = issue.labelIds.includes(label);
      addHistory(ws, issue, {
        createdAt: at,
        actorId: rng.pick(ws.users).id,
        ...(has ? { removedLabelIds: [label] } : { addedLabelIds: [label] }),
      });
    }
    issue.updatedAt = at;
    updated.push(issue.id);
    if (kind === 1) announce({ type: 'Comment', action: 'create', issue, comment: issue.comments.at(-1)!, at });
    else announce({ type: 'Issue', action: 'update', issue, at, updatedFrom: updatedFrom(before, issue) });
  });
  const created: string[] = [];
  for (let k = 0; k < Math.max(1, Math.ceil(count / 4)); k++) {
    const team = ws.teams[k % ws.teams.length]!;
    const number = ws.issues.filter((i) => i.teamId === team.id).reduce((m, i) => Math.max(m, i.number), 0) + 1;
    const issue = makeIssue(
      ws,
      { ...scale, maxComments: 1 },
      rng,
      ws.next.issue++,
      team,
      number,
      nowMs - 1000 + k,
      nowMs,
    );
    ws.issues.push(issue);
    ws.issueById.set(issue.id, issue);
    created.push(issue.id);
    announce({ type: 'Issue', action: 'create', issue, at: issue.createdAt });
    for (const comment of issue.comments)
      announce({ type: 'Comment', action: 'create', issue, comment, at: comment.createdAt });
  }
  sortIssues(ws);
  return { round, updated, created };
}

/** What churn did: issues edited, archived and deleted (ids). */
export interface ChurnSummary {
  edited: string[];
  archived: string[];
  deleted: string[];
}

/**
 * One edit of `issue` at `at` (a state move or a comment, drawn from `rng`): its `updatedAt` moves to
 * `at`, so it moves to the front of `orderBy: updatedAt`. A state move is an Issue update, a comment
 * a Comment create.
 */
export function editIssue(
  ws: Workspace,
  rng: Rng,
  issue: IssueRec,
  at: number,
  announce: Announce<LinearChange> = SILENT,
): void {
  const before = issueFields(issue);
  const moves = rng.chance(0.5);
  if (moves) {
    const type = stateType(ws, issue);
    moveTo(ws, issue, type === 'started' ? 'completed' : 'started', at);
  } else {
    addComment(ws, issue, rng.pick(ws.users).id, 'Edited while being read', at);
  }
  issue.updatedAt = Math.max(issue.updatedAt, at);
  sortIssues(ws);
  if (moves) announce({ type: 'Issue', action: 'update', issue, at, updatedFrom: updatedFrom(before, issue) });
  else announce({ type: 'Comment', action: 'create', issue, comment: issue.comments.at(-1)!, at });
}

/**
 * Archives `issue` at `at` (Linear: archived and trashed issues leave the default listings): an
 * Issue update with `archivedAt`.
 */
export function archiveIssue(
  ws: Workspace,
  issue: IssueRec,
  at: number,
  announce: Announce<LinearChange> = SILENT,
): void {
  const before = issueFields(issue);
  issue.archivedAt = at;
  issue.updatedAt = Math.max(issue.updatedAt, at);
  sortIssues(ws);
  announce({ type: 'Issue', action: 'update', issue, at, updatedFrom: updatedFrom(before, issue) });
}

/** Deletes `issue` from the workspace at `at`: an Issue remove. */
export function deleteIssue(
  ws: Workspace,
  issue: IssueRec,
  at: number = issue.updatedAt,
  announce: Announce<LinearChange> = SILENT,
): void {
  ws.issues = ws.issues.filter((i) => i !== issue);
  ws.issueById.delete(issue.id);
  announce({ type: 'Issue', action: 'remove', issue, at });
}

/**
 * Deletes comment `comment` of `issue` at `at` (Linear's `commentDelete(id)`, which answers a
 * `DeletePayload`): it leaves every read, and `ws.deletedComments` keeps it for a ground truth; a
 * Comment remove. The issue's `updatedAt` is left where it was: no Linear document says a comment's
 * deletion moves it, and leaving it is the harder case for a reader (nothing on the issue shows it).
 */
export function deleteComment(
  ws: Workspace,
  issue: IssueRec,
  comment: CommentRec,
  at: number,
  announce: Announce<LinearChange> = SILENT,
): void {
  issue.comments = issue.comments.filter((c) => c !== comment);
  ws.deletedComments.push({ id: comment.id, issueId: issue.id, deletedAt: at });
  announce({ type: 'Comment', action: 'remove', issue, comment, at });
}

/**
 * Edits comment `comment` of `issue` at `at` (Linear's `commentUpdate`): a new body, its
 * `updatedAt` moved to `at`; a Comment update. The issue's `updatedAt` stays, as for a deletion
 * (`deleteComment`): only the comment's own time shows the edit.
 */
export function editComment(
  issue: IssueRec,
  comment: CommentRec,
  at: number,
  announce: Announce<LinearChange> = SILENT,
): void {
  comment.body = `${comment.body} (edited)`;
  comment.updatedAt = Math.max(comment.updatedAt, at);
  announce({ type: 'Comment', action: 'update', issue, comment, at });
}

/** Edits `count` issues still listed, drawn from `rng`, at `at`. */
export function churnIssues(
  ws: Workspace,
  rng: Rng,
  count: number,
  at: number,
  announce: Announce<LinearChange> = SILENT,
): string[] {
  const listed = ws.issues.filter((i) => !i.archivedAt);
  const picked = rng.sample(listed, Math.min(count, listed.length));
  for (const issue of picked) editIssue(ws, rng, issue, at, announce);
  return picked.map((i) => i.id);
}
