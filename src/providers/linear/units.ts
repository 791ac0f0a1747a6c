/**
 * What each Linear unit reads and writes. Every page's rows go through the fenced sink before the
 * next page is asked for (a lost lease stops the unit, nothing written after).
 *
 * The work-item family (`work-items`, `work-item-comments`, `work-item-history`,
 * `work-item-labels`) is read by one query per page of issues: `issues(filter: {team, updatedAt:
 * [since, before) and ≤ upTo}, orderBy: updatedAt)` with the connections the unit's datasets need
 * nested in it — a keyset read that resumes at the oldest update written, inclusive, skipping the
 * ids written at it (./resume.ts), so an issue edited, archived or deleted while the window is read
 * moves no page boundary and nothing is skipped. A nested connection that overflows its first page
 * is read on through `issue(id)` before the page's rows are written. A verify (./verify.ts) reads
 * the issues it finds missing or stale the same way, by `id: { in: … }` (`familyByIds`).
 *
 * Linear serves `orderBy: updatedAt` newest first, so a unit that stopped part-way would leave the
 * oldest issues of its window unread: an incremental unit stops after `maxPages` pages only while
 * the pages came oldest first (its watermark then moves only to the latest `updatedAt` read);
 * otherwise it reads its whole window (bounded by the planner: watermark → planning time).
 */
import { RateLimitError } from '../../errors.js';
import type { UnitResult } from '../../sdk/types.js';
import type { UnitBase } from '../kit/runner.js';
import type { Row } from '../kit/rows.js';
import { PageWriter, writeRows } from '../kit/write.js';
import type { LinearClient } from './client.js';
import {
  commentRow,
  eventRows,
  memberRow,
  projectRow,
  sprintRow,
  teamRow,
  workItemRow,
  type LnConnection,
  type LnCycle,
  type LnIssue,
  type LnProject,
  type LnTeam,
  type LnUser,
  type RowScope,
} from './mapping.js';
import {
  CYCLES_QUERY,
  issueConnectionQuery,
  issueFilter,
  issueIdsFilter,
  issuesQuery,
  PROJECTS_QUERY,
  TEAMS_QUERY,
  USERS_QUERY,
  type NestedKind,
} from './queries.js';
import {
  familyCheckpoint,
  freshProgress,
  passPage,
  progressFrom,
  writtenAlready,
  type FamilyCounts,
  type FamilyProgress,
} from './resume.js';

export { UpdateOrder } from './resume.js';

/** A unit's reads (`maxPages`: pages an incremental unit reads before it stops). */
export interface Job extends UnitBase {
  client: LinearClient;
  /** The team keys the unit reads. */
  teams: string[];
  scope: RowScope;
  pageSize: number;
  nestedPageSize: number;
}

/** Issues written at the keyset's bound a page makes room for (the bound issue itself, usually). */
const REREAD_ROOM = 2;

/** A top-level connection of the API: its query and its field in the answer. */
interface Connection {
  query: { name: string; text: string };
  field: string;
  variables: Record<string, unknown>;
}

/**
 * Reads every page of a top-level connection and writes each page's rows (`rows` of its nodes) to
 * `surface` before asking for the next.
 */
async function writeConnection<T>(
  job: Job,
  c: Connection,
  surface: string,
  rows: (nodes: T[]) => Row[],
): Promise<UnitResult> {
  const writer = new PageWriter(job.ctx);
  let after: string | null = null;
  const trail = job.pages.trail(`query ${c.query.name}`);
  for (;;) {
    trail.visit(after);
    const data: Record<string, LnConnection<T>> = await job.client.query(c.query.name, c.query.text, {
      ...c.variables,
      first: job.pageSize,
      after,
    });
    const conn = data[c.field]!;
    await writer.write(surface, rows(conn.nodes));
    if (!conn.pageInfo.hasNextPage || !conn.pageInfo.endCursor) return writer.result();
    after = conn.pageInfo.endCursor;
  }
}

export function teams(job: Job): Promise<UnitResult> {
  const c = { query: TEAMS_QUERY, field: 'teams', variables: { teams: job.teams } };
  return writeConnection<LnTeam>(job, c, 'teams', (nodes) => nodes.map((t) => teamRow(job.scope, t)));
}

