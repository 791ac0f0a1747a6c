/**
 * A local GitHub REST API emulator for tests and benchmarks: a seeded organisation served in
 * GitHub's real shapes, with its pagination, authentication (tokens, and optionally a GitHub App:
 * appAuth.ts), primary rate limit and injectable faults. Not part of the engine: only the
 * `emulate` and `demo --provider github` commands, the benchmark and tests import it.
 */
import {
  BASE62,
  freshToken,
  localToken,
  prepareEmulator,
  serveEmulator,
  type EmulatorControls,
} from '../core/index.js';
import { checkSelection, GithubApp, resolveAppOptions, type AppStats } from './appAuth.js';
import { checkRate, Churn } from './churn.js';
import { editHelpers, editsOf, type Edits } from './edits.js';
import { GITHUB_FAULTS, type FaultSpec } from './faults.js';
import { defaultEmptyRepos, generateOrg } from './generate.js';
import type { OrgData } from './model.js';
import { mutateOrg, type MutationSummary } from './mutate.js';
import {
  resolveRateLimit,
  SCALE_RULES,
  validateTokens,
  type EmulatorScale,
  type EmulatorToken,
  type GithubEmulatorOptions,
  type RateLimitSpec,
} from './options.js';
import { RateLimiter } from './ratelimit.js';
import { createHandler, type RequestLogEntry, type RequestTotals } from './server.js';
import { WebhookOutlet, type WebhookSender, type WebhookTarget } from '../core/webhooks.js';
import { githubDelivery, type GithubChange } from './webhooks.js';

export { countsPerDay, type DayCounts } from './stats.js';
export { DEMO_GITHUB_DATASETS, GITHUB_TABLES } from './demo.js';
export type { MutationSummary } from './mutate.js';
export type { Edits } from './edits.js';
export { githubPayload, type GithubChange } from './webhooks.js';
export type { OutgoingDelivery, WebhookFaults, WebhookSender, WebhookStats, WebhookTarget } from '../core/webhooks.js';
export { MAX_BURST } from './churn.js';
export type { RequestLogEntry, RequestTotals } from './server.js';
export {
  DEFAULT_APP_ID,
  DEFAULT_INSTALLATION_ID,
  DEFAULT_TOKEN_TTL_SECONDS,
  JWT_MESSAGES,
  resolveAppOptions,
  type AppStats,
} from './appAuth.js';
export * from './faults.js';
export * from './options.js';
export type * from './model.js';

export interface GithubEmulator extends EmulatorControls<FaultSpec, MutationSummary> {
  /** `http://127.0.0.1:<port>`: the API root (use as Octokit's baseUrl). */
  url: string;
  /** The full-access token (id `demo`). */
  token: string;
  tokens: readonly EmulatorToken[];
  /** Every request, oldest first (bounded by `logLimit`). */
  log: RequestLogEntry[];
  /** The organisation's records, for computing expected results. */
  data: OrgData;
  scale: EmulatorScale;
  rateLimit: RateLimitSpec;
  /**
   * Replaces the primary limit from now on: a running window keeps its end and what it spent,
   * counted against the new limit; the next window lasts the new `windowSeconds`.
   */
  setRateLimit(spec: RateLimitSpec): void;
  /** Edits at the clock's now, as people make them while a reader pages (edits.ts). */
  edit: Edits;
  /**
   * Runs `fn` once, just before the `page`th request of `listing` (the path after
   * `/repos/{owner}/{repo}`, e.g. `/issues`), counted from now, is answered (churn.ts).
   */
  onPage(listing: string, page: number, fn: () => void): void;
  /** Concurrent edits per second from now on (0: none). */
  setChurn(rate: number): void;
  /** From now on, one more edit before a request of a sorted list with probability `p` (churn.ts). */
  setListEdits(p: number): void;
  /**
   * What the emulator did so far: requests answered (by a fault, slowed, 304 Not Modified) and the
   * churn's edits, deletions (issues and comments) and accounts deleted.
   */
  activity(): RequestTotals & { edits: number; deletions: number; accounts: number };
  /** With the `app` option: the App's id (its JWTs' `iss`); null without an App. */
  appId: number | null;
  /** With the `app` option: the App's client ID (also accepted as `iss`); null without an App. */
  appClientId: string | null;
  /** With the `app` option: the one installation's id (on the organisation). */
  installationId: number | null;
  /** With the `app` option: the App's current private key, PKCS#1 PEM (`BEGIN RSA PRIVATE KEY`). */
  readonly appPrivateKeyPem: string | null;
  /**
   * Revokes the App's private key: JWTs signed with it answer 401 from now on. A new key replaces
   * it (returned, and in `appPrivateKeyPem`). Throws without an App.
   */
  revokeAppKey(): string;
  /** Revokes every installation access token issued so far (they answer 401); returns how many were live. */
  revokeInstallationTokens(): number;
  /**
   * Gives the installation repository `name` of the organisation too, as its owner would (nothing
   * changes while it has them all). Throws without an App or for an unknown name.
   */
  addInstallationRepository(name: string): void;
  /** Takes repository `name` from the installation (it then has those selected). Throws as `add…` does. */
  removeInstallationRepository(name: string): void;
  /** The repositories (names) the installation reaches now: all of the organisation's, or those it was given. */
  installationRepositories(): string[];
  /** Tokens issued and refused, JWTs accepted and refused (all zero without an App). */
  appStats(): AppStats;
  /** The App JWTs accepted and installation tokens issued so far (the latest 1000): what a leak test looks for. */
  appSecretsSeen(): readonly string[];
  /** The sender of the webhook target the emulator is pointed at now; null when none. */
  readonly webhooks: WebhookSender | null;
  /**
   * Points every edit's webhook delivery at `target` from now on (null: none); a replaced sender
   * still sends what it holds. A test starts the emulator, makes the receiver and its secret, then
   * calls this.
   */
  setWebhookTarget(target: WebhookTarget | null): void;
}

