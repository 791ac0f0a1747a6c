/**
 * The webhook deliveries of the workspace's edits, as Linear sends them
 * (linear.app/developers/webhooks): headers `Linear-Delivery` (a UUID, kept by a redelivery),
 * `Linear-Event` (the entity type), `Linear-Signature` (hex HMAC-SHA256 of the raw body, no
 * prefix), and a body of `action` (`create`, `update`, `remove`), `type` (`Issue`, `Comment`),
 * `data` (the entity, with ids beside the objects they name), `updatedFrom` (an update's previous
 * values of the fields it changed), `url`, `createdAt`, `organizationId`, `webhookTimestamp` (the
 * emulator clock's ms when it is sent: receivers refuse one older than a minute) and `webhookId`.
 */
import { randomUUID } from 'node:crypto';
import { hmacHex, type OutgoingDelivery } from '../core/webhooks.js';
import { uuidFor, type CommentRec, type IssueRec, type Workspace } from './generate.js';

/** One change the emulator made, as the webhook's action and entity type. */
export type LinearChange =
  | { type: 'Issue'; action: 'create' | 'remove'; issue: IssueRec; at: number }
  | { type: 'Issue'; action: 'update'; issue: IssueRec; at: number; updatedFrom: Record<string, unknown> }
  | { type: 'Comment'; action: 'create' | 'update' | 'remove'; issue: IssueRec; comment: CommentRec; at: number };

/** What a delivery is rendered with besides the change. */
export interface LinearHookContext {
  ws: Workspace;
  /** `http://…/_web/<urlKey>`: where issue URLs point. */
  baseUrl: () => string;
  /** The emulator clock's now, epoch ms. */
  now: () => number;
}

const PRIORITY_LABELS = ['No priority', 'Urgent', 'High', 'Medium', 'Low'];

function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/** The fields an update can change, as the webhook writes them (what `updatedFrom` compares). */
export function issueFields(issue: IssueRec): Record<string, unknown> {
  return {
    updatedAt: iso(issue.updatedAt),
    stateId: issue.stateId,
    assigneeId: issue.assigneeId,
    labelIds: [...issue.labelIds],
    startedAt: iso(issue.startedAt),
    completedAt: iso(issue.completedAt),
    canceledAt: iso(issue.canceledAt),
    archivedAt: iso(issue.archivedAt),
  };
}

/** The previous values (from `before`, an `issueFields`) of the fields that changed since. */
export function updatedFrom(before: Record<string, unknown>, issue: IssueRec): Record<string, unknown> {
  const after = issueFields(issue);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(before)) if (JSON.stringify(v) !== JSON.stringify(after[k])) out[k] = v;
  return out;
}

function identifier(ws: Workspace, issue: IssueRec): string {
  return `${ws.teams.find((t) => t.id === issue.teamId)?.key ?? 'ISS'}-${issue.number}`;
}

function issueUrl(hook: LinearHookContext, issue: IssueRec): string {
  return `${hook.baseUrl()}/issue/${identifier(hook.ws, issue)}`;
}

/** An Issue's `data`. */
export function issueData(hook: LinearHookContext, issue: IssueRec): Record<string, unknown> {
  const { ws } = hook;
  const team = ws.teams.find((t) => t.id === issue.teamId)!;
  const state = ws.states.find((s) => s.id === issue.stateId);
  const assignee = ws.users.find((u) => u.id === issue.assigneeId);
  const labels = ws.labels.filter((l) => issue.labelIds.includes(l.id));
  return {
    id: issue.id,
    createdAt: iso(issue.createdAt),
    ...issueFields(issue),
    number: issue.number,
    identifier: identifier(ws, issue),
    title: issue.title,
    priority: issue.priority,
    priorityLabel: PRIORITY_LABELS[issue.priority] ?? 'No priority',
    estimate: null,
    sortOrder: issue.number,
    teamId: team.id,
    team: { id: team.id, key: team.key, name: team.name },
    state: state ? { id: state.id, name: state.name, type: state.type, color: state.color } : null,
    assignee: assignee ? { id: assignee.id, name: assignee.name } : null,
    creatorId: issue.creatorId,
    parentId: issue.parentId,
    projectId: issue.projectId,
    cycleId: issue.cycleId,
    labels: labels.map((l) => ({ id: l.id, name: l.name, color: l.color })),
    subscriberIds: [issue.creatorId],
    url: issueUrl(hook, issue),
  };
}

function commentData(hook: LinearHookContext, issue: IssueRec, c: CommentRec): Record<string, unknown> {
  return {
    id: c.id,
    createdAt: iso(c.createdAt),
    updatedAt: iso(c.updatedAt),
    body: c.body,
    issueId: issue.id,
    issue: { id: issue.id, title: issue.title, teamId: issue.teamId },
    userId: c.userId,
    url: `${issueUrl(hook, issue)}#comment-${c.id.slice(0, 8)}`,
  };
}

/** The payload of `change`, stamped with the emulator clock's now. */
export function linearPayload(hook: LinearHookContext, change: LinearChange): Record<string, unknown> {
  const data =
    change.type === 'Comment' ? commentData(hook, change.issue, change.comment) : issueData(hook, change.issue);
  return {
    action: change.action,
    type: change.type,
    data,
    ...(change.action === 'update' && change.type === 'Issue' ? { updatedFrom: change.updatedFrom } : {}),
    url: data.url,
    createdAt: iso(change.at),
    organizationId: uuidFor(hook.ws.seed, 'organization'),
    webhookTimestamp: hook.now(),
    webhookId: uuidFor(hook.ws.seed, 'webhook'),
  };
}

/** The delivery of `change`, signed with `secret`. */
export function linearDelivery(hook: LinearHookContext, change: LinearChange, secret: string): OutgoingDelivery {
  const body = JSON.stringify(linearPayload(hook, change));
  const id = randomUUID();
  return {
    id,
    body,
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'User-Agent': 'Linear-Webhook',
      'Linear-Delivery': id,
      'Linear-Event': change.type,
      'Linear-Signature': hmacHex(secret, body),
    },
  };
}
