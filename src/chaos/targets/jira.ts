/**
 * The Jira target of `syncrelay chaos --provider jira`: the Jira emulator on 127.0.0.1 at a small
 * scale (three projects of about 150 issues each, with comments, changelogs, boards and sprints,
 * all updated within the provider's initial depth), its search 3 s behind its writes (always: that
 * is how Jira's search behaves), hidden users and short user pages as it has them by default, and
 * its own random API token. Hostile: the emulator's limit answers (429 with `Retry-After` of 1–2 s,
 * on any endpoint and on search), 5xx and slow answers at low odds, and edits during reads (the
 * emulator's churn: transitions, comments, comment edits, label, assignee and summary changes, new
 * issues, issues deleted at JIRA_CHAOS_DELETE_SHARE of the edits and comments deleted at
 * JIRA_CHAOS_COMMENT_DELETE_SHARE). The ground truth is read
 * from the emulator's records, mapped as the provider maps them (src/providers/jira/mapping.ts)
 * but computed here on its own.
 */
import {
  jiraDemoIntegration,
  type DeletedComment,
  deletedSprints,
  deletedUsers,
  deleteSprint,
  deleteUser,
  reachableUsers,
  startJiraEmulator,
  type FaultSpec,
  type IssueRec,
  type JiraEmulator,
  type SiteData,
} from '../../emulators/jira/index.js';
import type { ChaosTarget, GroundTruth, TargetOptions, TruthTable } from './target.js';

/** Search sees a change this long after it was made. */
export const JIRA_CHAOS_SEARCH_LAG_MS = 3_000;

/** Small enough that a run of every dataset takes seconds; `days` within the provider's 30-day initial depth. */
const SCALE = { projects: 3, issues: 450, users: 12, maxComments: 4, maxHistories: 3, longLists: 3, days: 20 };

/** The share of the churn's edits that delete their issue (a verify run tombstones them). */
export const JIRA_CHAOS_DELETE_SHARE = 0.05;

/** The share of the churn's edits that delete a comment (a verify run tombstones it). */
export const JIRA_CHAOS_COMMENT_DELETE_SHARE = 0.03;

/** A budget no chaos run spends: the faults supply the limit answers. */
const RATE_LIMIT = { limit: 1_000_000_000, windowSeconds: 60 };

/** The faults while hostile: each rare enough that the provider's retries mostly carry a run through. */
export const JIRA_CHAOS_FAULTS: readonly FaultSpec[] = [
  { kind: 'rate-limit', probability: 0.01, retryAfter: 1 },
  { kind: 'rate-limit', path: '/rest/api/3/search/jql', probability: 0.03, retryAfter: 2 },
  { kind: 'server-error', probability: 0.01, status: 500 },
  { kind: 'server-error', probability: 0.01, status: 502 },
  { kind: 'server-error', probability: 0.01, status: 503 },
  { kind: 'server-error', probability: 0.005, status: 504 },
  { kind: 'slow', probability: 0.05, delayMs: 150 },
  { kind: 'slow', probability: 0.02, delayMs: 400 },
];

/** How long settled() waits past the search lag before it gives up. */
const SETTLE_MARGIN_MS = 30_000;
const SETTLE_POLL_MS = 50;

/** Starts the Jira emulator for a chaos run (quiet until hostile(true)). */
export async function startJiraTarget(o: TargetOptions): Promise<ChaosTarget> {
  const emu = await startJiraEmulator({
    host: '127.0.0.1',
    port: 0,
    seed: o.seed,
    scale: SCALE,
    searchLagMs: JIRA_CHAOS_SEARCH_LAG_MS,
    rateLimit: RATE_LIMIT,
  });
  let wasHostile = false;
  return {
    provider: 'jira',
    url: emu.url,
    integration: jiraDemoIntegration(emu),
    hostile(on) {
      if (wasHostile && !on) removeReference(emu.data);
      wasHostile = on;
      emu.setFaults(on ? [...JIRA_CHAOS_FAULTS] : []);
      emu.setChurn(on ? o.editsPerSecond : 0, JIRA_CHAOS_DELETE_SHARE);
      emu.setCommentDeleteShare(JIRA_CHAOS_COMMENT_DELETE_SHARE);
    },
    settled: () => searchSettled(emu),
    truth: () => jiraGroundTruth(emu.data, emu.churnDeleted(), emu.deletedComments()),
    stats: () => statsOf(emu),
    close: () => emu.close(),
  };
}

/**
 * As a hostile phase ends, one sprint and one user are deleted from the site (`DELETE
 * /rest/agile/1.0/sprint/{id}`, a user removed by an admin): the runs so far have stored them, and
 * only a verify can find them gone. The last sprint of a board whose sprints are read, and the last
 * user the assignable-user search reaches (never the credential's own).
 */
function removeReference(data: SiteData): void {
  const boards = new Set(data.boards.filter((b) => b.sprints && SPRINT_BOARDS.has(b.type)).map((b) => b.id));
  const sprint = data.sprints.filter((sp) => boards.has(sp.boardId)).at(-1);
  if (sprint) deleteSprint(data, sprint.id);
  const user = reachableUsers(data)
    .filter((u) => u.accountId !== data.users[0]?.accountId)
    .at(-1);
  if (user) deleteUser(data, user.accountId);
}