let instances = 0;

/** A fresh `ghp_`-style token (a local emulator token, not a GitHub one). */
export function freshGithubToken(): string {
  return freshToken('ghp_', BASE62, 36);
}

/** The full-access token `demo` (`token`, or a fresh one) and a fresh `public-only` token. */
export function defaultTokens(token?: string): EmulatorToken[] {
  return [
    { id: 'demo', token: localToken(token, 'token', freshGithubToken) },
    { id: 'public-only', token: freshGithubToken(), repos: [] },
  ];
}

export async function startGithubEmulator(opts: GithubEmulatorOptions = {}): Promise<GithubEmulator> {
  const rules = { scales: SCALE_RULES, faults: GITHUB_FAULTS };
  const { seed, clock, nowMs, logLimit, scale, faults } = prepareEmulator(opts, rules, opts.faults);
  const rateLimit = resolveRateLimit(opts.rateLimit);
  const tokens = validateTokens(opts.tokens ?? defaultTokens(opts.token));
  const empty = new Set(opts.emptyRepos ?? defaultEmptyRepos(scale.repos));
  const data = generateOrg(seed, opts.org ?? 'emulated-org', scale, nowMs, empty);
  const render = { api: '', html: '', data };
  const appOptions = resolveAppOptions(opts.app);
  checkSelection(
    appOptions?.repositories ?? null,
    data.repos.map((r) => r.name),
  );
  const app = appOptions ? new GithubApp(appOptions, clock) : null;
  const hook = { render, installationId: app?.installationId ?? null };
  const outlet = new WebhookOutlet<GithubChange>((change, secret) => githubDelivery(hook, change, secret), { seed });
  outlet.setTarget(opts.webhooks ?? null);
  const edits = editHelpers(data, outlet.announce);
  const churn = new Churn(data, checkRate(opts.churn ?? 0), edits);
  const log: RequestLogEntry[] = [];
  const totals: RequestTotals = { requests: 0, faults: 0, slow: 0, notModified: 0 };
  const names = () => data.repos.map((r) => r.name);
  /** The App (throws without one) and the organisation's repository `name` (throws when there is none). */
  const installed = (what: string, name: string): GithubApp => {
    if (!app) throw new Error(`${what}: the emulator serves no GitHub App (start it with the app option)`);
    checkSelection([name], names());
    return app;
  };
  const { origin, controls } = await serveEmulator(
    createHandler({
      instance: ++instances,
      clock,
      render,
      tokens: new Map(tokens.map((t) => [t.token, t])),
      viewerOf: (t) => data.members[Math.max(0, tokens.indexOf(t)) % data.members.length]!,
      limiter: new RateLimiter(rateLimit, clock),
      anonymous: new RateLimiter({ limit: 60, windowSeconds: 3600 }, clock),
      rateSpec: rateLimit,
      faults,
      log,
      logLimit,
      churn,
      totals,
      app,
    }),
    opts,
    { name: 'GitHub', faults, clock },
    (round, at) => mutateOrg(data, scale, round, at, outlet.announce),
  );
  render.api = origin;
  render.html = `${origin}/_web`;
  return {
    url: origin,
    token: tokens[0]?.token ?? '',
    tokens,
    log,
    data,
    scale,
    rateLimit,
    setRateLimit: (spec) => void Object.assign(rateLimit, resolveRateLimit({ status: rateLimit.status, ...spec })),
    edit: editsOf(data, () => clock.now().getTime(), edits),
    onPage: (listing, page, fn) => churn.onPage(listing, page, fn),
    setChurn: (rate) => churn.setRate(rate),
    setListEdits: (p) => churn.setListEdits(p),
    activity: () => ({ ...totals, ...churn.made }),
    appId: app?.appId ?? null,
    appClientId: app?.clientId ?? null,
    installationId: app?.installationId ?? null,
    get appPrivateKeyPem() {
      return app?.privateKeyPem ?? null;
    },
    revokeAppKey: () => {
      if (!app) throw new Error('revokeAppKey: the emulator serves no GitHub App (start it with the app option)');
      return app.revokeKey();
    },
    revokeInstallationTokens: () => app?.revokeTokens() ?? 0,
    addInstallationRepository: (name) => {
      const a = installed('addInstallationRepository', name);
      if (a.selectedRepositories !== null) a.select([...a.selectedRepositories, name]);
    },
    removeInstallationRepository: (name) => {
      const a = installed('removeInstallationRepository', name);
      a.select((a.selectedRepositories ?? names()).filter((n) => n !== name));
    },
    installationRepositories: () => names().filter((n) => app?.reaches(n) ?? false),
    appSecretsSeen: () => [...(app?.secretsSeen ?? [])],
    appStats: () => ({ ...(app?.stats ?? { tokensIssued: 0, jwtsAccepted: 0, jwtsRefused: 0, tokensRefused: 0 }) }),
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
