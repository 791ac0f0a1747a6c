/**
 * The emulator as hostile as GitHub while lists are read: edits between pages (`onPage`, `edit`,
 * `churn`), deleted issues (410), empty repositories (409 on their commits).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { ValidationError } from '../../../src/errors.js';
import { MAX_BURST, startGithubEmulator, type GithubEmulator } from '../../../src/emulators/github/index.js';
import { get, type Json } from './helpers.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const SCALE = { repos: 4, issues: 240, pulls: 40, maxComments: 2, directCommits: 5, members: 3, days: 10 };

let e: GithubEmulator | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

async function start(clock: ManualClock, churn = 0): Promise<GithubEmulator> {
  e = await startGithubEmulator({ seed: 4, clock, now: new Date(T0), scale: SCALE, churn });
  return e;
}

const issuesPath = (emu: GithubEmulator) =>
  `/repos/${emu.data.org.login}/${emu.data.repos[0]!.name}/issues?state=all&sort=updated&direction=asc&per_page=50`;

describe('GitHub emulator: edits between pages', () => {
  it('an edit before page 2 moves the issue to the end: page numbers then skip the boundary issue', async () => {
    const clock = new ManualClock(T0);
    const emu = await start(clock);
    const first = (await get(emu, issuesPath(emu))).body as Json[];
    const boundary = ((await get(emu, `${issuesPath(emu)}&page=2`)).body as Json[])[0];
    emu.onPage('/issues', 2, () => {
      clock.set(T0 + 60_000);
      emu.edit.touch(first[3].number as number);
    });
    await get(emu, issuesPath(emu)); // the 1st request since the hook: nothing yet
    const page2 = (await get(emu, `${issuesPath(emu)}&page=2`)).body as Json[];
    expect(page2[0].number).not.toBe(boundary.number); // shifted onto page 1
    const page1 = (await get(emu, issuesPath(emu))).body as Json[];
    expect(page1.at(-1).number).toBe(boundary.number);
    const all = emu.data.repos[0]!.items;
    expect(all[(first[3].number as number) - 1]!.updatedAt).toBe(T0 + 60_000);
  });

  it('list edits: each later page is preceded by an edit behind the reader; page numbers lose one a page', async () => {
    const clock = new ManualClock(T0);
    const emu = await start(clock);
    clock.set(T0 + 60_000);
    const present = emu.data.repos[0]!.items.length;
    emu.setListEdits(1);
    const read = new Set<number>();
    for (let page = 1; page <= 6; page++)
      for (const i of (await get(emu, `${issuesPath(emu)}&page=${page}`)).body as Json[]) read.add(i.number as number);
    const edited = emu.data.repos[0]!.items.filter((i) => i.updatedAt === T0 + 60_000);
    // Pages 2..6 (the 6th is empty once the edited issues are read again) each came after one edit.
    expect(edited.length).toBe(5);
    expect(read.size).toBeLessThan(present);
    // A keyset read (from the latest updated_at read) sees every issue, edits behind it or not.
    const keyset = new Set<number>();
    let since = '1970-01-01T00:00:00Z';
    for (let n = 0; n < 20; n++) {
      const page = (await get(emu, `${issuesPath(emu)}&since=${since}`)).body as Json[];
      const before = keyset.size;
      for (const i of page) keyset.add(i.number as number);
      if (page.length < 50 || keyset.size === before) break;
      since = page.at(-1)!.updated_at as string;
    }
    expect(keyset.size).toBe(present);
    emu.setListEdits(0);
    expect(() => emu.setListEdits(1.5)).toThrow(ValidationError);
  });

  it('a deleted issue leaves every list and answers 410; a pull request cannot be deleted', async () => {
    const emu = await start(new ManualClock(T0));
    const repo = emu.data.repos[0]!;
    const issue = repo.items.find((i) => !i.pull && i.comments.length > 0)!;
    emu.edit.remove(issue.number);
    const base = `/repos/${emu.data.org.login}/${repo.name}`;
    const gone = await get(emu, `${base}/issues/${issue.number}`);
    expect(gone.status).toBe(410);
    expect(gone.body).toMatchObject({ message: 'This issue was deleted', status: '410' });
    const listed = [];
    for (let p = 1; p <= 3; p++)
      listed.push(...((await get(emu, `${base}/issues?state=all&per_page=100&page=${p}`)).body as Json[]));
    expect(listed.some((i) => i.number === issue.number)).toBe(false);
    expect(listed).toHaveLength(repo.items.length - 1);
    const comment = issue.comments[0]!;
    expect((await get(emu, `${base}/issues/comments/${comment.id}`)).status).toBe(404);
    expect(() => emu.edit.remove(repo.items.find((i) => i.pull)!.number)).toThrow(/pull request/);
  });

  it('churn: edits per second of the clock, made before list answers, at most MAX_BURST at once', async () => {
    const clock = new ManualClock(T0);
    const emu = await start(clock, 2);
    const version = () => emu.data.repos.reduce((n, r) => n + r.version, 0);
    await get(emu, issuesPath(emu));
    const v0 = version();
    clock.advance(1000);
    await get(emu, issuesPath(emu));
    expect(version() - v0).toBe(2);
    clock.advance(3_600_000); // an idle hour owes no more than a burst
    await get(emu, issuesPath(emu));
    expect(version() - v0).toBe(2 + MAX_BURST);
    emu.setChurn(0);
    clock.advance(10_000);
    await get(emu, issuesPath(emu));
    expect(version() - v0).toBe(2 + MAX_BURST);
    await expect(startGithubEmulator({ churn: -1 })).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('GitHub emulator: empty repositories', () => {
  it('every fourth repository is empty: 409 "Git Repository is empty." on its commits, no pull requests', async () => {
    const emu = await start(new ManualClock(T0));
    const empty = emu.data.repos[3]!;
    expect(empty.commits).toHaveLength(0);
    expect(empty.items.some((i) => i.pull)).toBe(false);
    expect(emu.data.repos.reduce((n, r) => n + r.items.filter((i) => i.pull).length, 0)).toBe(SCALE.pulls);
    const base = `/repos/${emu.data.org.login}/${empty.name}`;
    for (const path of [`${base}/commits`, `${base}/commits/main`]) {
      const res = await get(emu, path);
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ message: 'Git Repository is empty.', status: '409' });
    }
    expect((await get(emu, base)).body).toMatchObject({ size: 0 });
    expect((await get(emu, `/repos/${emu.data.org.login}/${emu.data.repos[0]!.name}/commits`)).status).toBe(200);
  });
});
