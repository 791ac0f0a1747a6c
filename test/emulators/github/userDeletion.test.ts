/**
 * Accounts at the emulator (accounts.ts, routesUsers.ts): an account read by id or by login; a
 * user removed as one repository's assignee (still an account); an account deleted — gone from
 * every repository's assignees and the organisation's members, both reads answering GitHub's 404 —
 * kept in `deletedUsers`; the churn deleting one now and then, drawn from the seed.
 */
import { describe, expect, it } from 'vitest';
import type { GithubEmulator, UserRecord } from '../../../src/emulators/github/index.js';
import { clockedEmulators, get, getAll } from './helpers.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const SCALE = { repos: 2, issues: 20, pulls: 4, maxComments: 1, directCommits: 2, members: 4, days: 5 };
const emulator = clockedEmulators(T0, { seed: 9, scale: SCALE });

const BY_ID_404 = {
  message: 'Not Found',
  documentation_url: 'https://docs.github.com/rest/users/users#get-a-user-using-their-id',
  status: '404',
};

/** The logins of `repo`'s assignees as the emulator lists them. */
async function assignees(e: GithubEmulator, repo = e.data.repos[0]!): Promise<string[]> {
  const { items } = await getAll(e, `/repos/${e.data.org.login}/${repo.name}/assignees?per_page=100`);
  return items.map((u) => u.login as string);
}

/** A member of the organisation who is not its owner (whose account may be deleted). */
const someMember = (e: GithubEmulator): UserRecord => e.data.members.find((u) => u.association === 'MEMBER')!;

describe('GitHub emulator: accounts', () => {
  it('reads an account by id and by login, in the public-user shape; an unknown one is a 404', async () => {
    const { e } = await emulator();
    const user = someMember(e);
    const byId = await get(e, `/user/${user.id}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toMatchObject({ id: user.id, login: user.login, type: 'User', followers: 0 });
    expect(byId.body).toHaveProperty('created_at');
    const byLogin = await get(e, `/users/${user.login.toUpperCase()}`);
    expect(byLogin.status).toBe(200);
    expect(byLogin.body).toEqual(byId.body);
    expect((await get(e, `/user/${e.data.org.id}`)).body).toMatchObject({ type: 'Organization' });
    expect(await get(e, '/user/99999999')).toMatchObject({ status: 404, body: BY_ID_404 });
    expect((await get(e, '/user/not-a-number')).status).toBe(404);
  });

  it('an account deleted: gone from every assignee list and the members, read as 404, kept as deleted', async () => {
    const { e, clock } = await emulator();
    const user = someMember(e);
    const org = e.data.org.login;
    for (const repo of e.data.repos) expect(await assignees(e, repo)).toContain(user.login);
    clock.advance(60_000);
    e.edit.deleteAccount(user.id);
    for (const repo of e.data.repos) expect(await assignees(e, repo)).not.toContain(user.login);
    const members = (await getAll(e, `/orgs/${org}/members`)).items;
    expect(members.map((m) => m.id as number)).not.toContain(user.id);
    expect(await get(e, `/user/${user.id}`)).toMatchObject({ status: 404, body: BY_ID_404 });
    expect(await get(e, `/users/${user.login}`)).toMatchObject({
      status: 404,
      body: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest/users/users#get-a-user' },
    });
    expect(e.data.deletedUsers).toEqual([user]);
    expect(user.deletedAt).toBe(T0 + 60_000);
    expect(() => e.edit.deleteAccount(user.id)).toThrow(`no user ${user.id}`);
    const owner = e.data.users.find((u) => u.association === 'OWNER')!;
    expect(() => e.edit.deleteAccount(owner.id)).toThrow('owns the organisation');
  });

  it('a user removed as one repository’s assignee is still listed by the others, and still an account', async () => {
    const { e } = await emulator();
    const user = someMember(e);
    const [first, second] = e.data.repos;
    e.edit.unassign(user.id, first);
    expect(await assignees(e, first)).not.toContain(user.login);
    expect(await assignees(e, second)).toContain(user.login);
    expect((await get(e, `/user/${user.id}`)).status).toBe(200);
    expect(e.data.deletedUsers).toEqual([]);
    expect(() => e.edit.unassign(user.id, first)).toThrow('is no assignee');
  });

  it('the churn deletes an account now and then, drawn from the seed, never the owner', async () => {
    const { e, clock } = await emulator({ churn: 5 });
    const path = `/repos/${e.data.org.login}/${e.data.repos[0]!.name}/issues?state=all`;
    for (let i = 0; i < 200 && e.data.deletedUsers.length === 0; i++) {
      clock.advance(1000);
      await get(e, path);
    }
    expect(e.data.deletedUsers.length).toBeGreaterThan(0);
    expect(e.activity().accounts).toBe(e.data.deletedUsers.length);
    for (const u of e.data.deletedUsers) {
      expect(u.association).not.toBe('OWNER');
      for (const repo of e.data.repos) expect(repo.collaborators).not.toContain(u);
      expect((await get(e, `/user/${u.id}`)).status).toBe(404);
    }
  });
});
