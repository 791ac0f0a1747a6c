/** What a complete GitHub sync of an emulated organisation stores: every normalized key, per table. */
import type { ItemRecord, OrgData } from '../../src/emulators/github/index.js';

export const SURFACES = [
  'work_items',
  'pull_requests',
  'work_item_comments',
  'pull_request_reviews',
  'commits',
] as const;
export type Surface = (typeof SURFACES)[number];

/**
 * Per table, each expected `external_id` with the issue it stands for (work items) or nothing:
 * issues and pull requests as `owner/repo#number`, issue comments (not those on pull requests)
 * and reviews by id, the default branch's commits from `since` on by SHA.
 */
export function expectedRows(data: OrgData, since = 0): Record<Surface, Map<string, ItemRecord | null>> {
  const out = Object.fromEntries(SURFACES.map((s) => [s, new Map<string, ItemRecord | null>()])) as Record<
    Surface,
    Map<string, ItemRecord | null>
  >;
  for (const repo of data.repos) {
    const container = `${data.org.login}/${repo.name}`;
    for (const item of repo.items) {
      const key = `${container}#${item.number}`;
      if (item.pull) {
        out.pull_requests.set(key, item);
        for (const review of item.pull.reviews) out.pull_request_reviews.set(String(review.id), null);
      } else {
        out.work_items.set(key, item);
      }
    }
    for (const c of repo.comments) if (!c.item.pull) out.work_item_comments.set(String(c.id), null);
    for (const c of repo.commits) if (c.date >= since) out.commits.set(c.sha, null);
  }
  return out;
}

const IN_PROGRESS = new Set(['in progress', 'in-progress', 'in_progress']);

/**
 * Each issue's expected `started_at` (`owner/repo#number` → epoch ms, or null): its first `labeled`
 * event adding an in-progress label, however often the label came and went afterwards.
 */
export function expectedStarts(data: OrgData): Map<string, number | null> {
  const out = new Map<string, number | null>();
  for (const repo of data.repos) {
    for (const item of repo.items) {
      if (item.pull) continue;
      const starts = item.events
        .filter((e) => e.event === 'labeled' && e.label && IN_PROGRESS.has(e.label.name.toLowerCase()))
        .map((e) => e.createdAt);
      out.set(`${data.org.login}/${repo.name}#${item.number}`, starts.length > 0 ? Math.min(...starts) : null);
    }
  }
  return out;
}
