/**
 * Edits while a reader reads, as on a Jira site people keep working on: at `editsPerSecond` of the
 * emulator's clock, before each authenticated request is served, the edits due since the previous
 * request (at most MAX_BURST at once; the rest dropped) are made at the clock's now, drawn from the
 * seed: a status transition (resolved when it reaches Done), a new comment, an edited comment, a
 * label change, an assignee change, a summary change (each of those four in the changelog, as Jira
 * records them) or a new issue. Every edit moves the issue's `updated`, so search sees it only
 * after its lag (searchIndex.ts); a direct read sees it at once. With a delete share set
 * (`setDeleteShare`), that share of the edits deletes the issue drawn instead, as
 * `DELETE /rest/api/3/issue/{issueIdOrKey}` does (deletions.ts), never more than MAX_DELETED_SHARE
 * of the site's issues; the ids deleted are kept. With a comment-delete share set
 * (`setCommentDeleteShare`), that share of the edits deletes a comment of the issue drawn instead,
 * as `DELETE /rest/api/3/issue/{issueIdOrKey}/comment/{id}` does (commentDeletions.ts: the issue's
 * `updated` does not move).
 */
import { ValidationError } from '../../errors.js';
import { Rng } from '../core/random.js';
import { addComment, addIssue, history, labelChange, resolutionItem, transition } from './generate.js';
import { deleteComment } from './commentDeletions.js';
import { deleteIssue } from './deletions.js';
import { compareIssues, type IssueRec, type SiteData } from './model.js';
import type { JiraScale } from './options.js';

/** Edits made at once at most, however long the emulator sat idle. */
export const MAX_CHURN_BURST = 5;

/** Most issues churn deletes, as a share of those the site holds when it deletes one. */
export const MAX_DELETED_SHARE = 0.2;

export const CHURN_KINDS = [
  'transition',
  'comment',
  'comment-edit',
  'label',
  'assignee',
  'summary',
  'issue',
  'delete',
  'comment-delete',
] as const;
export type ChurnKind = (typeof CHURN_KINDS)[number];

/** What churn did so far. */
export interface JiraChurnStats {
  edits: number;
  byKind: Record<ChurnKind, number>;
}

const NEXT: Readonly<Record<string, string>> = { '10000': '3', '3': '10001', '10001': '10002' };
const LABELS = ['backend', 'frontend', 'bug-bash', 'tech-debt', 'customer', 'perf'];

/** A share from 0 to 1, else a ValidationError naming `field`. */
function checkShare(field: string, share: number): number {
  if (!Number.isFinite(share) || share < 0 || share > 1) {
    throw new ValidationError(field, `expected a share from 0 to 1, got ${share}`);
  }
  return share;
}

/** The `churn` option: edits per second, 0 or more. */
export function checkChurnRate(rate: number): number {
  if (!Number.isFinite(rate) || rate < 0) {
    throw new ValidationError('churn', `expected edits per second ≥ 0, got ${rate}`);
  }
  return rate;
}

export class JiraChurn {
  private readonly rng: Rng;
  private lastAt: number | null = null;
  private owed = 0;
  private created = 0;
  private deleteShare = 0;
  private commentDeleteShare = 0;
  /** The ids of the issues churn deleted, in order. */
  readonly deleted: string[] = [];
  readonly stats: JiraChurnStats = {
    edits: 0,
    byKind: Object.fromEntries(CHURN_KINDS.map((k) => [k, 0])) as Record<ChurnKind, number>,
  };

  constructor(
    private readonly data: SiteData,
    private readonly scale: JiraScale,
    private readonly seed: number,
    private rate: number,
  ) {
    checkChurnRate(rate);
    this.rng = new Rng(seed, 'churn');
  }

  /** Edits per second from now on (0: none; nothing owed carries over). */
  setRate(rate: number): void {
    this.rate = checkChurnRate(rate);
    this.owed = 0;
    this.lastAt = null;
  }

  /** The share of edits that delete their issue from now on (0, the default: none). */
  setDeleteShare(share: number): void {
    this.deleteShare = checkShare('deleteShare', share);
  }

  /** The share of edits that delete a comment of their issue from now on (0, the default: none). */
  setCommentDeleteShare(share: number): void {
    this.commentDeleteShare = checkShare('commentDeleteShare', share);
  }

  /** Called before a request is served: makes the edits due by `now`. */
  before(now: number): void {
    if (this.rate <= 0) return;
    const gained = this.lastAt === null ? 0 : (this.rate * Math.max(0, now - this.lastAt)) / 1000;
    this.owed = Math.min(MAX_CHURN_BURST, this.owed + gained);
    this.lastAt = now;
    for (; this.owed >= 1; this.owed--) this.edit(now);
  }

