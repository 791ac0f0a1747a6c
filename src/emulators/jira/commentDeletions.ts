/**
 * Deleting a comment, as Jira Cloud does it (`DELETE /rest/api/3/issue/{issueIdOrKey}/comment/{id}`):
 * for good. The comment leaves its issue's `comments` (what the issue's comment list, the search's
 * embedded comments and `comment/list` read), so reads of it answer 404 and `comment/list` leaves
 * it out. Its issue's `updated` does not move: no Jira document says a comment's deletion moves it
 * (adding or editing one does), so the emulator takes the harder case, in which no search by
 * `updated` ever sees the deletion — only a verify does. Every comment deleted is kept, with its
 * issue's id, per site (`deletedComments`), for the chaos ground truth.
 */
import { ValidationError } from '../../errors.js';
import { findIssue } from './deletions.js';
import type { CommentRec, IssueRec, SiteData } from './model.js';

/** A comment deleted from its issue, when. */
export interface DeletedComment {
  issueId: string;
  comment: CommentRec;
  at: number;
}

/** Each site's deleted comments (keyed by the site's data, so two emulators never share a list). */
const deletedBySite = new WeakMap<SiteData, DeletedComment[]>();

/** The comments deleted from `data` so far, oldest first. */
export function deletedComments(data: SiteData): readonly DeletedComment[] {
  return deletedBySite.get(data) ?? [];
}

/** Comment `commentId` of `issue`, or undefined. */
export function findComment(issue: IssueRec, commentId: string): CommentRec | undefined {
  return issue.comments.find((c) => c.id === commentId);
}

/**
 * Removes comment `commentId` from the issue with id or key `issueIdOrKey` at `at` and returns it;
 * throws when there is no such issue or comment.
 */
export function deleteComment(data: SiteData, issueIdOrKey: string, commentId: string, at: number): DeletedComment {
  const issue = findIssue(data, issueIdOrKey);
  if (!issue) throw new ValidationError('issueIdOrKey', `no Jira issue ${issueIdOrKey}`);
  const comment = findComment(issue, commentId);
  if (!comment) throw new ValidationError('commentId', `no comment ${commentId} on Jira issue ${issueIdOrKey}`);
  issue.comments.splice(issue.comments.indexOf(comment), 1);
  const deleted = { issueId: issue.id, comment, at };
  const list = deletedBySite.get(data) ?? [];
  list.push(deleted);
  deletedBySite.set(data, list);
  return deleted;
}
