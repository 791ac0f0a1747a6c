/**
 * Finds the route for a path. GitHub's Link headers point at `/repositories/{id}/…` and
 * `/organizations/{id}/…`; those are read as the `/repos/{owner}/{repo}/…` and `/orgs/{org}/…`
 * they stand for.
 */
import type { OrgData, RepoRecord } from './model.js';
import type { Route } from './routeTypes.js';
import { ISSUE_ROUTES } from './routesIssues.js';
import { ORG_ROUTES } from './routesOrg.js';
import { PULL_ROUTES } from './routesPulls.js';
import { USER_ROUTES } from './routesUsers.js';

const TABLE = [...ORG_ROUTES, ...ISSUE_ROUTES, ...PULL_ROUTES, ...USER_ROUTES];
const ROUTES: { route: Route; segments: string[] }[] = TABLE.map((route) => ({
  route,
  segments: route.path.split('/').slice(1),
}));

export interface Match {
  route: Route;
  params: Record<string, string>;
}

/** Literal segments are compared exactly, `{name}` captures; the first route in table order wins. */
export function matchRoute(path: string): Match | null {
  const parts = path.split('/').slice(1);
  for (const { route, segments } of ROUTES) {
    if (segments.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < segments.length && ok; i++) {
      const seg = segments[i]!;
      const part = parts[i]!;
      if (seg.startsWith('{')) params[seg.slice(1, -1)] = safeDecode(part);
      else ok = seg === part;
    }
    if (ok && !Object.values(params).some((v) => v === '')) return { route, params };
  }
  return null;
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return '';
  }
}

/** `/repositories/{id}/x` → `/repos/{org}/{name}/x`, `/organizations/{id}/x` → `/orgs/{org}/x`; null when unknown. */
export function canonicalPath(data: OrgData, path: string): string | null {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path;
  const m = /^\/(repositories|organizations)\/(\d+)(\/.*)?$/.exec(trimmed);
  if (!m) return trimmed;
  const id = Number(m[2]);
  const rest = m[3] ?? '';
  if (m[1] === 'organizations') return id === data.org.id ? `/orgs/${data.org.login}${rest}` : null;
  const repo = data.repos.find((r) => r.id === id);
  return repo ? `/repos/${data.org.login}/${repo.name}${rest}` : null;
}

/** Where a list's Link header points: the id-based form GitHub uses. */
export function linkBase(api: string, data: OrgData, path: string, repo: RepoRecord | null): string {
  if (repo)
    return `${api}/repositories/${repo.id}${path
      .split('/')
      .slice(4)
      .map((s) => `/${s}`)
      .join('')}`;
  if (path.startsWith('/orgs/')) return `${api}/organizations/${data.org.id}/${path.split('/').slice(3).join('/')}`;
  return `${api}${path}`;
}
