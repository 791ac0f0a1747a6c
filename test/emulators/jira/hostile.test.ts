/**
 * The Jira emulator as hostile as Jira Cloud (docs/emulators.md): search lags the data behind a
 * direct read, the assignable-user search filters after paging and stops at 1,000 users, limits are
 * per endpoint without a reset on success, search embeds only the latest changelog entries (with
 * `total` sometimes left out), and team-managed boards have sprints.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { ValidationError } from '../../../src/errors.js';
import {
  DEFAULT_SEARCH_LAG_MS,
  EMBEDDED,
  parseJiraEmulatorArgs,
  reachableUsers,
  startJiraEmulator,
  USER_SEARCH_CAP,
  userPool,
  type JiraEmulator,
} from '../../../src/emulators/jira/index.js';
import { issuesJql } from '../../../src/providers/jira/jql.js';
import { jiraCall, type Json } from './helpers.js';

const T0 = Date.UTC(2026, 2, 2, 12);

let emu: JiraEmulator;
afterEach(async () => {
  await emu.close();
});

/** A GET, or a POST of `body`. */
const call = (path: string, body?: unknown) => jiraCall(emu, path, body === undefined ? {} : { method: 'POST', body });

const start = (clock: ManualClock, o: Parameters<typeof startJiraEmulator>[0] = {}) =>
  startJiraEmulator({ clock, seed: 3, ...o });

