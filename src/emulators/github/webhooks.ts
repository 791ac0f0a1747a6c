/**
 * The webhook deliveries of the organisation's edits, as an organisation webhook sends them
 * (docs.github.com/webhooks/webhook-events-and-payloads): the event in `X-GitHub-Event`
 * (`issues`, `issue_comment`, `pull_request`, `pull_request_review`), a GUID in
 * `X-GitHub-Delivery` (kept by a redelivery), `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the
 * raw body>` (docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries), and a body of
 * `action`, the object (`issue`, `comment` with its `issue`, `pull_request`, `review` with its
 * `pull_request`), `repository`, `organization`, `sender` (and `installation` with an App) — the
 * objects in the REST shapes the emulator serves (renderItems.ts, renderRepo.ts).
 */
import { randomUUID } from 'node:crypto';
import { hashHex, nodeId } from '../core/random.js';
import { hmacHex, type OutgoingDelivery } from '../core/webhooks.js';
import type { CommentRecord, ItemRecord, OrgData, RepoRecord, ReviewRecord, UserRecord } from './model.js';
import { renderComment, renderIssue, renderPull, renderReview } from './renderItems.js';
import { renderRepository, renderUser, type RenderContext } from './renderRepo.js';

/** One change the emulator made, as the webhook event and action that report it. */
export type GithubChange =
  | { event: 'issues'; action: 'opened' | 'edited' | 'closed' | 'deleted'; item: ItemRecord }
  | { event: 'pull_request'; action: 'opened' | 'edited' | 'closed'; item: ItemRecord }
  | { event: 'issue_comment'; action: 'created' | 'edited' | 'deleted'; comment: CommentRecord }
  | { event: 'pull_request_review'; action: 'submitted'; review: ReviewRecord };

/** What a delivery is rendered with besides the change: the URLs, the App's installation. */
export interface GithubHookContext {
  render: RenderContext;
  /** With an App: the installation's id, sent as `installation`. */
  installationId: number | null;
}

/** The organisation as webhook payloads carry it (`organization-simple`). */
function organization(ctx: RenderContext, data: OrgData): Record<string, unknown> {
  const login = data.org.login;
  const url = `${ctx.api}/orgs/${login}`;
  return {
    login,
    id: data.org.id,
    node_id: nodeId('Organization', data.org.id),
    url,
    repos_url: `${url}/repos`,
    events_url: `${url}/events`,
    hooks_url: `${url}/hooks`,
    issues_url: `${url}/issues`,
    members_url: `${url}/members{/member}`,
    public_members_url: `${url}/public_members{/member}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${data.org.id}?v=4`,
    description: null,
  };
}

/** An issue as webhooks carry it: the REST shape, with `draft` on issues too. */
function hookIssue(ctx: RenderContext, item: ItemRecord): Record<string, unknown> {
  return { draft: false, ...renderIssue(ctx, item) };
}

/** The object part of the payload, the repository it is in and who made the change. */
function subject(ctx: RenderContext, change: GithubChange): { body: object; repo: RepoRecord; sender: UserRecord } {
  switch (change.event) {
    case 'issues': {
      const { item } = change;
      const sender = change.action === 'closed' ? (item.closedBy ?? item.author) : item.author;
      const changes = change.action === 'edited' ? { changes: {} } : {};
      return { body: { ...changes, issue: hookIssue(ctx, item) }, repo: item.repo, sender };
    }
    case 'pull_request': {
      const { item } = change;
      const sender = change.action === 'closed' ? (item.closedBy ?? item.author) : item.author;
      const changes = change.action === 'edited' ? { changes: {} } : {};
      const pull = renderPull(ctx, item, item.pull!);
      return { body: { ...changes, number: item.number, pull_request: pull }, repo: item.repo, sender };
    }
    case 'issue_comment': {
      const { comment } = change;
      const changes = change.action === 'edited' ? { changes: { body: { from: comment.body } } } : {};
      const body = { ...changes, issue: hookIssue(ctx, comment.item), comment: renderComment(ctx, comment) };
      return { body, repo: comment.item.repo, sender: comment.author };
    }
    case 'pull_request_review': {
      const { review } = change;
      const body = { review: renderReview(ctx, review), pull_request: renderPull(ctx, review.item, review.item.pull!) };
      return { body, repo: review.item.repo, sender: review.author };
    }
  }
}

/** The payload of `change`: `action`, its objects, `repository`, `organization`, `sender`. */
export function githubPayload(hook: GithubHookContext, change: GithubChange): Record<string, unknown> {
  const ctx = hook.render;
  const { body, repo, sender } = subject(ctx, change);
  return {
    action: change.action,
    ...body,
    repository: { ...renderRepository(ctx, repo), custom_properties: {} },
    organization: organization(ctx, ctx.data),
    sender: renderUser(ctx, sender),
    ...(hook.installationId === null
      ? {}
      : { installation: { id: hook.installationId, node_id: nodeId('Installation', hook.installationId) } }),
  };
}

/** The delivery of `change`, signed with `secret`. */
export function githubDelivery(hook: GithubHookContext, change: GithubChange, secret: string): OutgoingDelivery {
  const body = JSON.stringify(githubPayload(hook, change));
  const id = randomUUID();
  return {
    id,
    body,
    headers: {
      'Content-Type': 'application/json',
      'User-Agent': `GitHub-Hookshot/${hashHex(`${hook.render.data.seed}:hookshot`, 7)}`,
      'X-GitHub-Event': change.event,
      'X-GitHub-Delivery': id,
      'X-Hub-Signature-256': `sha256=${hmacHex(secret, body)}`,
    },
  };
}
