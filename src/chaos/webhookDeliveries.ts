/**
 * What the chaos webhook producer posts, per provider: a delivery's headers and body for an issue
 * of a source, signed as the provider signs, and the same delivery sent again as the provider
 * resends it. The shapes are those the API reads (src/planning/githubWebhooks.ts,
 * linearWebhooks.ts, jiraWebhooks.ts):
 *
 * - GitHub: `issues` / `edited`, `X-Hub-Signature-256: sha256=<hex>`, `X-GitHub-Delivery`; a
 *   redelivery is the same id, body and signature.
 * - Linear: `Issue` / `update` naming the issue and its team, `Linear-Signature: <hex>`,
 *   `Linear-Delivery`, `Linear-Event`, `webhookTimestamp` (ms, when it is sent): a retry keeps the
 *   id and is stamped and signed again when it is sent (the API refuses a stamp a minute off).
 * - Jira: `jira:issue_updated` naming the issue and its project, `X-Hub-Signature: sha256=<hex>`,
 *   `X-Atlassian-Webhook-Identifier`; a retry is the same id, body and signature with
 *   `X-Atlassian-Webhook-Retry: <n>`.
 */
import { randomUUID } from 'node:crypto';
import { signWebhookBody } from '../secrets/webhookSecrets.js';
import type { ChaosProvider } from './targets/index.js';

/** An issue of the run's emulator a delivery names. */
export interface WebhookIssue {
  /** The integration's source key: `owner/name`, a Linear team key, a Jira project key. */
  source: string;
  /** The source's own id (a Linear team's id), or null. */
  sourceId: string | null;
  /** The issue's id (GitHub: its number). */
  id: string;
  /** The issue's key (`ENG-12`; GitHub: its number). */
  key: string;
  number: number;
}

/** One post: headers (lower-case names) and the raw body. */
export interface Delivery {
  id: string;
  headers: Record<string, string>;
  body: string;
}

export interface DeliveryBuilder {
  provider: ChaosProvider;
  /** A new delivery about `issue`, sent at `now` (epoch ms). */
  build(issue: WebhookIssue, now: number): Delivery;
  /** `first` sent again, the `retry`-th time (1 for the first), at `now`, as the provider resends. */
  resend(first: Delivery, retry: number, now: number): Delivery;
}

const JSON_TYPE = { 'content-type': 'application/json' };

function githubBuilder(secret: string): DeliveryBuilder {
  return {
    provider: 'github',
    build(issue, now) {
      const [owner, name] = issue.source.split('/');
      const body = JSON.stringify({
        action: 'edited',
        issue: { number: issue.number, title: `Issue ${issue.number}`, state: 'open', updated_at: iso(now) },
        repository: { name, full_name: issue.source, private: false, owner: { login: owner } },
        sender: { login: 'chaos', type: 'User' },
      });
      const id = randomUUID();
      const headers = {
        ...JSON_TYPE,
        'user-agent': 'GitHub-Hookshot/chaos',
        'x-github-event': 'issues',
        'x-github-delivery': id,
        'x-hub-signature-256': signWebhookBody(body, secret),
      };
      return { id, headers, body };
    },
    resend: (first) => first,
  };
}

function linearBody(issue: WebhookIssue, now: number): Record<string, unknown> {
  const team = { id: issue.sourceId, key: issue.source, name: `${issue.source} team` };
  return {
    action: 'update',
    type: 'Issue',
    data: {
      id: issue.id,
      identifier: issue.key,
      number: issue.number,
      title: `Issue ${issue.key}`,
      updatedAt: iso(now),
      teamId: issue.sourceId,
      team,
    },
    updatedFrom: { updatedAt: iso(now - 60_000) },
    url: `https://linear.app/chaos/issue/${issue.key}`,
    createdAt: iso(now),
    webhookTimestamp: now,
  };
}

function linearSigned(id: string, payload: Record<string, unknown>, secret: string): Delivery {
  const body = JSON.stringify(payload);
  const headers = {
    ...JSON_TYPE,
    'user-agent': 'Linear-Webhook',
    'linear-delivery': id,
    'linear-event': 'Issue',
    'linear-signature': signWebhookBody(body, secret, ''),
  };
  return { id, headers, body };
}

function linearBuilder(secret: string): DeliveryBuilder {
  return {
    provider: 'linear',
    build: (issue, now) => linearSigned(randomUUID(), linearBody(issue, now), secret),
    resend(first, _retry, now) {
      const payload = JSON.parse(first.body) as Record<string, unknown>;
      return linearSigned(first.id, { ...payload, webhookTimestamp: now }, secret);
    },
  };
}

function jiraBuilder(secret: string): DeliveryBuilder {
  return {
    provider: 'jira',
    build(issue, now) {
      const body = JSON.stringify({
        timestamp: now,
        webhookEvent: 'jira:issue_updated',
        issue_event_type_name: 'issue_updated',
        user: { accountId: 'chaos', displayName: 'chaos' },
        issue: {
          id: issue.id,
          key: issue.key,
          fields: {
            project: { id: issue.sourceId, key: issue.source },
            summary: `Issue ${issue.key}`,
            updated: iso(now),
          },
        },
        changelog: { id: String(now), items: [{ field: 'summary', fromString: null, toString: `Issue ${issue.key}` }] },
        matchedWebhookIds: [1],
      });
      const id = randomUUID();
      const headers = {
        ...JSON_TYPE,
        'x-atlassian-webhook-identifier': id,
        'x-atlassian-webhook-flow': 'Primary',
        'x-hub-signature': signWebhookBody(body, secret),
      };
      return { id, headers, body };
    },
    resend: (first, retry) => ({
      ...first,
      headers: { ...first.headers, 'x-atlassian-webhook-retry': String(retry) },
    }),
  };
}

const BUILDERS: Record<ChaosProvider, (secret: string) => DeliveryBuilder> = {
  github: githubBuilder,
  linear: linearBuilder,
  jira: jiraBuilder,
};

/** The delivery builder of `provider`, signing with `secret`. */
export function deliveryBuilder(provider: ChaosProvider, secret: string): DeliveryBuilder {
  return BUILDERS[provider](secret);
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
