/**
 * The GitHub emulator's conditional requests: list answers carry an ETag of their body; a request
 * whose `If-None-Match` matches gets a 304 without a body, with the rate-limit headers, not counted
 * against the primary limit, and counted in `activity().notModified`.
 */
import { describe, expect, it } from 'vitest';
import { clockedEmulators, get } from './helpers.js';

const NOW = Date.UTC(2026, 5, 1, 12);
const SCALE = { repos: 1, issues: 40, pulls: 10, maxComments: 2, maxReviews: 2, directCommits: 12, members: 4 };
const DAYS = 10;
const start = clockedEmulators(NOW, { seed: 7, scale: { ...SCALE, days: DAYS }, emptyRepos: [] });

const LISTS = [
  '/issues?state=all&sort=updated&direction=desc&per_page=100',
  '/issues/comments?sort=updated&direction=desc&per_page=100',
  '/pulls?state=all',
  '/commits?per_page=100',
];

describe('GitHub emulator: ETags and 304 Not Modified', () => {
  it.each(LISTS)('%s: an ETag of the body; If-None-Match answers 304, free, with the rate headers', async (list) => {
    const { e } = await start();
    const path = `/repos/${e.data.org.login}/${e.data.repos[0]!.name}${list}`;
    const first = await get(e, path);
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^W\/"[0-9a-f]{40}"$/);
    expect((await get(e, path)).headers.get('etag')).toBe(etag); // the same body, the same tag

    const again = await get(e, path, e.token, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('x-ratelimit-resource')).toBe('core');
    expect(again.headers.get('x-ratelimit-limit')).toBe(first.headers.get('x-ratelimit-limit'));
    // Two 200s were counted; the 304 was not.
    const remaining = (g: typeof first) => Number(g.headers.get('x-ratelimit-remaining'));
    expect(remaining(again)).toBe(remaining(first) - 1);
    expect(Number(again.headers.get('x-ratelimit-used'))).toBe(2);
    expect(e.activity()).toMatchObject({ requests: 3, notModified: 1 });
    expect(e.log.at(-1)!.status).toBe(304);

    // A tag of another answer (or a list of them without this one's) is no match.
    const other = await get(e, path, e.token, { 'if-none-match': 'W/"0000", "1111"' });
    expect(other.status).toBe(200);
    expect(e.activity().notModified).toBe(1);
  });

  it('a change to the list changes its tag: the old one answers 200 with the new body', async () => {
    const { e, clock } = await start();
    const path = `/repos/${e.data.org.login}/${e.data.repos[0]!.name}/issues?state=all&sort=updated&direction=desc`;
    const first = await get(e, path);
    const etag = first.headers.get('etag')!;
    clock.set(NOW + 60_000);
    const touched = e.edit.touch(e.data.repos[0]!.items[0]!.number);
    const changed = await get(e, path, e.token, { 'if-none-match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(changed.body[0].number).toBe(touched.number);
    // The new tag matches in a list of tags too.
    const listed = await get(e, path, e.token, { 'if-none-match': `${etag}, ${changed.headers.get('etag')!}` });
    expect(listed.status).toBe(304);
  });

  it('a spent window answers a conditional request with the limit, not a 304', async () => {
    const { e } = await start({ rateLimit: { limit: 2, windowSeconds: 60 } });
    const path = `/repos/${e.data.org.login}/${e.data.repos[0]!.name}/commits`;
    const etag = (await get(e, path)).headers.get('etag')!;
    expect((await get(e, path, e.token, { 'if-none-match': etag })).status).toBe(304);
    expect((await get(e, path)).status).toBe(200); // the second of two
    expect((await get(e, path, e.token, { 'if-none-match': etag })).status).toBe(403);
  });
});