export function members(job: Job): Promise<UnitResult> {
  const c = { query: USERS_QUERY, field: 'users', variables: {} };
  return writeConnection<LnUser>(job, c, 'members', (nodes) => nodes.map((u) => memberRow(job.scope, u)));
}

export function projects(job: Job): Promise<UnitResult> {
  const c = { query: PROJECTS_QUERY, field: 'projects', variables: {} };
  return writeConnection<LnProject>(job, c, 'projects', (nodes) => nodes.map((p) => projectRow(job.scope, p)));
}

export function cycles(job: Job): Promise<UnitResult> {
  const c = { query: CYCLES_QUERY, field: 'cycles', variables: { teams: job.teams } };
  const now = () => job.ctx.clock.now();
  return writeConnection<LnCycle>(job, c, 'sprints', (nodes) => nodes.map((n) => sprintRow(job.scope, n, now())));
}

/** What a family unit reads and writes, from its datasets. */
export interface FamilyPlan {
  /** work_items rows (with their labels) are written. */
  items: boolean;
  comments: boolean;
  history: boolean;
  /** The nested connections the query asks for. */
  kinds: NestedKind[];
}

export function familyPlan(datasets: readonly string[]): FamilyPlan {
  const has = (d: string) => datasets.includes(d);
  const items = has('work-items') || has('work-item-labels');
  const comments = has('work-item-comments');
  const history = has('work-item-history');
  const kinds: NestedKind[] = [];
  if (comments) kinds.push('comments');
  // started_at is the first transition into a started state: the history comes along with the items.
  if (history || has('work-items')) kinds.push('history');
  if (items) kinds.push('labels');
  return { items, comments, history, kinds };
}

/**
 * The family's issues of the unit's teams in its window, one query per page (plus overflow pages).
 * A unit deferred for a rate limit hands its deferral the cursor after its last written page
 * (./resume.ts); its next attempt starts there, with the counts and order read so far.
 */
export async function workItemFamily(job: Job): Promise<UnitResult> {
  const resumed = progressFrom(job.ctx.checkpoint);
  if (job.ctx.checkpoint && !resumed) job.ctx.logger.warn({ unitId: job.ctx.unit.id }, 'linear checkpoint ignored');
  const progress = resumed ?? freshProgress();
  try {
    return await readFamily(job, progress);
  } catch (err) {
    if (err instanceof RateLimitError) throw err.withCheckpoint(familyCheckpoint(progress));
    throw err;
  }
}

/** Reads pages from where `p` stands on, moving `p` past each page once all its rows are written. */
async function readFamily(job: Job, p: FamilyProgress): Promise<UnitResult> {
  const plan = familyPlan(job.datasets);
  const query = issuesQuery(plan.items, plan.kinds);
  const trail = job.pages.trail(`query ${query.name}`);
  for (;;) {
    trail.visit(`${p.upTo ?? ''} ${p.atUpTo.length} ${p.after ?? ''}`);
    const data: { issues: LnConnection<LnIssue> } = await job.client.query(query.name, query.text, {
      filter: issueFilter(job.teams, job.since, job.before, p.upTo),
      // Room for the issues at `upTo` met again, so a page still brings `pageSize` new ones.
      first: job.pageSize + Math.min(p.atUpTo.length, REREAD_ROOM),
      after: p.after,
      ...(plan.kinds.length > 0 ? { nested: job.nestedPageSize } : {}),
    });
    const page = data.issues.nodes;
    const issues = page.filter((i) => !writtenAlready(p, i));
    for (const issue of issues) await completeNested(job, issue, plan.kinds);
    await writeFamilyPage(job, plan, issues, p.counts);
    for (const i of issues) p.order.see(i.updatedAt);
    passPage(p, issues);
    const { hasNextPage, endCursor } = data.issues.pageInfo;
    if (!hasNextPage || page.length === 0) break;
    // A page wholly at `upTo` cannot move the keyset on: step through that run with the cursor.
    const stuck = page.every((i) => p.upTo !== null && Date.parse(i.updatedAt) === Date.parse(p.upTo));
    p.after = stuck ? endCursor : null;
    p.pages++;
    if (!job.backfill && p.pages >= job.maxPages && p.order.ascending) return familyResult(p.counts, p.order.latest);
  }
  return familyResult(p.counts);
}

