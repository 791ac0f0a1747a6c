/**
 * What a complete sync of an emulator's records stores, from the emulator's own data: rows per
 * normalized table (every record once), and the work-item events a set of issues yields.
 */
import type { IssueRec as JiraIssue, SiteData } from '../../src/emulators/jira/index.js';
import type { Workspace } from '../../src/emulators/linear/index.js';

type LinearIssue = Workspace['issues'][number];

/** The Jira changelog fields stored as work-item events (status, assignee and label changes). */
const JIRA_EVENT_FIELDS = new Set(['status', 'assignee', 'labels']);

/** Work-item events of Jira issues: one per changelog item of a stored field. */
export function jiraEventCount(issues: readonly JiraIssue[]): number {
  return issues.reduce(
    (n, i) => n + i.histories.reduce((m, h) => m + h.items.filter((x) => JIRA_EVENT_FIELDS.has(x.field)).length, 0),
    0,
  );
}

/** Rows per normalized table a backfill of the whole Jira site writes. */
export function jiraRows(site: SiteData): Record<string, number> {
  const issues = site.projects.flatMap((p) => p.issues);
  return {
    projects: site.projects.length,
    members: site.users.length,
    sprints: site.sprints.length,
    work_items: issues.length,
    work_item_comments: issues.reduce((n, i) => n + i.comments.length, 0),
    work_item_events: jiraEventCount(issues),
  };
}

/** Work-item events of Linear issues: each state, assignee, added-label and removed-label change. */
export function linearEventCount(issues: readonly LinearIssue[]): number {
  return issues.reduce(
    (n, i) =>
      n +
      i.history.reduce(
        (m, h) =>
          m +
          (h.toStateId ? 1 : 0) +
          (h.toAssigneeId !== undefined ? 1 : 0) +
          (h.addedLabelIds?.length ?? 0) +
          (h.removedLabelIds?.length ?? 0),
        0,
      ),
    0,
  );
}

/** Rows per normalized table a backfill of the whole Linear workspace writes. */
export function linearRows(ws: Workspace): Record<string, number> {
  return {
    teams: ws.teams.length,
    members: ws.users.length,
    projects: ws.projects.length,
    sprints: ws.cycles.length,
    work_items: ws.issues.length,
    work_item_comments: ws.issues.reduce((n, i) => n + i.comments.length, 0),
    work_item_events: linearEventCount(ws.issues),
  };
}
