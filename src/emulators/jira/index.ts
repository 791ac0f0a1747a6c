/**
 * A local Jira Cloud emulator (REST v3 and the Jira Software Agile API) for tests, demos and
 * benchmarks: a seeded site served in Jira's real shapes, `nextPageToken` search pagination, an
 * enforced quota and per-endpoint limits with Jira's rate-limit headers, injectable faults, data
 * that changes between runs, and Jira Cloud's hostile ways (docs/emulators.md): a search index
 * behind its writes, an assignable-user search that filters after paging and stops at 1,000 users,
 * a capped changelog in search results, team-managed boards with sprints. Not part of the engine:
 * only `emulate jira`, `demo --provider jira`, benchmarks and tests import it.
 */
import {
  emulatedIntegration,
  freshToken,
  localToken,
  prepareEmulator,
  serveEmulator,
  tally,
  type EmulatedIntegration,
  type EmulatorControls,
} from '../core/index.js';
import { JiraChurn, type JiraChurnStats } from './churn.js';
import { deleteComment, deletedComments, type DeletedComment } from './commentDeletions.js';
import { deleteIssue, watchDeletions } from './deletions.js';
import { JIRA_FAULTS, type FaultSpec } from './faults.js';
import { generateSite } from './generate.js';
import { EndpointLimiter, RateLimiter, routeName } from './limits.js';
import type { SiteData } from './model.js';
import { mutateSite, type MutationSummary } from './mutate.js';
import {
  resolveEndpointLimits,
  resolveFaults,
  resolveFlavor,
  resolveRateLimit,
  resolveSearchLag,
  SCALE_RULES,
  validateTimeZone,
  type JiraEmulatorOptions,
  type JiraFlavor,
  type JiraScale,
  type RateLimitSpec,
} from './options.js';
import { OAuthGrant } from './oauth.js';
import { SearchIndex } from './searchIndex.js';
import { createHandler, type RequestLogEntry } from './server.js';
import { SPRINT_FIELD } from './time.js';
import { WebhookOutlet, type WebhookSender, type WebhookTarget } from '../core/webhooks.js';
import { announceChurn, jiraDelivery, jiraRetryHeaders, type JiraChange } from './webhooks.js';

export type { MutationSummary } from './mutate.js';
export { jiraPayload, type JiraChange } from './webhooks.js';
export { CHURN_KINDS, MAX_CHURN_BURST, type ChurnKind, type JiraChurnStats } from './churn.js';
export type { RequestLogEntry } from './server.js';
export type { DeletedComment } from './commentDeletions.js';
export { COMMENT_LIST_MAX, COMMENT_LIST_PAGE } from './routesComments.js';
export { OAuthGrant, type JiraOAuthOptions, type JiraOAuthStats } from './oauth.js';
export * from './faults.js';
export * from './options.js';
export type * from './model.js';
export { EMBEDDED } from './render.js';
export { DEFAULT_ENDPOINT_LIMITS, type EndpointLimitSpec } from './limits.js';
export { reachableUsers, userPool, USER_SEARCH_CAP } from './users.js';
export { deleteSprint, deletedSprints, deletedUsers, deleteUser, setAssignable } from './referenceDeletions.js';

export interface JiraEmulatorStats {
  requests: number;
  byStatus: Record<string, number>;
  /** Requests per route (path without ids and query). */
  byRoute: Record<string, number>;
}

