/**
 * The issues the chaos webhook producer's deliveries name, drawn from the run's emulator for each
 * of the integration's sources: for Linear and Jira, issues the emulator lists before the faults
 * (its GraphQL `issues` of each team, its JQL search of each project, asked with the integration's
 * own credential on 127.0.0.1); for GitHub, a number of one of its repositories, as a GitHub
 * `issues` delivery names its repository and the run reads that. An issue the emulator's edits
 * delete later stays named: the provider sent an edit just before the deletion.
 */
import { SyncRelayError } from '../errors.js';
import type { Rng } from './random.js';
import type { ChaosTarget } from './targets/index.js';
import type { WebhookIssue } from './webhookDeliveries.js';

/** Issues listed per source (the most recently updated first). */
const ISSUES_PER_SOURCE = 50;
const LIST_TIMEOUT_MS = 15_000;
/** GitHub issue numbers are drawn from 1 to this. */
const GITHUB_MAX_NUMBER = 400;

export interface IssueCatalog {
  /** A source drawn from the integration's, then an issue of it. */
  pick(rng: Rng): WebhookIssue;
}

type Integration = ChaosTarget['integration'];

/** Lists each source's issues from `target`'s emulator (GitHub: none listed, numbers drawn). */
export async function issueCatalog(target: Pick<ChaosTarget, 'provider' | 'integration'>): Promise<IssueCatalog> {
  const { sources } = target.integration;
  if (target.provider === 'github') return { pick: (rng) => githubIssue(rng.pick(sources), rng) };
  const list = target.provider === 'linear' ? linearIssues : jiraIssues;
  const bySource = new Map<string, WebhookIssue[]>();
  for (const source of sources) {
    const issues = await list(target.integration, source);
    if (issues.length === 0) {
      throw new SyncRelayError('chaos_webhook_issues', `the ${target.provider} emulator lists no issue of ${source}`);
    }
    bySource.set(source, issues);
  }
  return { pick: (rng) => rng.pick(bySource.get(rng.pick(sources))!) };
}

function githubIssue(source: string, rng: Rng): WebhookIssue {
  const number = rng.int(1, GITHUB_MAX_NUMBER);
  return { source, sourceId: null, id: String(number), key: String(number), number };
}

async function askJson(url: string, init: RequestInit, what: string): Promise<unknown> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(LIST_TIMEOUT_MS) });
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
    return await res.json();
  } catch (err) {
    throw new SyncRelayError('chaos_webhook_issues', `listing ${what} for the webhook producer failed`, { cause: err });
  }
}

interface LinearIssueNode {
  id: string;
  identifier: string;
  number: number;
  team: { id: string; key: string };
}

const LINEAR_ISSUES = `query ChaosWebhookIssues($filter: IssueFilter!, $first: Int!) {
  issues(filter: $filter, orderBy: updatedAt, first: $first) { nodes { id identifier number team { id key } } }
}`;

async function linearIssues(i: Integration, team: string): Promise<WebhookIssue[]> {
  const { apiUrl } = i.config as { apiUrl: string };
  const variables = { filter: { team: { key: { eq: team } } }, first: ISSUES_PER_SOURCE };
  const answer = (await askJson(
    apiUrl,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: i.credential },
      body: JSON.stringify({ query: LINEAR_ISSUES, variables }),
    },
    `the Linear team ${team}'s issues`,
  )) as { data?: { issues?: { nodes?: LinearIssueNode[] } } };
  return (answer.data?.issues?.nodes ?? []).map((n) => ({
    source: n.team.key,
    sourceId: n.team.id,
    id: n.id,
    key: n.identifier,
    number: n.number,
  }));
}

interface JiraIssueNode {
  id: string;
  key: string;
  fields: { project: { id: string; key: string } };
}

/** As the Jira provider sends a credential: `email:token` as Basic, a bare token as Bearer. */
function jiraAuthorization(credential: string): string {
  return credential.includes(':')
    ? `Basic ${Buffer.from(credential, 'utf8').toString('base64')}`
    : `Bearer ${credential}`;
}

async function jiraIssues(i: Integration, project: string): Promise<WebhookIssue[]> {
  const { siteUrl } = i.config as { siteUrl: string };
  const query = new URLSearchParams({
    jql: `project = "${project}" ORDER BY updated DESC`,
    fields: 'project',
    maxResults: String(ISSUES_PER_SOURCE),
  });
  const answer = (await askJson(
    `${siteUrl}/rest/api/3/search/jql?${query.toString()}`,
    { headers: { accept: 'application/json', authorization: jiraAuthorization(i.credential) } },
    `the Jira project ${project}'s issues`,
  )) as { issues?: JiraIssueNode[] };
  return (answer.issues ?? []).map((n) => ({
    source: n.fields.project.key,
    sourceId: n.fields.project.id,
    id: n.id,
    key: n.key,
    number: Number(n.key.split('-').at(-1)),
  }));
}