  /** Makes one edit at `now`, as if it were due; returns the key of the issue edited or created. */
  edit(now: number): string | null {
    const issues = this.data.projects.flatMap((p) => p.issues);
    if (issues.length === 0) return null;
    const roll = this.rng.next();
    const issue = this.rng.pick(issues);
    if (this.deletes(issues.length)) return this.remove(issue);
    if (this.deletesComment(issue)) return this.removeComment(issue, now);
    const kind: Exclude<ChurnKind, 'delete' | 'comment-delete'> =
      roll < 0.05
        ? 'issue'
        : roll < 0.3 && NEXT[issue.statusId]
          ? 'transition'
          : roll < 0.55
            ? 'comment'
            : roll < 0.65 && issue.comments.length > 0
              ? 'comment-edit'
              : roll < 0.8
                ? 'label'
                : roll < 0.9
                  ? 'assignee'
                  : 'summary';
    const edited = kind === 'issue' ? this.newIssue(issue.projectKey, now) : issue;
    if (kind !== 'issue') this.change(kind, issue, now);
    this.stats.edits++;
    this.stats.byKind[kind]++;
    this.data.projects.find((p) => p.key === edited.projectKey)?.issues.sort(compareIssues);
    return edited.key;
  }

  /** Whether this edit deletes (drawn only with a delete share set, so the seed's edits are unchanged without). */
  private deletes(live: number): boolean {
    if (this.deleteShare <= 0 || this.deleted.length + 1 > MAX_DELETED_SHARE * (live + this.deleted.length))
      return false;
    return this.rng.next() < this.deleteShare;
  }

  private remove(issue: IssueRec): string {
    deleteIssue(this.data, issue.id);
    this.deleted.push(issue.id);
    this.stats.edits++;
    this.stats.byKind.delete++;
    return issue.key;
  }

  /** Whether this edit deletes a comment (drawn only with a comment-delete share set). */
  private deletesComment(issue: IssueRec): boolean {
    if (this.commentDeleteShare <= 0 || issue.comments.length === 0) return false;
    return this.rng.next() < this.commentDeleteShare;
  }

  private removeComment(issue: IssueRec, now: number): string {
    deleteComment(this.data, issue.id, this.rng.pick(issue.comments).id, now);
    this.stats.edits++;
    this.stats.byKind['comment-delete']++;
    return issue.key;
  }

  private change(kind: Exclude<ChurnKind, 'issue' | 'delete' | 'comment-delete'>, issue: IssueRec, now: number): void {
    const author = this.rng.pick(this.data.users).accountId;
    switch (kind) {
      case 'transition':
        transition(this.data, issue, NEXT[issue.statusId]!, now, author);
        if (issue.statusId === '10002') {
          issue.resolution = 'Done';
          issue.resolutiondate = now;
          issue.histories.at(-1)!.items.push(resolutionItem('Done'));
        }
        return;
      case 'comment':
        return addComment(this.data, issue, now, author, `edited while read ${this.stats.edits}`);
      case 'comment-edit': {
        const c = this.rng.pick(issue.comments);
        c.text = `${c.text} (edited)`;
        c.updated = Math.max(c.updated, now);
        issue.updated = Math.max(issue.updated, now);
        return;
      }
      case 'label':
        return labelChange(this.data, issue, now, author, this.rng.pick(LABELS));
      case 'assignee':
        return this.reassign(issue, now, author);
      case 'summary': {
        const before = issue.summary;
        issue.summary = `${before.replace(/ \(rev \d+\)$/, '')} (rev ${this.stats.edits})`;
        history(this.data, issue, now, author).items.push({
          field: 'summary',
          from: null,
          fromString: before,
          to: null,
          toString: issue.summary,
        });
        return;
      }
    }
  }

  private reassign(issue: IssueRec, now: number, author: string): void {
    const from = this.data.users.find((u) => u.accountId === issue.assignee) ?? null;
    const others = this.data.users.filter((u) => u !== from);
    const to = others.length > 0 ? this.rng.pick(others) : null;
    issue.assignee = to?.accountId ?? null;
    history(this.data, issue, now, author).items.push({
      field: 'assignee',
      from: from?.accountId ?? null,
      fromString: from?.displayName ?? null,
      to: to?.accountId ?? null,
      toString: to?.displayName ?? null,
    });
  }

  private newIssue(projectKey: string, now: number): IssueRec {
    const project = this.data.projects.find((p) => p.key === projectKey)!;
    const rng = new Rng(this.seed, `churn-issue:${this.created++}`);
    const issue = addIssue(this.data, project, rng, { ...this.scale, days: 0 }, now);
    issue.updated = now;
    return issue;
  }
}