export interface JiraEmulator extends EmulatorControls<FaultSpec, MutationSummary> {
  /** `http://127.0.0.1:<port>`: the site URL (use as `config.siteUrl`). */
  url: string;
  /**
   * The credential: Cloud's `email:api_token` (basic auth); on the `datacenter` flavor the API
   * token alone, a personal access token (Bearer), which `username:apiToken` (basic) matches too.
   */
  token: string;
  flavor: JiraFlavor;
  /** The emulator user's Data Center user name (basic auth there is `username:apiToken`). */
  username: string;
  email: string;
  /** The API token alone (also accepted as a bearer token). */
  apiToken: string;
  /** Every request, oldest first (bounded by `logLimit`). */
  requestLog: RequestLogEntry[];
  data: SiteData;
  scale: JiraScale;
  rateLimit: RateLimitSpec;
  timeZone: string;
  /** How long a change takes to become visible to search. */
  searchLagMs: number;
  /** Whether every change made so far is visible to search at the clock's now. */
  searchSettled(): boolean;
  stats(): JiraEmulatorStats;
  /**
   * Edits per second from now on while requests come in (churn.ts; 0: none); `deleteShare` of them
   * delete their issue instead (default 0).
   */
  setChurn(editsPerSecond: number, deleteShare?: number): void;
  /** The ids of the issues churn deleted so far. */
  churnDeleted(): readonly string[];
  /** The share of churn's edits that delete a comment of their issue from now on (default 0). */
  setCommentDeleteShare(share: number): void;
  /**
   * Deletes comment `commentId` of the issue with this id or key, as Jira Cloud does
   * (commentDeletions.ts: its issue's `updated` does not move). Throws when there is no such comment.
   */
  deleteComment(issueIdOrKey: string, commentId: string): void;
  /** Every comment deleted so far (by churn, a test or the API), with its issue's id, oldest first. */
  deletedComments(): readonly DeletedComment[];
  /** Makes one churn edit at the clock's now; returns the key of the issue edited or created. */
  churnEdit(): string | null;
  /** What churn did so far. */
  churnStats(): JiraChurnStats;
  /**
   * Deletes the issue with this id or key for good, as Jira Cloud does (deletions.ts): search no
   * longer lists it and reads of it answer 404. Throws when there is no such issue.
   */
  deleteIssue(idOrKey: string): void;
  /**
   * Replaces the credential's quota from now on: a running window keeps its end and what it spent,
   * counted against the new limit; the next window is shaped by the new `windowSeconds`.
   */
  setRateLimit(spec: RateLimitSpec): void;
  /** Epoch ms the credential's running quota window ends; null when none runs (the next request opens one). */
  quotaWindowEnd(): number | null;
  /** The OAuth 2.0 grant (option `oauth`), null without it. */
  oauth: OAuthGrant | null;
  /** The sender of the webhook target the emulator is pointed at now; null when none. */
  readonly webhooks: WebhookSender | null;
  /**
   * Points every edit's webhook delivery at `target` from now on (null: none); a replaced sender
   * still sends what it holds.
   */
  setWebhookTarget(target: WebhookTarget | null): void;
}

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-';

/** A fresh Atlassian-style API token (a local emulator token, not a real one). */
export function freshJiraApiToken(): string {
  return freshToken('ATATT3x', ALPHABET, 41);
}

export async function startJiraEmulator(opts: JiraEmulatorOptions = {}): Promise<JiraEmulator> {
  const rules = { scales: SCALE_RULES, faults: JIRA_FAULTS };
  const { seed, clock, nowMs, logLimit, scale, faults } = prepareEmulator(opts, rules, resolveFaults(opts.faults));
  const rateLimit = resolveRateLimit(opts.rateLimit);
  const timeZone = validateTimeZone(opts.timeZone);
  const searchLagMs = resolveSearchLag(opts.searchLagMs);
  const endpoints = new EndpointLimiter(resolveEndpointLimits(opts.endpointLimits), clock);
  const data = generateSite(seed, opts.site ?? 'emulated', scale, nowMs);
  const flavor = resolveFlavor(opts.flavor);
  const viewer = {
    accountId: '712020:emulator-admin',
    key: 'JIRAUSER10000',
    name: 'admin',
    displayName: 'Site Admin',
    email: `admin@${data.site}.example`,
    timeZone,
  };
  data.users.unshift(viewer);
  const apiToken = localToken(opts.apiToken, 'apiToken', freshJiraApiToken);
  const requestLog: RequestLogEntry[] = [];
  const site = { url: '', data };
  const index = new SearchIndex(searchLagMs, data.projects);
  const churn = new JiraChurn(data, scale, seed, opts.churn ?? 0);
  const outlet = new WebhookOutlet<JiraChange>((change, secret) => jiraDelivery(site, change, secret), {
    seed,
    retryHeaders: jiraRetryHeaders,
  });
  outlet.setTarget(opts.webhooks ?? null);
  const announce = outlet.announce;
  announceChurn(churn, data, announce);
  watchDeletions(data, (issue) =>
    announce({ event: 'jira:issue_deleted', issue, user: viewer.accountId, at: clock.now().getTime() }),
  );
  const limiter = new RateLimiter(rateLimit, clock);
  const oauth = opts.oauth ? new OAuthGrant(opts.oauth === true ? {} : opts.oauth) : null;
  const { origin, controls } = await serveEmulator(
    createHandler({
      clock,
      site,
      email: viewer.email,
      apiToken,
      viewer,
      limiter,
      endpoints,
      index,
      faults,
      churn: (now) => churn.before(now),
      sprintField: SPRINT_FIELD,
      commentListPage: opts.commentListPage ?? null,
      oauth,
      log: requestLog,
      logLimit,
      flavor,
    }),
    opts,
    { name: 'Jira', faults, clock },
    (round, at) => mutateSite(data, scale, round, at, announce),
  );
  site.url = origin;
  return {
    url: site.url,
    // Data Center: the API token as a personal access token (Bearer); Cloud: `email:api_token` (basic).
    token: flavor === 'datacenter' ? apiToken : `${viewer.email}:${apiToken}`,
    flavor,
    username: viewer.name,
    email: viewer.email,
    apiToken,
    requestLog,
    data,
    scale,
    rateLimit,
    timeZone,
    searchLagMs,
    searchSettled: () => index.settled(data.projects, clock.now().getTime()),
    stats: () => statsOf(requestLog),
    setChurn: (rate, deleteShare = 0) => {
      churn.setDeleteShare(deleteShare);
      churn.setRate(rate);
    },
    churnDeleted: () => [...churn.deleted],
    setCommentDeleteShare: (share) => churn.setCommentDeleteShare(share),
    deleteComment: (issueIdOrKey, commentId) =>
      void deleteComment(data, issueIdOrKey, commentId, clock.now().getTime()),
    deletedComments: () => [...deletedComments(data)],
    churnEdit: () => churn.edit(clock.now().getTime()),
    churnStats: () => ({ edits: churn.stats.edits, byKind: { ...churn.stats.byKind } }),
    deleteIssue: (idOrKey) => void deleteIssue(data, idOrKey),
    setRateLimit: (spec) => void Object.assign(rateLimit, resolveRateLimit(spec)),
    quotaWindowEnd: () => limiter.windowEnd('credential'),
    oauth,
    get webhooks() {
      return outlet.sender;
    },
    setWebhookTarget: (target) => outlet.setTarget(target),
    ...controls,
    close: async () => {
      await outlet.close();
      await controls.close();
    },
  };
}

