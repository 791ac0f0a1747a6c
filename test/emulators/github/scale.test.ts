/**
 * The benchmark scale: ≥ 20,000 issues and ≥ 5,000 pull requests with comments and reviews held
 * as compact records, and since / sort still exact when paging through them over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGithubEmulator, type GithubEmulator } from '../../../src/emulators/github/index.js';
import { getAll } from './helpers.js';

const NOW = new Date('2026-06-01T00:00:00Z');
let e: GithubEmulator;
let heapGrowth = 0;

beforeAll(async () => {
  const before = process.memoryUsage().heapUsed;
  e = await startGithubEmulator({ seed: 2026, now: NOW, scale: 'bench' });
  heapGrowth = process.memoryUsage().heapUsed - before;
}, 120_000);
afterAll(async () => e.close());

describe('bench scale', () => {
  it('holds ≥ 20,000 issues and ≥ 5,000 pull requests with comments and reviews in little memory', () => {
    let issues = 0;
    let pulls = 0;
    let reviews = 0;
    let comments = 0;
    for (const repo of e.data.repos) {
      comments += repo.comments.length;
      for (const item of repo.items) {
        if (item.pull) pulls++;
        else issues++;
        reviews += item.pull?.reviews.length ?? 0;
      }
    }
    expect(issues).toBeGreaterThanOrEqual(20_000);
    expect(pulls).toBeGreaterThanOrEqual(5_000);
    expect(comments).toBeGreaterThan(issues);
    expect(reviews).toBeGreaterThan(pulls);
    expect(heapGrowth).toBeLessThan(300 * 1024 * 1024);
  });

  it('pages an updated-since window exactly, oldest update first', async () => {
    const repo = e.data.repos[1]!;
    const since = NOW.getTime() - 7 * 86_400_000;
    const path = `/repos/emulated-org/${repo.name}/issues?state=all&sort=updated&direction=asc&per_page=100`;
    const { items, pages } = await getAll(e, `${path}&since=${new Date(since).toISOString()}`);
    const expected = repo.items
      .filter((i) => i.updatedAt >= since)
      .sort((a, b) => a.updatedAt - b.updatedAt || a.id - b.id)
      .map((i) => i.number);
    expect(expected.length).toBeGreaterThan(100);
    expect(pages.length).toBe(Math.ceil(expected.length / 100));
    expect(items.map((i) => i.number)).toEqual(expected);
  }, 120_000);
});
