/**
 * The GitHub emulator's data endpoints: Link pagination, filters and orderings computed
 * independently from `emulator.data`, authentication and repository access, determinism, mutate().
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import {
  countsPerDay,
  startGithubEmulator,
  type GithubEmulator,
  type ItemRecord,
} from '../../../src/emulators/github/index.js';
import { get, getAll, ms, parseLink, type Json } from './helpers.js';

const NOW = new Date('2026-06-01T12:00:00Z');
const SCALE = {
  repos: 2,
  issues: 240,
  pulls: 80,
  maxComments: 4,
  maxReviews: 3,
  directCommits: 40,
  members: 6,
  days: 60,
};
const ORG = 'emulated-org';

let e: GithubEmulator;
let clock: ManualClock;
const repoPath = () => `/repos/${ORG}/${e.data.repos[0]!.name}`;
const items = () => e.data.repos[0]!.items;
const desc = (key: (i: ItemRecord) => number) => (a: ItemRecord, b: ItemRecord) => key(b) - key(a) || b.id - a.id;

beforeAll(async () => {
  clock = new ManualClock(NOW);
  e = await startGithubEmulator({ seed: 42, now: NOW, clock, scale: SCALE });
});
afterAll(async () => e.close());

describe('Link pagination', () => {
  it('walks ≥ 5 pages by rel="next" with per_page, and each page is GitHub-shaped', async () => {
    const { items: got, pages } = await getAll(e, `${repoPath()}/issues?state=all&per_page=25`);
    const expected = items()
      .slice()
      .sort(desc((i) => i.createdAt));
    expect(pages.length).toBe(Math.ceil(expected.length / 25));
    expect(pages.length).toBeGreaterThanOrEqual(5);
    expect(got.map((i) => i.number)).toEqual(expected.map((i) => i.number));
    const repoId = e.data.repos[0]!.id;
    const base = `${e.url}/repositories/${repoId}/issues?state=all&per_page=25`;
    const last = pages.length;
    expect(pages[0]!.headers.get('link')).toBe(`<${base}&page=2>; rel="next", <${base}&page=${last}>; rel="last"`);
    expect(pages[1]!.headers.get('link')).toBe(
      `<${base}&page=1>; rel="prev", <${base}&page=3>; rel="next", <${base}&page=${last}>; rel="last", ` +
        `<${base}&page=1>; rel="first"`,
    );
    expect(pages.at(-1)!.headers.get('link')).toBe(
      `<${base}&page=${last - 1}>; rel="prev", <${base}&page=1>; rel="first"`,
    );
  });

  it('defaults per_page to 30, caps it at 100, and sends no Link when one page holds everything', async () => {
    const all = items().filter((i) => i.closedAt === null).length;
    expect((await get(e, `${repoPath()}/issues`)).body).toHaveLength(Math.min(30, all));
    const big = await get(e, `${repoPath()}/issues?state=all&per_page=500`);
    expect(big.body).toHaveLength(100);
    expect(parseLink(big.headers.get('link')).last).toContain('per_page=500&page=2');
    const labels = await get(e, `${repoPath()}/labels`);
    expect(labels.body).toHaveLength(e.data.repos[0]!.labels.length);
    expect(labels.headers.get('link')).toBeNull();
  });

  it('keeps every query parameter in the links, including since', async () => {
    const since = '2026-05-01T00:00:00Z';
    const page = await get(e, `${repoPath()}/issues?since=${since}&state=all&per_page=5&sort=updated`);
    const next = new URL(parseLink(page.headers.get('link')).next!);
    expect(Object.fromEntries(next.searchParams)).toEqual({
      since,
      state: 'all',
      per_page: '5',
      sort: 'updated',
      page: '2',
    });
  });
});

describe('filters and orderings', () => {
  it('issues: state, since (updated_at ≥ since), sort=updated, direction=asc', async () => {
    const since = NOW.getTime() - 20 * 86_400_000;
    const sinceIso = new Date(since).toISOString();
    const { items: got } = await getAll(
      e,
      `${repoPath()}/issues?state=closed&since=${sinceIso}&sort=updated&direction=asc&per_page=100`,
    );
    const expected = items()
      .filter((i) => i.closedAt !== null && i.updatedAt >= since)
      .sort((a, b) => a.updatedAt - b.updatedAt || a.id - b.id);
    expect(expected.length).toBeGreaterThan(5);
    expect(got.map((i) => i.number)).toEqual(expected.map((i) => i.number));
    expect(got.every((i) => ms(i.updated_at) >= since && i.state === 'closed')).toBe(true);
  });

  it('issues: sort=comments, labels (all of them), pull requests carry pull_request', async () => {
    const { items: got } = await getAll(e, `${repoPath()}/issues?state=all&sort=comments&per_page=100`);
    const expected = items()
      .slice()
      .sort(desc((i) => i.comments.length));
    expect(got.map((i) => i.number)).toEqual(expected.map((i) => i.number));
    const pulls = got.filter((i) => i.pull_request);
    expect(pulls.length).toBe(items().filter((i) => i.pull).length);
    expect(pulls.every((i) => i.pull_request.url === `${e.url}${repoPath()}/pulls/${i.number}`)).toBe(true);
    const bug = await getAll(e, `${repoPath()}/issues?state=all&labels=bug&per_page=100`);
    expect(bug.items.map((i) => i.number).sort((a, b) => a - b)).toEqual(
      items()
        .filter((i) => i.labels.some((l) => l.name === 'bug'))
        .map((i) => i.number),
    );
  });

  it('pulls: state, sort=popularity (asc by default), full pull with size and merge fields', async () => {
    const { items: got } = await getAll(e, `${repoPath()}/pulls?state=all&sort=popularity&per_page=100`);
    const expected = items()
      .filter((i) => i.pull)
      .sort((a, b) => a.comments.length - b.comments.length || a.id - b.id);
    expect(got.map((p) => p.number)).toEqual(expected.map((p) => p.number));
    const merged = expected.find((i) => i.pull?.mergedAt)!;
    const full = (await get(e, `${repoPath()}/pulls/${merged.number}`)).body;
    expect(full).toMatchObject({
      merged: true,
      merged_at: new Date(merged.pull!.mergedAt!).toISOString().replace('.000', ''),
      merge_commit_sha: merged.pull!.mergeSha,
      additions: merged.pull!.additions,
      deletions: merged.pull!.deletions,
      changed_files: merged.pull!.changedFiles,
      state: 'closed',
    });
    const issueForm = (await get(e, `${repoPath()}/issues/${merged.number}`)).body;
    expect(issueForm.pull_request.merged_at).toBe(full.merged_at);
    const plain = items().find((i) => !i.pull)!;
    expect((await get(e, `${repoPath()}/pulls/${plain.number}`)).status).toBe(404);
  });

  it('comments: repository-wide ascending by id without sort, since + sort=updated&direction=desc', async () => {
    const repo = e.data.repos[0]!;
    const { items: all } = await getAll(e, `${repoPath()}/issues/comments?per_page=100`);
    expect(all.map((c) => c.id)).toEqual(repo.comments.map((c) => c.id));
    expect(all.map((c) => c.id)).toEqual(all.map((c) => c.id).sort((a, b) => a - b));
    const since = NOW.getTime() - 10 * 86_400_000;
    const { items: recent } = await getAll(
      e,
      `${repoPath()}/issues/comments?since=${new Date(since).toISOString()}&sort=updated&direction=desc&per_page=7`,
    );
    const expected = repo.comments
      .filter((c) => c.updatedAt >= since)
      .sort((a, b) => b.updatedAt - a.updatedAt || b.id - a.id);
    expect(recent.map((c) => c.id)).toEqual(expected.map((c) => c.id));
    const withComments = repo.items.find((i) => i.comments.length > 1)!;
    const one = await get(e, `${repoPath()}/issues/${withComments.number}/comments`);
    expect(one.body.map((c: Json) => c.id)).toEqual(withComments.comments.map((c) => c.id));
  });

  it('events: repository-wide and per issue in no time order (GitHub documents none), each once', async () => {
    const repo = e.data.repos[0]!;
    const { items: listed } = await getAll(e, `${repoPath()}/issues/events?per_page=50`);
    const ids = listed.map((x: Json) => x.id as number);
    expect([...ids].sort((a, b) => a - b)).toEqual(repo.events.map((x) => x.id).sort((a, b) => a - b));
    const times = listed.map((x: Json) => Date.parse(x.created_at as string));
    expect(times).not.toEqual([...times].sort((a, b) => b - a)); // not newest first
    expect(times).not.toEqual([...times].sort((a, b) => a - b)); // nor oldest first
    const first = listed[0];
    expect(first.issue.number).toBe(repo.events.find((x) => x.id === first.id)!.item.number);
    const closedPull = repo.items.find((i) => i.pull?.mergedAt)!;
    const events = (await get(e, `${repoPath()}/issues/${closedPull.number}/events`)).body as Json[];
    expect(events.map((x) => x.id).sort()).toEqual(closedPull.events.map((x) => x.id).sort());
    const merged = events.find((x) => x.event === 'merged')!;
    expect(merged.commit_id).toBe(closedPull.pull!.mergeSha);
  });

  it('"in progress" labeled and unlabeled events, in GitHub\'s shape; the label follows the last one', async () => {
    const repo = e.data.repos[0]!;
    const progress = (i: ItemRecord) => i.events.filter((x) => x.label?.name === 'in progress');
    const started = repo.items.filter((i) => !i.pull && progress(i).length > 0);
    expect(started.length).toBeGreaterThan(repo.items.length / 4);
    expect(repo.items.filter((i) => i.pull && progress(i).length > 0)).toEqual([]);
    // Some issues lose the label, some of them get it back: the first labeled event is the start.
    const relabelled = started.find(
      (i) =>
        progress(i)
          .map((x) => x.event)
          .join() === 'labeled,unlabeled,labeled',
    )!;
    expect(relabelled).toBeDefined();
    expect(
      started.some(
        (i) =>
          progress(i)
            .map((x) => x.event)
            .join() === 'labeled,unlabeled',
      ),
    ).toBe(true);
    for (const i of started) {
      const events = progress(i);
      const last = events.at(-1)!;
      expect(
        i.labels.some((l) => l.name === 'in progress'),
        `#${i.number}`,
      ).toBe(last.event === 'labeled');
      const times = events.map((x) => x.createdAt);
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(times[0]!).toBeGreaterThanOrEqual(i.createdAt);
      if (i.closedAt !== null) expect(last.createdAt).toBeLessThanOrEqual(i.closedAt);
    }
    const served = (await get(e, `${repoPath()}/issues/${relabelled.number}/events`)).body as Json[];
    const labeled = served
      .filter((x) => x.event === 'labeled' && x.label?.name === 'in progress')
      .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at))[0]!;
    expect(Object.keys(labeled).sort()).toEqual(
      [
        'id',
        'node_id',
        'url',
        'actor',
        'event',
        'commit_id',
        'commit_url',
        'created_at',
        'label',
        'performed_via_github_app',
      ].sort(),
    );
    expect(labeled.label).toEqual({ name: 'in progress', color: 'fbca04' });
    expect(labeled.created_at).toBe(new Date(progress(relabelled)[0]!.createdAt).toISOString().replace('.000', ''));
    expect(served.find((x) => x.event === 'unlabeled')!.label).toEqual({ name: 'in progress', color: 'fbca04' });
    const labels = (await get(e, `${repoPath()}/labels`)).body as Json[];
    expect(labels.map((l) => l.name)).toContain('in progress');
  });

  it('reviews, commits (since/until/sha) and one commit with stats', async () => {
    const repo = e.data.repos[0]!;
    const reviewed = repo.items.find((i) => (i.pull?.reviews.length ?? 0) > 1)!;
    const reviews = (await get(e, `${repoPath()}/pulls/${reviewed.number}/reviews`)).body;
    expect(reviews.map((r: Json) => [r.id, r.state])).toEqual(reviewed.pull!.reviews.map((r) => [r.id, r.state]));
    const since = NOW.getTime() - 30 * 86_400_000;
    const until = NOW.getTime() - 10 * 86_400_000;
    const q = `since=${new Date(since).toISOString()}&until=${new Date(until).toISOString()}&per_page=100`;
    const { items: commits } = await getAll(e, `${repoPath()}/commits?${q}`);
    const expected = repo.commits.filter((c) => c.date >= since && c.date <= until).reverse();
    expect(commits.map((c) => c.sha)).toEqual(expected.map((c) => c.sha));
    const middle = repo.commits[10]!;
    const fromMiddle = await get(e, `${repoPath()}/commits?sha=${middle.sha}&per_page=100`);
    expect(fromMiddle.body.map((c: Json) => c.sha)).toEqual(
      repo.commits
        .slice(0, 11)
        .reverse()
        .map((c) => c.sha),
    );
    const one = (await get(e, `${repoPath()}/commits/${middle.sha}`)).body;
    expect(one.stats).toEqual({
      total: middle.additions + middle.deletions,
      additions: middle.additions,
      deletions: middle.deletions,
    });
    expect(one.parents[0].sha).toBe(repo.commits[9]!.sha);
    expect((await get(e, `${repoPath()}/commits/${'f'.repeat(40)}`)).status).toBe(422);
  });

  it('an invalid enumeration or time is a 422 naming the field', async () => {
    const bad = await get(e, `${repoPath()}/issues?state=bogus`);
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({
      message: 'Validation Failed',
      errors: [{ field: 'state', value: 'bogus', code: 'invalid', resource: 'Issue' }],
      status: '422',
    });
    expect((await get(e, `${repoPath()}/issues?since=yesterday`)).body.errors[0].field).toBe('since');
  });
});

describe('organisation, authentication and access', () => {
  it('lists repositories, members, assignees and collaborators', async () => {
    const repos = (await get(e, `/orgs/${ORG}/repos?sort=full_name`)).body;
    expect(repos.map((r: Json) => r.name)).toEqual(e.data.repos.map((r) => r.name).sort());
    expect((await get(e, `/orgs/${ORG}/members`)).body.map((u: Json) => u.login)).toEqual(
      e.data.members.map((u) => u.login),
    );
    const collaborators = (await get(e, `${repoPath()}/collaborators`)).body;
    expect(collaborators.map((u: Json) => u.login)).toEqual(e.data.repos[0]!.collaborators.map((u) => u.login));
    expect(collaborators[0].permissions).toMatchObject({ pull: true, push: true });
    expect((await get(e, `${repoPath()}/assignees`)).body).toHaveLength(collaborators.length);
    expect((await get(e, `/orgs/other-org/repos`)).status).toBe(404);
  });

  it('GET /user answers with the token’s own user', async () => {
    const me = await get(e, '/user');
    expect(me.body).toMatchObject({ login: e.data.members[0]!.login, id: e.data.members[0]!.id, type: 'User' });
    const limited = e.tokens.find((t) => t.id === 'public-only')!.token;
    expect((await get(e, '/user', limited)).body.login).toBe(e.data.members[1]!.login);
  });

  it('401 without a token or with a wrong one; token and Bearer both work', async () => {
    const none = await get(e, repoPath(), null);
    expect(none.status).toBe(401);
    expect(none.body).toEqual({
      message: 'Requires authentication',
      documentation_url: 'https://docs.github.com/rest',
      status: '401',
    });
    const wrong = await get(e, repoPath(), 'ghp_wrong');
    expect(wrong.status).toBe(401);
    expect(wrong.body.message).toBe('Bad credentials');
    const bearer = await fetch(`${e.url}${repoPath()}`, { headers: { authorization: `Bearer ${e.token}` } });
    expect(bearer.status).toBe(200);
  });

  it('a token without access to a private repository gets 404 there and does not see it listed', async () => {
    const limited = e.tokens.find((t) => t.id === 'public-only')!.token;
    const priv = e.data.repos.find((r) => r.private)!;
    expect((await get(e, `/repos/${ORG}/${priv.name}/issues`, limited)).status).toBe(404);
    expect((await get(e, `/repos/${ORG}/${priv.name}/issues`)).status).toBe(200);
    expect((await get(e, repoPath(), limited)).status).toBe(200);
    const listed = (await get(e, `/orgs/${ORG}/repos`, limited)).body.map((r: Json) => r.name);
    expect(listed).not.toContain(priv.name);
  });

  it('unknown paths are GitHub 404s; /repositories/{id} paths work like /repos/{owner}/{repo}', async () => {
    const miss = await get(e, '/repos/emulated-org/nope/issues');
    expect(miss.status).toBe(404);
    expect((await get(e, '/definitely/not/here')).body).toEqual({
      message: 'Not Found',
      documentation_url: 'https://docs.github.com/rest',
      status: '404',
    });
    const byId = await get(e, `/repositories/${e.data.repos[0]!.id}/issues/1`);
    expect(byId.body.number).toBe(1);
  });

  it('answers If-None-Match with 304 without spending the budget', async () => {
    const first = await get(e, `${repoPath()}/labels`);
    const etag = first.headers.get('etag')!;
    const again = await get(e, `${repoPath()}/labels`, e.token, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.headers.get('x-ratelimit-remaining')).toBe(first.headers.get('x-ratelimit-remaining'));
  });
});

describe('determinism and mutate()', () => {
  it('countsPerDay matches what the API serves (opened, closed, merged per UTC day)', async () => {
    const repo = e.data.repos[0]!;
    const { items: served } = await getAll(e, `${repoPath()}/issues?state=all&per_page=100`);
    const fromApi = new Map<string, Record<string, number>>();
    const bump = (iso: string | null, key: string) => {
      if (!iso) return;
      const day = iso.slice(0, 10);
      const d = fromApi.get(day) ?? {};
      d[key] = (d[key] ?? 0) + 1;
      fromApi.set(day, d);
    };
    for (const i of served) {
      bump(i.created_at, i.pull_request ? 'pullsOpened' : 'issuesOpened');
      bump(i.closed_at, i.pull_request ? 'pullsClosed' : 'issuesClosed');
      bump(i.pull_request?.merged_at ?? null, 'pullsMerged');
    }
    const expected = countsPerDay(e.data, [repo.name]);
    for (const [day, counts] of fromApi) {
      for (const [key, n] of Object.entries(counts))
        expect([day, key, expected.get(day)?.[key as 'pullsMerged']]).toEqual([day, key, n]);
    }
    const totalOpened = [...expected.values()].reduce((n, d) => n + d.issuesOpened + d.pullsOpened, 0);
    expect(totalOpened).toBe(served.length);
  });

  it('the same seed serves the same data; another seed does not', async () => {
    const twin = await startGithubEmulator({ seed: 42, now: NOW, scale: SCALE, token: e.token });
    const other = await startGithubEmulator({ seed: 43, now: NOW, scale: SCALE });
    try {
      const path = `${repoPath()}/issues?state=all&per_page=100&page=2`;
      const strip = (x: GithubEmulator, text: string) => text.replaceAll(x.url, '');
      const a = strip(e, (await get(e, path)).text);
      expect(strip(twin, (await get(twin, path, twin.token)).text)).toBe(a);
      expect(strip(other, (await get(other, path, other.token)).text)).not.toBe(a);
      expect(twin.token).toBe(e.token);
    } finally {
      await twin.close();
      await other.close();
    }
  });

  it('mutate() updates and adds records at the clock’s now, deterministically; since finds exactly those', async () => {
    const later = NOW.getTime() + 3600_000;
    const moved = await startGithubEmulator({ seed: 9, now: NOW, clock: new ManualClock(later), scale: SCALE });
    const twin = await startGithubEmulator({ seed: 9, now: NOW, clock: new ManualClock(later), scale: SCALE });
    try {
      const repo = moved.data.repos[0]!;
      const countBefore = repo.items.length;
      const summary = moved.mutate();
      expect(twin.mutate()).toEqual(summary);
      expect(summary.at).toBe('2026-06-01T13:00:00Z');
      expect(summary.created.length).toBeGreaterThan(0);
      expect(repo.items.length).toBeGreaterThan(countBefore);

      const since = '2026-06-01T12:30:00Z';
      const { items: changed } = await getAll(
        moved,
        `/repos/${ORG}/${repo.name}/issues?state=all&per_page=5&since=${since}`,
      );
      expect(changed.map((i) => `${repo.name}#${i.number}`).sort()).toEqual(
        summary.updated.filter((r) => r.startsWith(`${repo.name}#`)).sort(),
      );
      expect(changed.every((i) => i.updated_at === summary.at)).toBe(true);

      const { items: comments } = await getAll(moved, `/repos/${ORG}/${repo.name}/issues/comments?since=${since}`);
      const inRepo = new Set(repo.comments.map((c) => c.id));
      const expected = [...summary.newComments, ...summary.editedComments].filter((id) => inRepo.has(id));
      expect(comments.map((c) => c.id).sort()).toEqual(expected.sort());
      expect(comments.length).toBeGreaterThan(0);
    } finally {
      await moved.close();
      await twin.close();
    }
  });
});
