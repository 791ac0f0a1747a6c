/**
 * The reference units (projects, members, sprints): each reads one project's lists and writes
 * each page through the fenced sink before asking for the next (a lost lease stops the unit).
 */
import type { UnitResult } from '../../sdk/types.js';
import type { UnitBase } from '../kit/runner.js';
import { PageWriter } from '../kit/write.js';
import type { JiraClient } from './client.js';
import type { JiraConfig } from './config.js';
import {
  memberRow,
  projectRow,
  sprintRow,
  type JiraProject,
  type JiraSprint,
  type JiraUser,
  type RowScope,
} from './mapping.js';

/** One project's part of a unit (`maxPages`: search pages an incremental unit reads). */
export interface Job extends UnitBase {
  jira: JiraClient;
  project: string;
  scope: RowScope;
  config: JiraConfig;
  /** Issues per search page. */
  pageSize: number;
  /** Per-issue requests (long comment lists and changelogs) in flight at once. */
  detailConcurrency: number;
}

/** An Agile API page (`/rest/agile/1.0/…`): `values` with `startAt`, `maxResults` and `isLast`. */
interface AgilePage<T> {
  startAt?: number;
  maxResults?: number;
  isLast?: boolean;
  total?: number;
  values: T[];
}

interface JiraBoard {
  id: number;
  name: string;
  type: string;
}

/** The project itself (`GET /rest/api/3/project/{key}`: a missing one is `not_found`). */
export async function projects(job: Job): Promise<UnitResult> {
  const p = await job.jira.get<JiraProject>(`/rest/api/3/project/${encodeURIComponent(job.project)}`);
  const writer = new PageWriter(job.ctx);
  await writer.write('projects', [projectRow(job.scope, p)]);
  return writer.result();
}

const USERS_PAGE = 100;

/**
 * Members: the users issues of the project can be assigned to. Jira may return fewer than asked
 * for before the end (it drops users it hides), so the list ends with an empty page.
 */
export async function members(job: Job): Promise<UnitResult> {
  const writer = new PageWriter(job.ctx);
  const trail = job.pages.trail('GET /rest/api/3/user/assignable/search');
  for (let startAt = 0; ; startAt += USERS_PAGE) {
    trail.visit(startAt);
    const users = await job.jira.get<JiraUser[]>('/rest/api/3/user/assignable/search', {
      project: job.project,
      startAt,
      maxResults: USERS_PAGE,
    });
    await writer.write(
      'members',
      users.map((u) => memberRow(job.scope, u, 'assignee')),
    );
    if (users.length === 0) break;
  }
  return writer.result();
}

const AGILE_PAGE = 50;

/** Every page of an Agile list, following `startAt` until `isLast`. */
async function* agilePages<T>(job: Job, path: string, query: Record<string, string> = {}): AsyncGenerator<T[]> {
  const trail = job.pages.trail(`GET ${path}`);
  for (let startAt = 0; ;) {
    trail.visit(startAt);
    const page = await job.jira.get<AgilePage<T>>(path, { ...query, startAt, maxResults: AGILE_PAGE });
    yield page.values;
    startAt += page.values.length;
    if (page.values.length === 0 || page.isLast === true) return;
    if (page.isLast === undefined && (page.total === undefined || startAt >= page.total)) return;
  }
}

/** Sprints of the project's scrum boards (kanban boards have none). */
export async function sprints(job: Job): Promise<UnitResult> {
  const writer = new PageWriter(job.ctx);
  for await (const boards of agilePages<JiraBoard>(job, '/rest/agile/1.0/board', { projectKeyOrId: job.project })) {
    for (const board of boards.filter((b) => b.type === 'scrum')) {
      for await (const page of agilePages<JiraSprint>(job, `/rest/agile/1.0/board/${board.id}/sprint`)) {
        await writer.write(
          'sprints',
          page.map((s) => sprintRow(job.scope, job.project, s)),
        );
      }
    }
  }
  return writer.result();
}
