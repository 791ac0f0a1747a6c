/**
 * The Jira emulator's single sprints and users (routesReference.ts, referenceDeletions.ts): a sprint
 * read and deleted (204; then gone from its board's list, its read 404); a user read, deleted from
 * the site (204; then gone from the assignable search, its read 404), and one no longer assignable
 * (out of the search, its read still 200); Data Center's user read by key and by name; the deleted
 * ids kept for a ground truth.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import {
  deletedSprints,
  deletedUsers,
  deleteUser,
  reachableUsers,
  setAssignable,
  startJiraEmulator,
  type JiraEmulator,
} from '../../../src/emulators/jira/index.js';
import { jiraCall, type Json } from './helpers.js';

const T0 = Date.parse('2026-03-02T12:00:00Z');
let emu: JiraEmulator | undefined;

afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

const start = (flavor: 'cloud' | 'datacenter' = 'cloud') =>
  startJiraEmulator({ clock: new ManualClock(T0), seed: 3, flavor, searchLagMs: 0, scale: { projects: 1 } });

const assignable = async (e: JiraEmulator): Promise<string[]> => {
  const r = await jiraCall(e, '/rest/api/3/user/assignable/search?project=ENG&maxResults=1000');
  return (r.body as Json[]).map((u: Json) => u.accountId as string);
};

describe('Jira emulator: sprints', () => {
  it('reads a sprint; DELETE answers 204, then its board lists it no more and its read is 404', async () => {
    const e = (emu = await start());
    const board = e.data.boards.find((b) => b.sprints)!;
    const sprint = e.data.sprints.find((s) => s.boardId === board.id)!;
    const read = await jiraCall(e, `/rest/agile/1.0/sprint/${sprint.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: sprint.id, name: sprint.name, originBoardId: board.id });

    const del = await jiraCall(e, `/rest/agile/1.0/sprint/${sprint.id}`, { method: 'DELETE' });
    expect(del.status).toBe(204);
    expect((await jiraCall(e, `/rest/agile/1.0/sprint/${sprint.id}`)).status).toBe(404);
    const list = await jiraCall(e, `/rest/agile/1.0/board/${board.id}/sprint?maxResults=50`);
    expect((list.body.values as Json[]).map((s: Json) => s.id)).not.toContain(sprint.id);
    expect((await jiraCall(e, `/rest/agile/1.0/sprint/${sprint.id}`, { method: 'DELETE' })).status).toBe(404);
    expect(deletedSprints(e.data)).toEqual([sprint.id]);
  });
});

describe('Jira emulator: users', () => {
  it('a user deleted from the site leaves the search and its read answers 404', async () => {
    const e = (emu = await start());
    const [gone, kept] = reachableUsers(e.data).slice(1, 3);
    const path = (u: { accountId: string }) => `/rest/api/3/user?accountId=${encodeURIComponent(u.accountId)}`;
    const read = await jiraCall(e, path(gone!));
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ accountId: gone!.accountId, active: true, groups: { size: 1 } });
    expect((await jiraCall(e, '/rest/api/3/user')).status).toBe(400);

    expect((await jiraCall(e, path(gone!), { method: 'DELETE' })).status).toBe(204);
    expect((await jiraCall(e, path(gone!))).status).toBe(404);
    expect(await assignable(e)).not.toContain(gone!.accountId);
    expect(deletedUsers(e.data)).toEqual([gone!.accountId]);

    setAssignable(e.data, kept!.accountId, false);
    expect(await assignable(e)).not.toContain(kept!.accountId);
    expect((await jiraCall(e, path(kept!))).status).toBe(200); // still on the site
    setAssignable(e.data, kept!.accountId, true);
    expect(await assignable(e)).toContain(kept!.accountId);
  });

  it('Data Center reads a user by key or by name; a deleted one is 404', async () => {
    const e = (emu = await start('datacenter'));
    const user = reachableUsers(e.data)[1]!;
    const call = (q: string) => jiraCall(e, `/rest/api/2/user?${q}`, { auth: `Bearer ${e.apiToken}` });
    expect((await call(`key=${user.key}`)).body).toMatchObject({ key: user.key, name: user.name });
    expect((await call(`username=${user.name}`)).status).toBe(200);
    expect((await call('')).status).toBe(400);
    deleteUser(e.data, user.accountId);
    expect((await call(`key=${user.key}`)).status).toBe(404);
    expect((await call(`username=${user.name}`)).status).toBe(404);
  });
});
