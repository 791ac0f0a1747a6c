/**
 * What every route of the emulator is handed (the site, the request, the viewer, the lagging search
 * index, the clock), and the helpers the route modules share: Jira's error shape, a bounded integer
 * parameter, a project and an issue by key or id.
 */
import type { Answer } from '../core/http.js';
import type { IssueRec, ProjectRec, UserRec } from './model.js';
import type * as render from './render.js';
import type { SearchIndex } from './searchIndex.js';

export interface RouteContext {
  site: render.Site;
  method: string;
  path: string;
  q: URLSearchParams;
  /** A POST's parsed JSON body (null otherwise). */
  body: Record<string, unknown> | null;
  viewer: UserRec;
  /** The custom field holding sprints. */
  sprintField: string;
  /** Comments a `comment/list` page holds at most (null or absent: everything asked). */
  commentListPage?: number | null;
  /** What search sees of the issues. */
  index: SearchIndex;
  /** The clock's now, epoch ms. */
  now: number;
}

export function jiraError(status: number, ...messages: string[]): Answer {
  return { status, body: { errorMessages: messages, errors: {} } };
}

export function intParam(raw: unknown, fallback: number, max: number): number {
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw !== '' ? Number(raw) : fallback;
  return Number.isInteger(n) && n >= 0 ? Math.min(n, max) : fallback;
}

export function projectByKey(ctx: RouteContext, keyOrId: string): ProjectRec | undefined {
  return ctx.site.data.projects.find((p) => p.key === keyOrId || p.id === keyOrId);
}

export function issueByIdOrKey(ctx: RouteContext, idOrKey: string): IssueRec | undefined {
  const byId = ctx.site.data.issuesById.get(idOrKey);
  if (byId) return byId;
  const key = idOrKey.toUpperCase();
  const project = projectByKey(ctx, key.split('-')[0] ?? '');
  return project?.issues.find((i) => i.key === key);
}
