/**
 * A local Linear GraphQL API emulator for tests, demos and benchmarks: a seeded workspace served
 * through a subset of Linear's public schema (schema.ts), requests parsed and validated with
 * `graphql`, Relay pagination with cursors tied to their items, the filters syncrelay uses,
 * Linear's rate-limit headers with enforced leaky-bucket budgets (requests, complexity, endpoints),
 * injectable faults (partial data among them) and issues changing while they are read (churn).
 * Not part of the engine: only the
 * `emulate` and `demo --provider linear` commands, the benchmark and tests import it.
 */
import {
  emulatedIntegration,
  freshToken,
  localToken,
  prepareEmulator,
  serveEmulator,
  tally,
  validateWindow,
  type EmulatedIntegration,
  type EmulatorControls,
  type WindowSpec,
} from '../core/index.js';
import { ValidationError } from '../../errors.js';
import { LINEAR_FAULTS, type LinearFaultSpec } from './faults.js';
import { generateWorkspace, type Workspace } from './generate.js';
import {
  archiveIssue,
  churnIssues,
  deleteComment,
  deleteIssue,
  editComment,
  editIssue,
  mutateWorkspace,
  type LinearMutationSummary,
} from './mutate.js';
import { Rng } from '../core/random.js';
import {
  SCALE_RULES,
  resolveRateLimit,
  type LinearChurn,
  type LinearEmulatorOptions,
  type LinearRateLimit,
  type LinearScale,
} from './options.js';
import { LeakyBucket } from './ratelimit.js';
import { Views } from './resolvers.js';
import { rootValue } from './root.js';
import { linearSchema } from './schema.js';
import { createHandler, type EmulatorKey, type LinearRequestLogEntry } from './server.js';
import { WebhookOutlet, type Announce, type WebhookSender, type WebhookTarget } from '../core/webhooks.js';
import { linearDelivery, type LinearChange } from './webhooks.js';

export { LINEAR_SDL, linearSchema } from './schema.js';
export { queryComplexity } from './complexity.js';
export type { Workspace } from './generate.js';
export type { LinearMutationSummary } from './mutate.js';
export { linearPayload, type LinearChange } from './webhooks.js';
export type { EmulatorKey, LinearRequestLogEntry } from './server.js';
export * from './faults.js';
export * from './options.js';

export interface LinearEmulatorStats {
  requests: number;
  /** Requests per operation name. */
  byOperation: Record<string, number>;
  /** Answers that were limits (RATELIMITED or 429). */
  limited: number;
  complexity: number;
}