function statsOf(log: readonly RequestLogEntry[]): JiraEmulatorStats {
  const byStatus: Record<string, number> = {};
  const byRoute: Record<string, number> = {};
  for (const e of log) {
    tally(byStatus, String(e.status));
    tally(byRoute, routeName(e.method, e.path));
  }
  return { requests: log.length, byStatus, byRoute };
}

/** The datasets a demo integration enables (the work-item family is fetched in one unit per project). */
export const JIRA_DEMO_DATASETS = [
  'projects',
  'members',
  'sprints',
  'work-items',
  'work-item-comments',
  'work-item-history',
] as const;

/** The normalized tables a Jira sync writes, in the order a summary lists them. */
export const JIRA_TABLES = [
  'projects',
  'members',
  'sprints',
  'work_items',
  'work_item_comments',
  'work_item_events',
] as const;

/** What an integration pointed at this emulator needs (`engine.createIntegration` fields). */
export function jiraDemoIntegration(
  emu: JiraEmulator,
): EmulatedIntegration<'jira', { siteUrl: string; deployment?: 'datacenter' }> {
  const projects = emu.data.projects.map((p) => p.key);
  const config = { siteUrl: emu.url, ...(emu.flavor === 'datacenter' ? { deployment: 'datacenter' as const } : {}) };
  return emulatedIntegration('jira', config, emu.token, projects, JIRA_DEMO_DATASETS);
}

/** The config and credential of an integration that signs in to this emulator with OAuth 2.0 (option `oauth`). */
export function jiraOAuthIntegration(emu: JiraEmulator): { config: Record<string, string>; credential: string } {
  const grant = emu.oauth;
  if (!grant) throw new Error('the Jira emulator was started without oauth');
  return {
    config: { auth: 'oauth', siteUrl: emu.url, oauthTokenUrl: `${emu.url}/oauth/token`, apiGatewayUrl: emu.url },
    credential: JSON.stringify({
      clientId: grant.clientId,
      clientSecret: grant.clientSecret,
      refreshToken: grant.currentRefreshToken(),
    }),
  };
}

/** One line for a CLI: the URL and what the site holds (never the credential). */
export function describeJiraEmulator(emu: JiraEmulator): string {
  const issues = emu.data.projects.reduce((n, p) => n + p.issues.length, 0);
  const name = emu.flavor === 'datacenter' ? 'Jira Data Center' : 'Jira';
  return (
    `${name} emulator: ${emu.url}  ·  projects: ${emu.data.projects.map((p) => p.key).join(', ')}  ·  ` +
    `issues: ${issues}  ·  users: ${emu.data.users.length}  ·  sprints: ${emu.data.sprints.length}  ·  ` +
    `budget: ${emu.rateLimit.limit}/${emu.rateLimit.windowSeconds}s  ·  time zone: ${emu.timeZone}  ·  ` +
    `search lag: ${emu.searchLagMs} ms`
  );
}
