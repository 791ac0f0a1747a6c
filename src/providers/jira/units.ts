/**
 * The reference units (projects, members, sprints): each reads one project's lists and writes
 * each page through the fenced sink before asking for the next (a lost lease stops the unit).
 */
import { NonRetryableError } from '../../errors.js';
import type { UnitResult } from '../../sdk/types.js';
import { ProviderAnswerError } from '../kit/errors.js';
import type { UnitBase } from '../kit/runner.js';
import { PageWriter } from '../kit/write.js';
import { jiraApi } from './api.js';
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
  /** Every project the unit reads (a reference verify reads them all in one job). */
  projects: readonly string[];
}

/** An Agile API page (`/rest/agile/1.0/…`): `values` with `startAt`, `maxResults` and `isLast`. */
interface AgilePage<T> {
  startAt?: number;
  maxResults?: number;
  isLast?: boolean;
  total?: number;
  values: T[];
}

export interface JiraBoard {
  id: number;
  name: string;
  type: string;
}

/** The project itself (`GET /rest/api/{3|2}/project/{key}`: a missing one is `not_found`). */
export async function projects(job: Job): Promise<UnitResult> {
  const p = await job.jira.get<JiraProject>(jiraApi(job.config).project(job.project));
  const writer = new PageWriter(job.ctx);
  await writer.write('projects', [projectRow(job.scope, p)]);
  return writer.result();
}

const USERS_PAGE = 100;

/** The assignable-user search looks no further than the 1,000th user of its pool. */
export const USER_SEARCH_CAP = 1000;

/**
 * Members: the users issues of the project can be assigned to. Jira takes the users in the range
 * `[startAt, startAt + maxResults)`, up to the 1,000th, and returns only the assignable ones among
 * them: a page may be short or empty before the end, and the answer says nothing of a total. So
 * every range up to the cap is read (an empty page is not the end). When the last range still held
 * users, the pool may go on past the cap, where this search cannot look: the unit says so
 * (`incomplete`) and warns, rather than report the list complete. Data Center's search
 * (`/rest/api/2/user/assignable/search`, https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/
 * #api/2/user-findAssignableUsers) is read the same way; its users carry `key` and `name`, no account id.
 */
export async function members(job: Job): Promise<UnitResult> {
  const writer = new PageWriter(job.ctx);
  let last = 0;
  for await (const users of assignableUsers(job, job.project)) {
    await writer.write(
      'members',
      users.map((u) => memberRow(job.scope, u, 'assignee')),
    );
    last = users.length;
  }
  const cut = last === 0 ? null : pastTheCap(job, job.project);
  return cut ? { ...writer.result(), incomplete: cut } : writer.result();
}

/** Every range of `project`'s assignable-user search up to the cap, in order (a range may hold none). */
export async function* assignableUsers(job: Job, project: string): AsyncGenerator<JiraUser[]> {
  const path = jiraApi(job.config).assignableUsers;
  const trail = job.pages.trail(`GET ${path}`);
  for (let startAt = 0; startAt < USER_SEARCH_CAP; startAt += USERS_PAGE) {
    trail.visit(startAt);
    yield await job.jira.get<JiraUser[]>(path, {
      project,
      startAt,
      maxResults: Math.min(USERS_PAGE, USER_SEARCH_CAP - startAt),
    });
  }
}

/** A search whose last range still held users may go on past the cap: warns, and says what is not listed. */
export function pastTheCap(job: Job, project: string): { surface: string; reason: string } {
  const reason = `the assignable-user search stops at its ${USER_SEARCH_CAP}th user; members past it are not listed`;
  job.ctx.logger.warn({ unitId: job.ctx.unit.id, project }, `jira members may be incomplete: ${reason}`);
  return { surface: 'members', reason };
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

/** Boards whose sprints are read: scrum boards, and team-managed (`simple`) ones, which may have sprints. */
const SPRINT_BOARDS = new Set(['scrum', 'simple']);

/**
 * Sprints of the project's boards that can have them: scrum boards, and team-managed (`simple`)
 * boards, whose sprints feature may be on (Jira answers 400 for one where it is off: no sprints).
 * Kanban boards have none.
 */
export async function sprints(job: Job): Promise<UnitResult> {
  const writer = new PageWriter(job.ctx);
  for await (const page of projectSprints(job, job.project)) {
    await writer.write(
      'sprints',
      page.map((s) => sprintRow(job.scope, job.project, s)),
    );
  }
  return writer.result();
}

/**
 * Every page of the sprints of `project`'s boards that can have them, board after board; `onBoard`
 * hears of each such board before its sprints are read.
 */
export async function* projectSprints(
  job: Job,
  project: string,
  onBoard: (board: JiraBoard) => void = () => {},
): AsyncGenerator<JiraSprint[]> {
  for await (const boards of sprintBoards(job, project)) {
    for (const board of boards) {
      onBoard(board);
      yield* boardSprints(job, board);
    }
  }
}

/** The project's boards that can have sprints (scrum, simple), page by page. */
export async function* sprintBoards(job: Job, project: string): AsyncGenerator<JiraBoard[]> {
  const path = jiraApi(job.config).agile('board');
  for await (const boards of agilePages<JiraBoard>(job, path, { projectKeyOrId: project })) {
    yield boards.filter((b) => SPRINT_BOARDS.has(b.type));
  }
}

/** A board's sprints, page by page; none for a team-managed board whose sprints feature is off. */
async function* boardSprints(job: Job, board: JiraBoard): AsyncGenerator<JiraSprint[]> {
  try {
    yield* agilePages<JiraSprint>(job, jiraApi(job.config).agile(`board/${board.id}/sprint`));
  } catch (err) {
    if (!(board.type === 'simple' && sprintsOff(err))) throw err;
  }
}

/** A 400 for a board's sprints: the board does not support sprints. */
function sprintsOff(err: unknown): boolean {
  return (
    err instanceof NonRetryableError &&
    err.category === 'provider_error' &&
    err.cause instanceof ProviderAnswerError &&
    err.cause.status === 400
  );
}