export interface LinearEmulator extends EmulatorControls<LinearFaultSpec, LinearMutationSummary> {
  /** `http://127.0.0.1:<port>/graphql`: use as the integration's `config.apiUrl`. */
  url: string;
  /** The personal API key (id `demo`), sent as `Authorization: <key>`. */
  token: string;
  /** The OAuth access token (id `oauth`), sent as `Authorization: Bearer <token>`. */
  oauthToken: string;
  keys: readonly EmulatorKey[];
  /** Every request, oldest first (bounded by `logLimit`). */
  requestLog: LinearRequestLogEntry[];
  stats(): LinearEmulatorStats;
  /** The workspace's records, for computing expected results. */
  data: Workspace;
  scale: LinearScale;
  rateLimit: Required<LinearRateLimit>;
  /**
   * Replaces the requests budget from now on: each key's bucket keeps its level (at most the new
   * limit once it refills) and refills at the new rate.
   */
  setRequestLimit(spec: WindowSpec): void;
  /** Edits an issue at the clock's now (it moves to the front of `orderBy: updatedAt`). */
  editIssue(id: string): void;
  /** Archives an issue at the clock's now: it leaves the listings. */
  archiveIssue(id: string): void;
  /** Deletes an issue from the workspace. */
  deleteIssue(id: string): void;
  /**
   * Deletes a comment (Linear's `commentDelete`) at the clock's now: it leaves every read, and
   * `data.deletedComments` keeps it; its issue's `updatedAt` stays.
   */
  deleteComment(id: string): void;
  /** Edits a comment (Linear's `commentUpdate`) at the clock's now; its issue's `updatedAt` stays. */
  editComment(id: string): void;
  /** Replaces the churn settings (edits per second, the hook between pages). */
  setChurn(churn: LinearChurn): void;
  /** Issues edited by churn so far (ids, in order). */
  churned: string[];
  /** The sender of the webhook target the emulator is pointed at now; null when none. */
  readonly webhooks: WebhookSender | null;
  /**
   * Points every edit's webhook delivery at `target` from now on (null: none); a replaced sender
   * still sends what it holds.
   */
  setWebhookTarget(target: WebhookTarget | null): void;
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A fresh key shaped like Linear's (`lin_api_…` / `lin_oauth_…`): local only. */
export function freshLinearKey(prefix: 'lin_api_' | 'lin_oauth_'): string {
  return freshToken(prefix, ALPHABET, 40);
}

export async function startLinearEmulator(opts: LinearEmulatorOptions = {}): Promise<LinearEmulator> {
  const rules = { scales: SCALE_RULES, faults: LINEAR_FAULTS };
  const { seed, clock, nowMs, logLimit, scale, faults } = prepareEmulator(opts, rules, opts.faults);
  const rateLimit = resolveRateLimit(opts.rateLimit);
  const data = generateWorkspace(seed, scale, nowMs);
  const keys: EmulatorKey[] = [
    { id: 'demo', key: localToken(opts.token, 'token', () => freshLinearKey('lin_api_')), kind: 'api-key' },
    { id: 'oauth', key: localToken(opts.oauthToken, 'oauthToken', () => freshLinearKey('lin_oauth_')), kind: 'oauth' },
  ];
  if (keys[0]!.key === keys[1]!.key) throw new ValidationError('oauthToken', 'must differ from token');
  const log: LinearRequestLogEntry[] = [];
  let base = '';
  const views = new Views(data, () => base);
  const now = () => clock.now().getTime();
  const hook = { ws: data, baseUrl: () => base, now };
  const outlet = new WebhookOutlet<LinearChange>((change, secret) => linearDelivery(hook, change, secret), { seed });
  outlet.setTarget(opts.webhooks ?? null);
  const announce = outlet.announce;
  const churn = churner(data, seed, now, opts.churn ?? {}, announce);
  const endpoints = new Map(
    Object.entries(rateLimit.endpoints).map(([name, spec]) => [name, new LeakyBucket(spec, clock)] as const),
  );
  const { origin, controls } = await serveEmulator(
    createHandler({
      clock,
      schema: linearSchema(),
      root: rootValue(data, views),
      keys,
      requests: new LeakyBucket(rateLimit.requests, clock),
      complexity: new LeakyBucket(rateLimit.complexity, clock),
      endpoints,
      rateLimit,
      churn: () => churn.due(),
      afterIssuesPage: (page) => churn.settings.afterIssuesPage?.(page),
      afterCommentsPage: (page) => churn.settings.afterCommentsPage?.(page),
      faults,
      log,
      logLimit,
    }),
    opts,
    { name: 'Linear', faults, clock },
    (round, at) => mutateWorkspace(data, scale, round, at, announce),
  );
  base = `${origin}/_web/${data.urlKey}`;
  return {
    url: `${origin}/graphql`,
    token: keys[0]!.key,
    oauthToken: keys[1]!.key,
    keys,
    requestLog: log,
    stats: () => statsOf(log),
    data,
    scale,
    rateLimit,
    setRequestLimit: (spec) => void Object.assign(rateLimit.requests, validateWindow(spec, 'rateLimit.requests')),
    editIssue: (id) => editIssue(data, churn.rng, issueOf(data, id), now(), announce),
    archiveIssue: (id) => archiveIssue(data, issueOf(data, id), now(), announce),
    deleteIssue: (id) => deleteIssue(data, issueOf(data, id), now(), announce),
    deleteComment: (id) => {
      const { issue, comment } = commentOf(data, id);
      deleteComment(data, issue, comment, now(), announce);
    },
    editComment: (id) => {
      const { issue, comment } = commentOf(data, id);
      editComment(issue, comment, now(), announce);
    },
    setChurn: (c) => churn.set(c),
    churned: churn.edited,
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

function issueOf(ws: Workspace, id: string) {
  const issue = ws.issueById.get(id);
  if (!issue) throw new ValidationError('id', `no issue ${id}`);
  return issue;
}

/** Comment `id` and its issue (a ValidationError when no issue holds it). */
function commentOf(ws: Workspace, id: string) {
  for (const issue of ws.issues) {
    const comment = issue.comments.find((c) => c.id === id);
    if (comment) return { issue, comment };
  }
  throw new ValidationError('id', `no comment ${id}`);
}

/** Edits due by the clock at `editsPerSecond`, counted from the first request after they are set. */
function churner(
  ws: Workspace,
  seed: number,
  now: () => number,
  initial: LinearChurn,
  announce: Announce<LinearChange>,
) {
  const rng = new Rng(seed, 'churn');
  const edited: string[] = [];
  let settings = initial;
  let from: number | null = null;
  let done = 0;
  return {
    rng,
    edited,
    get settings() {
      return settings;
    },
    set(c: LinearChurn) {
      settings = c;
      from = null;
      done = 0;
    },
    due() {
      const rate = settings.editsPerSecond ?? 0;
      if (rate <= 0) return;
      const t = now();
      from ??= t;
      const owed = Math.floor(((t - from) / 1000) * rate) - done;
      if (owed <= 0) return;
      done += owed;
      edited.push(...churnIssues(ws, rng, owed, t, announce));
    },
  };
}

/** What an integration reading this emulator is made of (for `demo --provider linear` and tests). */
export function linearIntegrationFor(emu: LinearEmulator): EmulatedIntegration<'linear', { apiUrl: string }> {
  const teams = emu.data.teams.map((t) => t.key);
  return emulatedIntegration('linear', { apiUrl: emu.url }, emu.token, teams, LINEAR_EMULATED_DATASETS);
}

/** Every dataset the emulator serves data for (all of the provider's). */
export const LINEAR_EMULATED_DATASETS = [
  'teams',
  'members',
  'projects',
  'cycles',
  'workflow-states',
  'work-items',
  'work-item-comments',
  'work-item-history',
  'work-item-labels',
] as const;

/** The normalized tables a Linear sync writes, in the order a summary lists them. */
export const LINEAR_TABLES = [
  'teams',
  'members',
  'projects',
  'sprints',
  'work_items',
  'work_item_comments',
  'work_item_events',
] as const;

function statsOf(log: readonly LinearRequestLogEntry[]): LinearEmulatorStats {
  const byOperation: Record<string, number> = {};
  let limited = 0;
  let complexity = 0;
  for (const e of log) {
    tally(byOperation, e.operation ?? '(none)');
    if (e.errorCode === 'RATELIMITED') limited++;
    if (e.status === 200) complexity += e.complexity ?? 0;
  }
  return { requests: log.length, byOperation, limited, complexity };
}
