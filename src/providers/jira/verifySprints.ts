/**
 * The verify pass of one project's sprints (./verifyReference.ts; the steps: ../kit/verify.ts),
 * compared with the `sprints` rows whose container is the project.
 *
 * The listing is the sprints unit's read (units.ts `projectSprints`): the project's scrum and
 * team-managed boards, and every page of each one's sprints. A listed sprint has no update time;
 * one the store lacks (or holds marked deleted) is written from the page just listed, mapped as the
 * sprints unit maps it, without asking for it again.
 *
 * An unseen sprint is read directly, `GET /rest/agile/1.0/sprint/{sprintId}` (Data Center: the same
 * path under its Agile base). Jira answers 404 when "the sprint does not exist or the user does not
 * have permission to view it", and sprints are deleted for good (`DELETE /rest/agile/1.0/sprint/
 * {sprintId}`, 204: https://developer.atlassian.com/cloud/jira/software/rest/api-group-sprint/): a 404
 * is gone. A sprint Jira still has is present only while it is the project's: its origin board
 * (`originBoardId`) is one of the project's sprint boards. One created on another project's board,
 * which the project's boards no longer show, is gone from this project (marked in its container);
 * if a synced project's boards show it, that project's read writes it back, live, under its own
 * container. A sprint whose answer names no origin board is kept.
 */
import type { ListedItem } from '../../domain/verify.js';
import { NonRetryableError } from '../../errors.js';
import { mapLimited } from '../kit/concurrency.js';
import { CONFIRM_SINGLES, sourceScope, type VerifyReader } from '../kit/verify.js';
import { PageWriter } from '../kit/write.js';
import { jiraApi } from './api.js';
import { sprintRow, type JiraSprint } from './mapping.js';
import { projectSprints, sprintBoards, type Job } from './units.js';

/** The reader of `project`'s sprints; what it writes is counted into `counts`. */
export function sprintReader(job: Job, project: string, counts: Record<string, number>): VerifyReader {
  const known = new Map<string, JiraSprint>(); // the page or batch just handed to the kit
  let boards: Set<number> | null = null; // the project's sprint boards, once a listing has run to its end
  const writer = new PageWriter(job.ctx, counts);
  const keep = (sprints: readonly JiraSprint[]): ListedItem[] => {
    known.clear();
    for (const s of sprints) known.set(String(s.id), s);
    return sprints.map((s) => ({ id: String(s.id), updatedAt: null }));
  };
  return {
    scope: sourceScope(job.ctx, job.scope.provider, 'sprints', project),
    confirmBatch: CONFIRM_SINGLES,
    async *list() {
      const seen = new Set<number>();
      for await (const page of projectSprints(job, project, (b) => seen.add(b.id))) yield keep(page);
      boards = seen;
    },
    async confirm(ids) {
      const home = boards ?? (boards = await boardIds(job, project));
      const read = await mapLimited(ids, job.detailConcurrency, (id) => readSprint(job, id), job.ctx.signal);
      return keep(read.filter((s): s is JiraSprint => s !== null && ofProject(s, home)));
    },
    async fetch(ids) {
      // Every id the kit fetches is of the page or batch just handed to it; anything else is read.
      const sprints = ids.map((id) => known.get(id)).filter((s): s is JiraSprint => s !== undefined);
      const others = ids.filter((id) => !known.has(id));
      const read = await mapLimited(others, job.detailConcurrency, (id) => readSprint(job, id), job.ctx.signal);
      sprints.push(...read.filter((s): s is JiraSprint => s !== null));
      await writer.write(
        'sprints',
        sprints.map((s) => sprintRow(job.scope, project, s)),
      );
    },
  };
}

/** Whether a sprint Jira has is still the project's: created on one of its boards (or on no board named). */
function ofProject(s: JiraSprint, boards: ReadonlySet<number>): boolean {
  return s.originBoardId === undefined || boards.has(s.originBoardId);
}

/** The ids of the project's sprint boards (a pass resumed past its listing has not seen them). */
async function boardIds(job: Job, project: string): Promise<Set<number>> {
  const ids = new Set<number>();
  for await (const boards of sprintBoards(job, project)) for (const b of boards) ids.add(b.id);
  return ids;
}

/** The sprint as Jira has it now, or null when it answers 404 (deleted, or no longer visible). */
async function readSprint(job: Job, id: string): Promise<JiraSprint | null> {
  try {
    return await job.jira.get<JiraSprint>(jiraApi(job.config).agile(`sprint/${encodeURIComponent(id)}`));
  } catch (err) {
    if (err instanceof NonRetryableError && err.category === 'not_found') return null;
    throw err;
  }
}
