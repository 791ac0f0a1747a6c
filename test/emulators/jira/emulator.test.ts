/**
 * The Jira Cloud emulator: Jira's shapes (REST v3 and Agile), authentication, nextPageToken search
 * pagination, the JQL subset and its 400s, the enforced budget's headers, faults, mutation, scale
 * and the CLI-style options parser.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { ValidationError } from '../../../src/errors.js';
import {
  EMBEDDED,
  parseJiraEmulatorArgs,
  startJiraEmulator,
  type JiraEmulator,
} from '../../../src/emulators/jira/index.js';
import { generateSite } from '../../../src/emulators/jira/generate.js';
import { SCALES } from '../../../src/emulators/jira/options.js';
import { issuesJql } from '../../../src/providers/jira/jql.js';
import { basic, jiraCall, type CallInit, type Json } from './helpers.js';

const T0 = Date.UTC(2026, 2, 2, 12);

let emu: JiraEmulator;
afterEach(async () => {
  await emu.close();
});

const call = (path: string, init: CallInit = {}) => jiraCall(emu, path, init);

const start = (o: Parameters<typeof startJiraEmulator>[0] = {}) =>
  startJiraEmulator({ clock: new ManualClock(T0), seed: 3, ...o });

describe('Jira emulator', () => {
  it('authenticates email:api_token as basic and the bare token as bearer; refuses others with 401', async () => {
    emu = await start();
    expect((await call('/rest/api/3/myself')).status).toBe(200);
    expect((await call('/rest/api/3/myself', { auth: `Bearer ${emu.apiToken}` })).status).toBe(200);
    expect((await call('/rest/api/3/myself', { auth: basic(`${emu.email}:wrong`) })).status).toBe(401);
    expect((await call('/rest/api/3/myself', { auth: null })).status).toBe(401);
    expect(emu.requestLog.map((l) => l.auth)).toEqual(['basic', 'bearer', null, null]);
    expect(JSON.stringify(emu.requestLog)).not.toContain(emu.apiToken);
  });

  it('serves users, statuses, projects, boards and sprints in Jira shapes', async () => {
    emu = await start();
    const me = (await call('/rest/api/3/myself')).body;
    expect(me).toMatchObject({
      accountId: expect.any(String),
      accountType: 'atlassian',
      timeZone: 'UTC',
      active: true,
    });
    expect(Object.keys(me.avatarUrls)).toEqual(['48x48', '24x24', '16x16', '32x32']);
    const statuses = (await call('/rest/api/3/status')).body;
    expect(statuses.map((s: Json) => s.statusCategory.key).sort()).toEqual([
      'done',
      'indeterminate',
      'indeterminate',
      'new',
    ]);
    const project = (await call('/rest/api/3/project/ENG')).body;
    expect(project).toMatchObject({ key: 'ENG', id: expect.any(String), lead: { accountId: expect.any(String) } });
    const missing = await call('/rest/api/3/project/NOPE');
    expect(missing).toMatchObject({ status: 404, body: { errorMessages: [expect.any(String)], errors: {} } });
    const search = (await call('/rest/api/3/project/search?maxResults=1')).body;
    expect(search).toMatchObject({ startAt: 0, maxResults: 1, total: 2, isLast: false, values: [{ key: 'ENG' }] });
    const users = (await call('/rest/api/3/user/assignable/search?project=ENG&maxResults=3')).body;
    expect(users).toHaveLength(3);
    const boards = (await call('/rest/agile/1.0/board?projectKeyOrId=ENG')).body;
    expect(boards).toMatchObject({ startAt: 0, isLast: true, total: 2 });
    expect(boards.values.map((b: Json) => b.type)).toEqual(['scrum', 'kanban']);
    expect(boards.values[0].location).toMatchObject({ projectKey: 'ENG' });
    const sprints = (await call(`/rest/agile/1.0/board/${boards.values[0].id}/sprint`)).body;
    expect(sprints.values[0]).toMatchObject({
      id: expect.any(Number),
      state: 'closed',
      originBoardId: boards.values[0].id,
    });
    expect((await call(`/rest/agile/1.0/board/${boards.values[1].id}/sprint`)).status).toBe(400);
  });

  it('searches with nextPageToken pages; fields and changelog only when asked; bad JQL is a 400', async () => {
    emu = await start({ scale: { projects: 1, issues: 230 } });
    const jql = issuesJql({ project: 'ENG', since: new Date(T0 - 40 * 86_400_000), before: null, timeZone: 'UTC' });
    const keys: string[] = [];
    let token: string | undefined;
    let pages = 0;
    for (;;) {
      const page = (
        await call('/rest/api/3/search/jql', {
          method: 'POST',
          body: {
            jql,
            fields: ['summary', 'status', 'updated', 'comment'],
            expand: 'changelog',
            maxResults: 50,
            nextPageToken: token,
          },
        })
      ).body;
      pages++;
      keys.push(...page.issues.map((i: Json) => i.key));
      if (pages === 1) {
        const i = page.issues[0];
        expect(Object.keys(i.fields).sort()).toEqual(['comment', 'status', 'summary', 'updated']);
        expect(i.fields.status.statusCategory.key).toMatch(/new|indeterminate|done/);
        expect(i.changelog).toMatchObject({ startAt: 0, maxResults: EMBEDDED, histories: expect.any(Array) });
        expect(i.fields.comment).toMatchObject({ startAt: 0, total: expect.any(Number), comments: expect.any(Array) });
        expect(i.fields.updated).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+0000$/);
      }
      if (page.isLast) break;
      token = page.nextPageToken;
    }
    expect(pages).toBe(5);
    expect(new Set(keys).size).toBe(230);
    const bare = (await call(`/rest/api/3/search/jql?jql=${encodeURIComponent(jql)}&maxResults=1`)).body;
    expect(bare.issues[0]).toEqual({
      expand: expect.any(String),
      id: expect.any(String),
      self: expect.any(String),
      key: expect.any(String),
      fields: {},
    });
    for (const bad of ['assignee = currentUser()', 'project = ENG OR project = OPS', 'project = "ENG']) {
      const r = await call('/rest/api/3/search/jql', { method: 'POST', body: { jql: bad } });
      expect(r).toMatchObject({ status: 400, body: { errorMessages: [expect.any(String)], errors: {} } });
    }
    const unknown = await call('/rest/api/3/search/jql', { method: 'POST', body: { jql: 'project = "NOPE"' } });
    expect(unknown.status).toBe(400);
  });

  it('pages long comment lists and changelogs through the issue endpoints', async () => {
    emu = await start({ scale: { projects: 1, issues: 20, longLists: 1 } });
    const long = emu.data.projects[0]!.issues.find((i) => i.comments.length > EMBEDDED)!;
    expect(long.histories.length).toBeGreaterThan(EMBEDDED);
    const c1 = (await call(`/rest/api/3/issue/${long.id}/comment?startAt=0&maxResults=10`)).body;
    expect(c1).toMatchObject({ startAt: 0, maxResults: 10, total: long.comments.length });
    expect(c1.comments[0].body).toMatchObject({ type: 'doc', version: 1 });
    const h = (await call(`/rest/api/3/issue/${long.key}/changelog?startAt=10&maxResults=10`)).body;
    expect(h).toMatchObject({ startAt: 10, maxResults: 10, total: long.histories.length, isLast: false });
    expect(h.values[0].items[0]).toMatchObject({ field: expect.any(String), fieldtype: 'jira' });
    expect((await call('/rest/api/3/issue/999999/comment')).status).toBe(404);
  });

  it('enforces the quota: Beta-RateLimit headers on success, then 429, Retry-After, a minute reset', async () => {
    const clock = new ManualClock(T0);
    emu = await start({ clock, rateLimit: { limit: 3, windowSeconds: 60 } });
    const first = await call('/rest/api/3/myself');
    // The endpoint's own per-second limit, without a reset; the quota in the Beta headers.
    expect(first.headers.get('x-ratelimit-limit')).toBe('400');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('399');
    expect(first.headers.get('x-ratelimit-reset')).toBeNull();
    expect(first.headers.get('beta-ratelimit-policy')).toBe('"tenant-app-quota";q=3;w=60');
    expect(first.headers.get('beta-ratelimit')).toBe('"tenant-app-quota";r=2;t=60');
    await call('/rest/api/3/myself');
    await call('/rest/api/3/myself');
    clock.advance(15_000);
    const limited = await call('/rest/api/3/myself');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('45');
    expect(limited.headers.get('x-ratelimit-reset')).toBe('2026-03-02T12:01Z');
    clock.set(T0 + 60_000);
    expect((await call('/rest/api/3/myself')).status).toBe(200);
  });

  it('injects 429, 401, 403, 5xx and slow answers', async () => {
    emu = await start({ faults: 'rate-limit:count=1:retryAfter=7,forbidden:count=1,server-error:count=1:status=502' });
    const r = await call('/rest/api/3/myself');
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('7');
    expect((await call('/rest/api/3/myself')).status).toBe(403);
    expect((await call('/rest/api/3/myself')).status).toBe(502);
    emu.setFaults([
      { kind: 'unauthorized', count: 1 },
      { kind: 'slow', delayMs: 60, count: 1 },
    ]);
    const t = performance.now();
    expect((await call('/rest/api/3/myself')).status).toBe(401);
    expect(performance.now() - t).toBeGreaterThanOrEqual(55);
    expect(emu.requestLog.map((l) => l.fault)).toEqual(['rate-limit', 'forbidden', 'server-error', 'unauthorized']);
  });

  it('mutates data at the clock time; the same seed gives the same site; bench holds 20,000 issues', async () => {
    const clock = new ManualClock(T0);
    emu = await start({ clock });
    clock.set(T0 + 3_600_000);
    const m = emu.mutate();
    expect(m.touched.length).toBeGreaterThan(0);
    for (const key of m.touched) {
      const issue = emu.data.projects.flatMap((p) => p.issues).find((i) => i.key === key)!;
      expect(issue.updated).toBe(T0 + 3_600_000);
    }
    const a = generateSite(9, 's', SCALES.small, T0);
    const b = generateSite(9, 's', SCALES.small, T0);
    expect(JSON.stringify([...a.issuesById.values()])).toBe(JSON.stringify([...b.issuesById.values()]));
    const bench = generateSite(1, 's', SCALES.bench, T0);
    expect(bench.issuesById.size).toBeGreaterThanOrEqual(20_000);
  });

  it('parses CLI-style options', () => {
    expect(
      parseJiraEmulatorArgs([
        '--port',
        '8089',
        '--scale=bench',
        '--rate-limit',
        '100/60s',
        '--faults',
        'forbidden:count=2',
        '--time-zone',
        'Europe/Berlin',
      ]),
    ).toEqual({
      port: 8089,
      scale: SCALES.bench,
      rateLimit: { limit: 100, windowSeconds: 60 },
      faults: [{ kind: 'forbidden', count: 2 }],
      timeZone: 'Europe/Berlin',
    });
    expect(() => parseJiraEmulatorArgs(['--rate-limit', 'lots'])).toThrow(ValidationError);
    expect(() => parseJiraEmulatorArgs(['--nope', '1'])).toThrow(ValidationError);
    expect(() => parseJiraEmulatorArgs(['--time-zone', 'Mars/Base'])).toThrow(ValidationError);
  });
});