/**
 * Reads these issues (by id, archived ones included, whatever their team) with the family the
 * unit's datasets need, in pages of `pageSize` ids, and writes each page like a family read's; adds
 * the rows written to `counts` (by surface). An id Linear no longer has is simply not written.
 */
export async function familyByIds(job: Job, ids: readonly string[], counts: Record<string, number>): Promise<void> {
  const plan = familyPlan(job.datasets);
  const query = issuesQuery(plan.items, plan.kinds);
  for (let n = 0; n < ids.length; n += job.pageSize) {
    const part = ids.slice(n, n + job.pageSize);
    const trail = job.pages.trail(`query ${query.name} (by id)`);
    let after: string | null = null;
    for (;;) {
      trail.visit(after);
      const data: { issues: LnConnection<LnIssue> } = await job.client.query(query.name, query.text, {
        filter: issueIdsFilter(part),
        first: part.length,
        after,
        ...(plan.kinds.length > 0 ? { nested: job.nestedPageSize } : {}),
      });
      const issues = data.issues.nodes;
      for (const issue of issues) await completeNested(job, issue, plan.kinds);
      const page: FamilyCounts = { work_items: 0, work_item_comments: 0, work_item_events: 0 };
      await writeFamilyPage(job, plan, issues, page);
      for (const [surface, rows] of Object.entries(page)) counts[surface] = (counts[surface] ?? 0) + rows;
      const { hasNextPage, endCursor } = data.issues.pageInfo;
      if (!hasNextPage || !endCursor || issues.length === 0) break;
      after = endCursor;
    }
  }
}

async function writeFamilyPage(job: Job, plan: FamilyPlan, issues: LnIssue[], counts: FamilyCounts): Promise<void> {
  const s = job.scope;
  if (plan.items)
    counts.work_items += await writeRows(
      job.ctx,
      'work_items',
      issues.map((i) => workItemRow(s, i)),
    );
  if (plan.comments) {
    const rows = issues.flatMap((i) => (i.comments?.nodes ?? []).map((c) => commentRow(s, i.id, c)));
    counts.work_item_comments += await writeRows(job.ctx, 'work_item_comments', rows);
  }
  if (plan.history) {
    const rows = issues.flatMap((i) => (i.history?.nodes ?? []).flatMap((h) => eventRows(s, i.id, h)));
    counts.work_item_events += await writeRows(job.ctx, 'work_item_events', rows);
  }
}

/** A family unit's result: its rows per surface (and its watermark, when it stopped early). */
export function familyResult(counts: Record<string, number>, watermark?: Date | null): UnitResult {
  const touched = Object.keys(counts).filter((k) => counts[k]! > 0);
  const r: UnitResult = { items: Object.values(counts).reduce((a, b) => a + b, 0), touchedSurfaces: touched };
  if (watermark !== undefined) r.watermark = watermark;
  for (const [k, v] of Object.entries(counts)) r[k] = v;
  return r;
}

/** Reads the rest of each nested connection that overflowed its first page, appending to the issue's nodes. */
async function completeNested(job: Job, issue: LnIssue, kinds: readonly NestedKind[]): Promise<void> {
  for (const kind of kinds) {
    const conn = issue[kind] as LnConnection<unknown> | undefined;
    if (!conn) continue;
    let info = conn.pageInfo;
    const q = issueConnectionQuery(kind);
    const trail = job.pages.trail(`query ${q.name} (${kind} of issue ${issue.id})`);
    while (info.hasNextPage && info.endCursor) {
      trail.visit(info.endCursor);
      const data: { issue: Record<string, LnConnection<unknown>> } = await job.client.query(q.name, q.text, {
        id: issue.id,
        first: job.pageSize,
        after: info.endCursor,
      });
      const page = data.issue[kind]!;
      conn.nodes.push(...page.nodes);
      info = page.pageInfo;
    }
    conn.pageInfo = info;
  }
}