describe('Jira emulator: hostile by default', () => {
  it('search sees a change only after the lag; a direct read of the issue is current', async () => {
    const clock = new ManualClock(T0);
    emu = await start(clock, { scale: { projects: 1, issues: 30 } });
    expect(emu.searchLagMs).toBe(DEFAULT_SEARCH_LAG_MS);
    const since = new Date(T0 + 1000);
    const jql = issuesJql({ project: 'ENG', since, before: null, timeZone: 'UTC' });
    const found = async () =>
      (await call('/rest/api/3/search/jql', { jql, fields: ['updated'] })).body.issues.map((i: Json) => i.key);
    expect(await found()).toEqual([]);
    clock.set(T0 + 120_000);
    const m = emu.mutate();
    expect(emu.searchSettled()).toBe(false);
    clock.advance(DEFAULT_SEARCH_LAG_MS - 1);
    expect(await found()).toEqual([]);
    const direct = (await call(`/rest/api/3/issue/${m.touched[0]!}?fields=updated`)).body;
    expect(direct.fields.updated).toBe('2026-03-02T12:02:00.000+0000');
    clock.advance(1);
    expect((await found()).sort()).toEqual([...m.touched].sort());
    expect(emu.searchSettled()).toBe(true);
  });

  it('assignable users: short and empty pages before the end, nothing past the 1,000th of the pool', async () => {
    const clock = new ManualClock(T0);
    emu = await start(clock);
    const page = async (startAt: number) =>
      (await call(`/rest/api/3/user/assignable/search?project=ENG&startAt=${startAt}&maxResults=100`)).body;
    const pages = [await page(0), await page(100), await page(200)];
    expect(pages[0].length).toBeGreaterThan(0);
    expect(pages[0].length).toBeLessThan(100);
    expect(pages[1]).toEqual([]); // empty, and not the end:
    expect(pages[2].length).toBeGreaterThan(0);
    const ids = pages.flat().map((u: Json) => u.accountId);
    expect(new Set(ids)).toEqual(new Set(emu.data.users.map((u) => u.accountId)));
    await emu.close();

    emu = await start(clock, { scale: { users: 1100 } });
    const pool = userPool(emu.data.users, emu.data.hiddenUsers);
    expect(pool.length).toBeGreaterThan(USER_SEARCH_CAP);
    expect(await page(USER_SEARCH_CAP)).toEqual([]);
    const last = (await call(`/rest/api/3/user/assignable/search?project=ENG&startAt=950&maxResults=100`)).body;
    const within = pool.slice(950, USER_SEARCH_CAP).flatMap((u) => (u === null ? [] : [u.accountId]));
    expect(last.map((u: Json) => u.accountId)).toEqual(within);
    expect(reachableUsers(emu.data).length).toBeLessThan(emu.data.users.length);
  });

  it('limits per endpoint: X-RateLimit-* without a reset on success; a 429 brings Retry-After, the reset', async () => {
    const clock = new ManualClock(T0);
    emu = await start(clock, { endpointLimits: { routes: { 'GET /rest/api/3/myself': 2 } } });
    const a = await call('/rest/api/3/myself');
    const b = await call('/rest/api/3/myself');
    expect([a.headers.get('x-ratelimit-limit'), b.headers.get('x-ratelimit-remaining')]).toEqual(['2', '0']);
    expect(b.status).toBe(200);
    expect(b.headers.get('x-ratelimit-reset')).toBeNull();
    expect(b.headers.get('beta-ratelimit')).toMatch(/^"tenant-app-quota";r=\d+;t=\d+$/);
    const other = await call('/rest/api/3/status');
    expect([other.status, other.headers.get('x-ratelimit-limit')]).toEqual([200, '400']);
    const limited = await call('/rest/api/3/myself');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.headers.get('x-ratelimit-reset')).toBe('2026-03-02T12:00Z');
    expect(limited.headers.get('ratelimit-reason')).toBe('jira-burst-based');
    clock.advance(1000);
    expect((await call('/rest/api/3/myself')).status).toBe(200);
  });

  it('search embeds the latest changelog entries, newest first, total left out for some issues', async () => {
    const clock = new ManualClock(T0);
    emu = await start(clock, { scale: { projects: 1, issues: 40, longLists: 6 } });
    const jql = issuesJql({ project: 'ENG', since: new Date(T0 - 60 * 86_400_000), before: null, timeZone: 'UTC' });
    const { issues } = (await call('/rest/api/3/search/jql', { jql, expand: 'changelog', maxResults: 100 })).body;
    const byId = new Map(emu.data.projects[0]!.issues.map((i) => [i.id, i]));
    let withoutTotal = 0;
    for (const i of issues) {
      const rec = byId.get(i.id)!;
      const want = rec.histories.slice(-EMBEDDED).reverse();
      expect(i.changelog.histories.map((h: Json) => h.id)).toEqual(want.map((h) => h.id));
      if (Number(i.id) % 2 === 0) {
        expect(i.changelog.total).toBeUndefined();
        if (rec.histories.length > EMBEDDED) withoutTotal++;
      } else expect(i.changelog.total).toBe(rec.histories.length);
    }
    expect(withoutTotal).toBeGreaterThan(0);
  });

  it('team-managed projects: a simple board, with sprints where the feature is on', async () => {
    const clock = new ManualClock(T0);
    emu = await start(clock, { scale: { projects: 4 } });
    const boards = async (key: string) => (await call(`/rest/agile/1.0/board?projectKeyOrId=${key}`)).body.values;
    const ops = await boards('OPS');
    expect(ops.map((b: Json) => b.type)).toEqual(['simple']);
    const sprints = (await call(`/rest/agile/1.0/board/${ops[0].id}/sprint`)).body.values;
    expect(sprints.length).toBe(emu.scale.sprints);
    expect((await call('/rest/api/3/project/OPS')).body).toMatchObject({ style: 'next-gen', simplified: true });
    const api = await boards('API');
    expect(api.map((b: Json) => b.type)).toEqual(['simple']);
    expect((await call(`/rest/agile/1.0/board/${api[0].id}/sprint`)).status).toBe(400);
  });

  it('parses --search-lag', () => {
    expect(parseJiraEmulatorArgs(['--search-lag', '5s'])).toEqual({ searchLagMs: 5000 });
    expect(parseJiraEmulatorArgs(['--search-lag=0'])).toEqual({ searchLagMs: 0 });
    expect(() => parseJiraEmulatorArgs(['--search-lag', 'soon'])).toThrow(ValidationError);
  });
});
