/**
 * The webhook deliveries of the site's edits, as a Jira Cloud admin webhook with a secret sends
 * them (developer.atlassian.com/cloud/jira/platform/webhooks/, "Secure admin webhooks"): headers
 * `X-Atlassian-Webhook-Identifier` (unique per delivery, kept by its retries),
 * `X-Atlassian-Webhook-Retry` (on a retry: how many so far), `X-Atlassian-Webhook-Flow: Primary`,
 * `X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body>`; a body of `timestamp`,
 * `webhookEvent`, `issue_event_type_name` (issue events), `user` (who made the change), `issue`
 * (the REST v3 issue shape the emulator serves, render.ts), and `changelog` (an update's change
 * items) or `comment`. Changes made by churn (churn.ts) are found after each of its edits from the
 * kind it counted; deletions from wherever they come (deletions.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Announce, OutgoingDelivery } from '../core/webhooks.js';
import { hmacHex } from '../core/webhooks.js';
import { CHURN_KINDS, type ChurnKind, type JiraChurn } from './churn.js';
import { deletedComments } from './commentDeletions.js';
import { findIssue } from './deletions.js';
import type { CommentRec, HistoryRec, IssueRec, SiteData } from './model.js';
import {
  comment as renderComment,
  history as renderHistory,
  issue as renderIssue,
  userById,
  type Site,
} from './render.js';
import { SPRINT_FIELD } from './time.js';

/** `issue_event_type_name` of a `jira:issue_updated`: what kind of update it was. */
export type IssueEventTypeName = 'issue_updated' | 'issue_generic' | 'issue_assigned';

/** One change the emulator made, as the webhook event that reports it; `user` is who made it (account id). */
export type JiraChange =
  | { event: 'jira:issue_created' | 'jira:issue_deleted'; issue: IssueRec; user: string; at: number }
  | {
      event: 'jira:issue_updated';
      issue: IssueRec;
      user: string;
      at: number;
      changelog: HistoryRec;
      typeName: IssueEventTypeName;
    }
  | {
      event: 'comment_created' | 'comment_updated' | 'comment_deleted';
      issue: IssueRec;
      comment: CommentRec;
      at: number;
    };

const TYPE_NAMES: Readonly<Record<string, IssueEventTypeName>> = {
  status: 'issue_generic',
  resolution: 'issue_generic',
  assignee: 'issue_assigned',
};

/** The `jira:issue_updated` of the changelog entry `h` of `issue`. */
export function issueUpdated(issue: IssueRec, h: HistoryRec): JiraChange {
  const typeName = TYPE_NAMES[h.items[0]?.field ?? ''] ?? 'issue_updated';
  return { event: 'jira:issue_updated', issue, user: h.author, at: h.created, changelog: h, typeName };
}

/** The payload of `change`. */
export function jiraPayload(site: Site, change: JiraChange): Record<string, unknown> {
  const { expand: _expand, ...issue } = renderIssue(site, change.issue, () => true, false, SPRINT_FIELD);
  const user = userById(site, 'comment' in change ? change.comment.author : change.user);
  const base = { timestamp: change.at, webhookEvent: change.event, matchedWebhookIds: [1] };
  switch (change.event) {
    case 'jira:issue_created':
      return { ...base, issue_event_type_name: 'issue_created', user, issue };
    case 'jira:issue_deleted':
      return { ...base, user, issue };
    case 'jira:issue_updated': {
      const { id, items } = renderHistory(site, change.changelog);
      return { ...base, issue_event_type_name: change.typeName, user, issue, changelog: { id, items } };
    }
    case 'comment_created':
    case 'comment_updated':
    case 'comment_deleted':
      return { ...base, user, comment: renderComment(site, change.issue, change.comment), issue };
  }
}

/** The delivery of `change`, signed with `secret`. */
export function jiraDelivery(site: Site, change: JiraChange, secret: string): OutgoingDelivery {
  const body = JSON.stringify(jiraPayload(site, change));
  const id = randomUUID();
  return {
    id,
    body,
    headers: {
      'Content-Type': 'application/json',
      'X-Atlassian-Webhook-Identifier': id,
      'X-Atlassian-Webhook-Flow': 'Primary',
      'X-Hub-Signature': `sha256=${hmacHex(secret, body)}`,
    },
  };
}

/** What a retry of a delivery adds: how many retries so far. */
export function jiraRetryHeaders(n: number): Record<string, string> {
  return { 'X-Atlassian-Webhook-Retry': String(n) };
}

/** The comment a `comment-edit` changed: the latest updated, an edited one first among equals. */
function editedComment(issue: IssueRec): CommentRec | undefined {
  let best: CommentRec | undefined;
  for (const c of issue.comments) {
    const later = !best || c.updated > best.updated;
    const tie = best && c.updated === best.updated && c.text.endsWith('(edited)');
    if (later || tie) best = c;
  }
  return best;
}

/** The change a churn edit of `kind` made to `issue` (of site `data`). */
function churnChange(
  kind: Exclude<ChurnKind, 'delete'>,
  issue: IssueRec,
  at: number,
  data: SiteData,
): JiraChange | null {
  if (kind === 'comment-delete') {
    const gone = deletedComments(data).at(-1);
    return gone ? { event: 'comment_deleted', issue, comment: gone.comment, at } : null;
  }
  if (kind === 'issue') return { event: 'jira:issue_created', issue, user: issue.reporter, at };
  if (kind === 'comment') {
    const comment = issue.comments.at(-1);
    return comment ? { event: 'comment_created', issue, comment, at } : null;
  }
  if (kind === 'comment-edit') {
    const comment = editedComment(issue);
    return comment ? { event: 'comment_updated', issue, comment, at } : null;
  }
  const h = issue.histories.at(-1);
  return h ? issueUpdated(issue, h) : null;
}

/**
 * Announces each edit `churn` makes from now on (a deletion is announced where it happens,
 * deletions.ts): the kind it counted tells what changed, the key it returns which issue.
 */
export function announceChurn(churn: JiraChurn, data: SiteData, announce: Announce<JiraChange>): void {
  const edit = churn.edit.bind(churn);
  churn.edit = (now: number) => {
    const before = { ...churn.stats.byKind };
    const key = edit(now);
    const kind = CHURN_KINDS.find((k) => churn.stats.byKind[k] !== before[k]);
    const issue = key === null ? undefined : findIssue(data, key);
    const change = issue && kind && kind !== 'delete' ? churnChange(kind, issue, now, data) : null;
    if (change) announce(change);
    return key;
  };
}
