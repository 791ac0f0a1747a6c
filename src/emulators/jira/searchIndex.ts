/**
 * The search index, behind the site's records: Jira's `/rest/api/3/search/jql` is eventually
 * consistent ("recent updates might not be immediately visible in the returned search results"),
 * so a change becomes visible to search only `lagMs` after it was made. Search matches and orders
 * issues by the `updated` the index holds; a direct read of an issue is current.
 *
 * The site as generated is indexed already; a later change (a mutation, or a test editing a record)
 * is noticed at the next search and becomes visible at its own `updated` + `lagMs`. An issue created
 * since is not found until then.
 */
import type { IssueRec, ProjectRec } from './model.js';

interface Version {
  updated: number;
  visibleAt: number;
}

export class SearchIndex {
  private readonly versions = new Map<string, Version[]>();

  constructor(
    readonly lagMs: number,
    projects: readonly ProjectRec[],
  ) {
    for (const p of projects) {
      for (const i of p.issues) this.versions.set(i.id, [{ updated: i.updated, visibleAt: Number.NEGATIVE_INFINITY }]);
    }
  }

  /** The `updated` search sees for the issue at `now` (null: not indexed yet). */
  indexedUpdated(issue: IssueRec, now: number): number | null {
    if (this.lagMs === 0) return issue.updated;
    const list = this.notice(issue);
    for (let k = list.length - 1; k >= 0; k--) if (list[k]!.visibleAt <= now) return list[k]!.updated;
    return null;
  }

  /** Whether every change made so far is visible to search at `now`. */
  settled(projects: readonly ProjectRec[], now: number): boolean {
    return projects.every((p) => p.issues.every((i) => this.indexedUpdated(i, now) === i.updated));
  }

  /** The issue's versions, a new one recorded when the record changed since it was last seen. */
  private notice(issue: IssueRec): Version[] {
    let list = this.versions.get(issue.id);
    if (!list) this.versions.set(issue.id, (list = []));
    if (list.at(-1)?.updated !== issue.updated) {
      list.push({ updated: issue.updated, visibleAt: issue.updated + this.lagMs });
      if (list.length > 8) list.shift(); // bounded: an issue changed more often than that shows its later versions
    }
    return list;
  }
}
