/** What a route handler gets and gives back. */
import type { RepoRecord, UserRecord } from './model.js';
import type { ParamContext } from './query.js';
import type { RenderContext } from './renderRepo.js';
import type { Answer } from './responses.js';

export interface RequestContext {
  render: RenderContext;
  q: URLSearchParams;
  params: Record<string, string>;
  /** Set for /repos/{owner}/{repo}/… routes (resolved and access-checked before the handler). */
  repo: RepoRecord | null;
  /** Private repositories the caller's token may read (all when null). */
  privateRepos: ReadonlySet<string> | null;
  /** The user the caller's token belongs to. */
  viewer: UserRecord;
  /** The clock's now in epoch ms. */
  now: number;
  /** 422 context for parameter parsing. */
  param: ParamContext;
}

/** A whole ordered result that the server pages (only the page is rendered). */
export interface ListAnswer<T = unknown> {
  list: readonly T[];
  render: (item: T) => unknown;
}

export type HandlerResult = Answer | ListAnswer;

export interface Route {
  /** Path segments; `{name}` captures one. */
  path: string;
  /** documentation_url of this endpoint's errors. */
  docs: string;
  /** The fine-grained permission a 403 names in `x-accepted-github-permissions`. */
  permission: string;
  /** The resource name GitHub uses in 422 errors. */
  resource: string;
  handler: (ctx: RequestContext) => HandlerResult;
}

export function isList(r: HandlerResult): r is ListAnswer {
  return 'list' in r;
}

/** Narrows `ctx.repo` for repository routes. */
export function repoOf(ctx: RequestContext): RepoRecord {
  if (!ctx.repo) throw new Error('repository route without a repository');
  return ctx.repo;
}