/** Resolves once search sees every change made so far (the emulator says when); rejects past lag + margin. */
async function searchSettled(emu: JiraEmulator): Promise<void> {
  const deadline = Date.now() + emu.searchLagMs + SETTLE_MARGIN_MS;
  while (!emu.searchSettled()) {
    if (Date.now() > deadline) {
      throw new Error(`the Jira emulator's search did not catch up within ${emu.searchLagMs + SETTLE_MARGIN_MS} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
  }
}

/** Requests (all so far), answers of injected faults and slow answers (in the kept log), and churn edits. */
function statsOf(emu: JiraEmulator): Record<string, number> {
  const out: Record<string, number> = {
    requests: emu.requestLog.reduce((n, e) => Math.max(n, e.seq), 0),
    faults: 0,
    slow: 0,
    limited: 0,
    serverErrors: 0,
  };
  for (const e of emu.requestLog) {
    if (e.fault === 'slow') out.slow! += 1;
    else if (e.fault !== null) out.faults! += 1;
    if (e.status === 429) out.limited! += 1;
    if (e.status >= 500) out.serverErrors! += 1;
  }
  const churn = emu.churnStats();
  out.edits = churn.edits;
  out.deletions = churn.byKind.delete;
  for (const [kind, n] of Object.entries(churn.byKind)) out[`edits.${kind}`] = n;
  return out;
}

/** Board types whose sprints the provider reads (a `simple` board without sprints has none). */
const SPRINT_BOARDS = new Set(['scrum', 'simple']);

/**
 * What a complete read of the site stores, by table: projects (project id), members (account ids
 * the assignable-user search can return; `deleted`: the users deleted from the site), sprints
 * (sprint id; `deleted`: the sprints deleted), work items (issue id, `updated`),
 * comments (comment id, `updated`) and work-item events (`<issue id>:<history id>:<n>`, a label
 * change one per label added or removed: `…:<n>:+label` / `…:<n>:-label`); `deleted`, the ids of
 * the issues deleted from the site, are the work-items table's `deleted`; the comments deleted from
 * issues still there (`deletedComments`) are the comments table's `deleted` (their issue's row holds
 * them in the project's scope, so the verify confirms them). The comments of a deleted issue are held
 * to neither: gone with it, not in the rows.
 */
export function jiraGroundTruth(
  data: SiteData,
  deleted: readonly string[] = [],
  deletedComments: readonly DeletedComment[] = [],
): GroundTruth {
  const issues = data.projects.flatMap((p) => p.issues);
  const boards = new Set(data.boards.filter((b) => b.sprints && SPRINT_BOARDS.has(b.type)).map((b) => b.id));
  return [
    presence(
      'projects',
      data.projects.map((p) => p.id),
    ),
    {
      ...presence(
        'members',
        reachableUsers(data).map((u) => u.accountId),
      ),
      deleted: new Set(deletedUsers(data)),
    },
    {
      ...presence(
        'sprints',
        data.sprints.filter((s) => boards.has(s.boardId)).map((s) => String(s.id)),
      ),
      deleted: new Set(deletedSprints(data).map(String)),
    },
    {
      ...versioned(
        'work_items',
        issues.map((i) => [i.id, i.updated]),
      ),
      deleted: new Set(deleted),
    },
    {
      ...versioned(
        'work_item_comments',
        issues.flatMap((i) => i.comments.map((c) => [c.id, c.updated] as [string, number])),
      ),
      deleted: new Set(deletedComments.filter((d) => data.issuesById.has(d.issueId)).map((d) => d.comment.id)),
    },
    presence('work_item_events', issues.flatMap(eventIds)),
  ];
}

function presence(table: TruthTable['table'], ids: readonly string[]): TruthTable {
  return { table, versionColumn: null, rows: new Map(ids.map((id) => [id, null])) };
}

function versioned(table: TruthTable['table'], rows: readonly (readonly [string, number])[]): TruthTable {
  return { table, versionColumn: 'updated_at', rows: new Map(rows) };
}

/** The event ids of an issue's changelog: status and assignee items once, label items once per label changed. */
function eventIds(issue: IssueRec): string[] {
  const out: string[] = [];
  for (const h of issue.histories) {
    h.items.forEach((item, n) => {
      const id = `${issue.id}:${h.id}:${n}`;
      if (item.field === 'status' || item.field === 'assignee') out.push(id);
      if (item.field !== 'labels') return;
      const before = words(item.fromString);
      const after = words(item.toString);
      for (const l of after) if (!before.has(l)) out.push(`${id}:+${l}`);
      for (const l of before) if (!after.has(l)) out.push(`${id}:-${l}`);
    });
  }
  return out;
}

function words(text: string | null): Set<string> {
  return new Set((text ?? '').split(/\s+/).filter((w) => w !== ''));
}
