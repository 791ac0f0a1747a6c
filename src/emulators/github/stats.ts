/** Expected values computed straight from the records, for tests that check what a sync stored. */
import type { OrgData } from './model.js';

export interface DayCounts {
  issuesOpened: number;
  issuesClosed: number;
  pullsOpened: number;
  pullsClosed: number;
  pullsMerged: number;
  comments: number;
  reviews: number;
}

/**
 * Per UTC day (`YYYY-MM-DD`, ascending): issues and pull requests opened, closed and merged,
 * comments posted and reviews submitted — over every repository, or the ones named.
 */
export function countsPerDay(data: OrgData, repos?: readonly string[]): Map<string, DayCounts> {
  const days = new Map<string, DayCounts>();
  const at = (ms: number): DayCounts => {
    const key = new Date(ms).toISOString().slice(0, 10);
    let d = days.get(key);
    if (!d) {
      d = { issuesOpened: 0, issuesClosed: 0, pullsOpened: 0, pullsClosed: 0, pullsMerged: 0, comments: 0, reviews: 0 };
      days.set(key, d);
    }
    return d;
  };
  for (const repo of data.repos) {
    if (repos && !repos.includes(repo.name)) continue;
    for (const item of repo.items) {
      at(item.createdAt)[item.pull ? 'pullsOpened' : 'issuesOpened']++;
      if (item.closedAt !== null) at(item.closedAt)[item.pull ? 'pullsClosed' : 'issuesClosed']++;
      if (item.pull?.mergedAt) at(item.pull.mergedAt).pullsMerged++;
      for (const r of item.pull?.reviews ?? []) at(r.submittedAt).reviews++;
    }
    for (const c of repo.comments) at(c.createdAt).comments++;
  }
  return new Map([...days].sort(([a], [b]) => a.localeCompare(b)));
}
