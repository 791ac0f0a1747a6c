/**
 * The Jira emulator's `datacenter` flavor: Data Center's REST v2 shapes from the same records as
 * Cloud's (users with `key` and `name`, wiki-markup bodies, the sprint field's text form, `self`
 * links under `/rest/api/2/`), `startAt` search with `total`, the whole changelog on
 * `expand=changelog`, REST v3 answering 404, a PAT as Bearer and `name:password` as basic, and the
 * token bucket's headers and 429.
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
import { issuesJql } from '../../../src/providers/jira/jql.js';
import { basic, jiraCall, type CallInit, type Json } from './helpers.js';

const T0 = Date.UTC(2026, 2, 2, 12);

let emu: JiraEmulator;
afterEach(async () => {
  await emu.close();
});

const call = (path: string, init: CallInit = {}) => jiraCall(emu, path, { auth: `Bearer ${emu.apiToken}`, ...init });

const start = (o: Parameters<typeof startJiraEmulator>[0] = {}) =>
  startJiraEmulator({ clock: new ManualClock(T0), seed: 3, flavor: 'datacenter', searchLagMs: 0, ...o });

describe('Jira emulator, datacenter flavor', () => {
  it('takes a PAT as Bearer and name:token as basic; refuses others with 401; REST v3 is 404', async () => {
    emu = await start();
    expect(emu.token).toBe(emu.apiToken);
    expect((await call('/rest/api/2/myself')).status).toBe(200);
    expect((await call('/rest/api/2/myself', { auth: basic(`${emu.username}:${emu.apiToken}`) })).status).toBe(200);
    const wrong = await call('/rest/api/2/myself', { auth: basic(`${emu.email}:${emu.apiToken}`) });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('x-seraph-loginreason')).toBe('AUTHENTICATED_FAILED');
    expect((await call('/rest/api/2/myself', { auth: 'Bearer nope' })).status).toBe(401);
    expect((await call('/rest/api/3/myself')).status).toBe(404);
    expect((await call('/rest/api/3/search/jql', { method: 'POST', body: { jql: 'project = ENG' } })).status).toBe(404);
    expect(emu.requestLog.map((l) => l.auth)).toEqual(['bearer', 'basic', null, null, 'bearer', 'bearer']);
    expect(JSON.stringify(emu.requestLog)).not.toContain(emu.apiToken);
  });

  it('users have key and name, no accountId; the same records as Cloud', async () => {
    emu = await start();
    const me = (await call('/rest/api/2/myself')).body;
    expect(me).toMatchObject({ key: 'JIRAUSER10000', name: 'admin', displayName: 'Site Admin', active: true });
    expect(me.accountId).toBeUndefined();
    expect(me.self).toBe(`${emu.url}/rest/api/2/user?username=admin`);
    const users = (await call('/rest/api/2/user/assignable/search?project=ENG&startAt=0&maxResults=1000')).body;
    expect(users.length).toBeGreaterThan(0);
    for (const u of users) {
      const rec = emu.data.users.find((r) => r.key === u.key)!;
      expect(u).toMatchObject({ name: rec.name, displayName: rec.displayName, emailAddress: rec.email });
      expect(u.accountId).toBeUndefined();
    }
    const project = (await call('/rest/api/2/project/ENG')).body;
    expect(project.self).toContain('/rest/api/2/project/');
    expect(project.lead.key).toMatch(/^JIRAUSER/);
  });

  it('search pages by startAt with total; issues in v2 shapes; the whole changelog on expand', async () => {
    emu = await start({ scale: { projects: 1, issues: 30, longLists: 2 } });
    const jql = issuesJql({ project: 'ENG', since: null, before: null, timeZone: 'UTC', byKey: true });
    const q = (startAt: number) =>
      `/rest/api/2/search?jql=${encodeURIComponent(jql)}&startAt=${startAt}&maxResults=20` +
      `&fields=assignee,comment,updated,customfield_10020&expand=changelog`;
    const first = (await call(q(0))).body;
    const second = (await call(q(20))).body;
    expect([first.startAt, first.maxResults, first.total, first.issues.length]).toEqual([0, 20, 30, 20]);
    expect([second.startAt, second.total, second.issues.length]).toEqual([20, 30, 10]);
    const all = [...first.issues, ...second.issues];
    expect(all.map((i: Json) => i.id)).toEqual(emu.data.projects[0]!.issues.map((i) => i.id));
    const long = all.find((i: Json) => i.fields.comment.total > EMBEDDED)!;
    const rec = emu.data.issuesById.get(long.id)!;
    expect(long.self).toBe(`${emu.url}/rest/api/2/issue/${long.id}`);
    expect(long.changelog.histories).toHaveLength(rec.histories.length);
    expect(long.changelog.total).toBe(rec.histories.length);
    const c = long.fields.comment.comments[0];
    expect(typeof c.body).toBe('string');
    expect(c.body).toBe(rec.comments[0]!.text.replace(/^(\S+)/, '*$1*'));
    expect(c.author.key).toMatch(/^JIRAUSER/);
    const assigneeItem = rec.histories.flatMap((h) => h.items).find((x) => x.field === 'assignee' && x.to !== null);
    if (assigneeItem) {
      const key = emu.data.users.find((u) => u.accountId === assigneeItem.to)!.key;
      const items = all.flatMap((i: Json) => i.changelog.histories.flatMap((h: Json) => h.items));
      expect(items.some((x: Json) => x.field === 'assignee' && x.to === key)).toBe(true);
    }
    const sprinted = all.find((i: Json) => Array.isArray(i.fields.customfield_10020));
    expect(sprinted.fields.customfield_10020[0]).toMatch(
      /^com\.atlassian\.greenhopper\.service\.sprint\.Sprint@[0-9a-f]+\[id=\d+,rapidViewId=\d+,state=[A-Z]+,name=/,
    );
    const comments = (await call(`/rest/api/2/issue/${long.id}/comment?startAt=20&maxResults=100`)).body;
    expect(comments.startAt).toBe(20);
    expect(comments.comments.length).toBe(rec.comments.length - 20);
    expect((await call(`/rest/api/2/issue/${long.id}/changelog`)).status).toBe(404);
    const read = (await call(`/rest/api/2/issue/${long.id}?fields=updated&expand=changelog`)).body;
    expect(read.changelog.histories).toHaveLength(rec.histories.length);
  });

  it('token bucket: headers on every answer (retry-after 0 while tokens last), then a 429', async () => {
    const clock = new ManualClock(T0);
    emu = await start({ clock, rateLimit: { limit: 3, windowSeconds: 10 } });
    const a = await call('/rest/api/2/myself');
    expect(a.headers.get('x-ratelimit-limit')).toBe('3');
    expect(a.headers.get('x-ratelimit-remaining')).toBe('2');
    expect(a.headers.get('x-ratelimit-interval-seconds')).toBe('10');
    expect(a.headers.get('x-ratelimit-fillrate')).toBe('3');
    expect(a.headers.get('retry-after')).toBe('0');
    expect(a.headers.get('beta-ratelimit')).toBeNull();
    const missing = await call('/rest/api/2/project/NOPE');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('retry-after')).toBe('0');
    await call('/rest/api/2/myself');
    const limited = await call('/rest/api/2/myself');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('10');
    expect(limited.headers.get('x-ratelimit-reset')).toBeNull();
    clock.set(T0 + 10_000);
    expect((await call('/rest/api/2/myself')).status).toBe(200);
  });

  it('the CLI flag: --flavor datacenter; anything else is refused', async () => {
    expect(parseJiraEmulatorArgs(['--flavor', 'datacenter']).flavor).toBe('datacenter');
    expect(() => parseJiraEmulatorArgs(['--flavor=server'])).toThrow(ValidationError);
    emu = await start();
  });
});
