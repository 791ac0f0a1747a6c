/** Turns an authenticated, in-budget request into an answer: route, repository access, paging. */
import type { Churn } from './churn.js';
import type { OrgData, UserRecord } from './model.js';
import { isList, type RequestContext } from './routeTypes.js';
import { AnswerError, paginate } from './query.js';
import type { RateLimiter } from './ratelimit.js';
import type { RenderContext } from './renderRepo.js';
import { notFound, type Answer } from './responses.js';
import { canSee } from './routesOrg.js';
import { canonicalPath, linkBase, matchRoute } from './router.js';

export interface DispatchInput {
  render: RenderContext;
  url: URL;
  privateRepos: ReadonlySet<string> | null;
  viewer: UserRecord;
  now: number;
  /** Concurrent edits, made before the answer (churn.ts). */
  churn?: Churn;
}

/** The route's documentation_url (for faults that answer in its name), or GitHub's generic one. */
export function routeInfo(data: OrgData, pathname: string): { docs: string; permission: string } | null {
  const path = canonicalPath(data, pathname);
  const match = path === null ? null : matchRoute(path);
  return match ? { docs: match.route.docs, permission: match.route.permission } : null;
}

export function dispatch(input: DispatchInput): Answer {
  const { render, url } = input;
  const data = render.data;
  const path = canonicalPath(data, url.pathname);
  const match = path === null ? null : matchRoute(path);
  if (!path || !match) return notFound();
  const { route, params } = match;
  let repo = null;
  if (params.repo !== undefined) {
    const owner = (params.owner ?? '').toLowerCase();
    repo = data.repos.find((r) => r.name.toLowerCase() === params.repo!.toLowerCase()) ?? null;
    if (owner !== data.org.login.toLowerCase() || !repo) return notFound(route.docs);
  }
  const ctx: RequestContext = {
    render,
    q: url.searchParams,
    params,
    repo,
    privateRepos: input.privateRepos,
    viewer: input.viewer,
    now: input.now,
    param: { q: url.searchParams, resource: route.resource, docs: route.docs },
  };
  if (repo && !canSee(ctx, repo)) return notFound(route.docs);
  input.churn?.before(input.now, repo, listingOf(route.path, path), url.searchParams);
  try {
    const result = route.handler(ctx);
    if (!isList(result)) return result;
    const page = paginate(result.list, url.searchParams, linkBase(render.api, data, path, repo));
    return {
      status: 200,
      body: page.items.map(result.render),
      headers: page.link ? { link: page.link } : {},
    };
  } catch (err) {
    if (err instanceof AnswerError) return err.answer;
    throw err;
  }
}

/** A repository list's listing (the path after `/repos/{owner}/{repo}`), null for anything else. */
function listingOf(routePath: string, path: string): string | null {
  const list = routePath.startsWith('/repos/{owner}/{repo}/') && !routePath.endsWith('}');
  return list ? `/${path.split('/').slice(4).join('/')}` : null;
}

/** `GET /rate_limit` (it does not count against the limit, as on GitHub). */
export function rateLimitBody(limiter: RateLimiter, key: string, now: number): Answer {
  const core = limiter.peek(key);
  const strip = ({ resource: _r, ...rest }: typeof core) => rest;
  const fixed = (limit: number, seconds: number) => ({
    limit,
    remaining: limit,
    reset: Math.ceil(now / 1000) + seconds,
    used: 0,
  });
  const body = {
    resources: {
      core: strip(core),
      search: fixed(30, 60),
      graphql: fixed(5000, 3600),
      integration_manifest: fixed(5000, 3600),
      code_search: fixed(10, 60),
    },
    rate: strip(core),
  };
  return { status: 200, body };
}
