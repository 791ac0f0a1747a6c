/**
 * The Jira emulator's `id in (…)` JQL clause and its deleted issues: the parser reads one
 * `id in (…)` beside `project` and `updated` and refuses malformed lists as Jira does (a 400),
 * search keeps only the listed issues of the project, and a deleted issue leaves search and
 * answers 404 to every read.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { startJiraEmulator, type JiraEmulator } from '../../src/emulators/jira/index.js';
import { JqlError, parseJql, tokenize } from '../../src/emulators/jira/jql.js';
import type { IssueRec } from '../../src/emulators/jira/model.js';
import { jiraCall, type Json } from './jira/helpers.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const GONE = 'Issue does not exist or you do not have permission to see it.';

describe('JQL id in (…)', () => {
  it('tokenizes parentheses and commas as their own tokens', () => {
    expect(tokenize('id in (1,"2")').map((t) => [t.kind, t.text])).toEqual([
      ['word', 'id'],
      ['word', 'in'],
      ['punct', '('],
      ['word', '1'],
      ['punct', ','],
      ['string', '2'],
      ['punct', ')'],
    ]);
  });

  it('reads the ids beside the project, bare or quoted, in any order of clauses', () => {
    expect(parseJql('project = ENG AND id in (10001, 10002)', 'UTC')).toEqual({
      project: 'ENG',
      updated: [],
      ids: ['10001', '10002'],
      order: 'ASC',
    });
    expect(parseJql(`ID IN ("10003", '10001',10002) and project = "ENG"`, 'UTC')).toMatchObject({
      project: 'ENG',
      ids: ['10003', '10001', '10002'],
    });
    expect(parseJql('project = ENG', 'UTC').ids).toBeNull();
  });

  it('reads the ids between updated bounds, with an order', () => {
    const parsed = parseJql(
      'updated >= "2026-01-01 00:00" AND id in (7) AND project = ENG AND updated < "2026-02-01" ORDER BY updated DESC',
      'UTC',
    );
    expect(parsed).toEqual({
      project: 'ENG',
      updated: [
        { op: '>=', ms: Date.UTC(2026, 0, 1) },
        { op: '<', ms: Date.UTC(2026, 1, 1) },
      ],
      ids: ['7'],
      order: 'DESC',
    });
  });

  it('refuses an empty list, a bare value, an unclosed list and anything else outside the subset', () => {
    for (const bad of [
      'project = ENG AND id in ()',
      'project = ENG AND id in 1',
      'project = ENG AND id in (1, 2',
      'project = ENG AND id in (1,',
      'project = ENG AND id in (1,)',
      'project = ENG AND id in (1 2)',
      'project = ENG AND id in (ENG-1)',
      'project = ENG AND id in ("x")',
      'project = ENG AND id in (1) AND id in (2)',
      'project = ENG AND id = 1',
      'project = ENG AND id in (1) OR id in (2)',
      'project = (ENG)',
      'project = ENG,',
      'id in (1)',
    ]) {
      expect(() => parseJql(bad, 'UTC'), bad).toThrow(JqlError);
    }
  });
});

describe('Jira emulator: id in (…) searches and deleted issues', () => {
  let emu: JiraEmulator;
  afterEach(async () => {
    await emu.close();
  });

  const start = () =>
    startJiraEmulator({ clock: new ManualClock(T0), seed: 3, scale: { projects: 2, issues: 40, longLists: 1 } });
  const call = (path: string, init: Parameters<typeof jiraCall>[2] = {}) => jiraCall(emu, path, init);
  const search = async (jql: string) => {
    const r = await call('/rest/api/3/search/jql', { method: 'POST', body: { jql, maxResults: 100 } });
    expect(r.status).toBe(200);
    expect(r.body.isLast).toBe(true);
    return (r.body.issues as Json[]).map((i) => i.id as string);
  };
  const project = (key: string) => emu.data.projects.find((p) => p.key === key)!;

  it('keeps only the listed issues of the project: a deleted id or another project’s is not returned', async () => {
    emu = await start();
    const [a, b, c] = project('ENG').issues as [IssueRec, IssueRec, IssueRec];
    const other = project('OPS').issues[0]!;
    emu.deleteIssue(c.id);
    const ids = await search(`project = ENG AND id in (${a.id}, "${b.id}", ${c.id}, ${other.id}, 999999)`);
    expect(ids.sort()).toEqual([a.id, b.id].sort());
    const get = await call(
      `/rest/api/3/search/jql?jql=${encodeURIComponent(`id in (${b.id}) AND project = ENG`)}&fields=summary`,
    );
    expect(get.body.issues.map((i: Json) => [i.id, i.key, i.fields.summary])).toEqual([[b.id, b.key, b.summary]]);
    const empty = await call('/rest/api/3/search/jql', { method: 'POST', body: { jql: 'project = ENG AND id in ()' } });
    expect(empty).toMatchObject({ status: 400, body: { errorMessages: [expect.any(String)], errors: {} } });
  });

  it('a deleted issue leaves search and answers 404 by id and by key; nothing else changes', async () => {
    emu = await start();
    const eng = project('ENG');
    const epic = eng.issues.find((i) => i.type === 'Epic' && eng.issues.some((c) => c.parentId === i.id))!;
    const child = eng.issues.find((i) => i.parentId === epic.id)!;
    const before = new Map(emu.data.projects.flatMap((p) => p.issues).map((i) => [i.id, i.updated]));
    expect(await search('project = ENG')).toContain(epic.id);

    emu.deleteIssue(epic.key.toLowerCase());

    expect(eng.issues).not.toContain(epic);
    expect(emu.data.issuesById.has(epic.id)).toBe(false);
    expect(await search('project = ENG')).not.toContain(epic.id);
    expect(await search(`project = ENG AND id in (${epic.id})`)).toEqual([]);
    for (const path of [
      `/rest/api/3/issue/${epic.id}`,
      `/rest/api/3/issue/${epic.key}`,
      `/rest/api/3/issue/${epic.id}/comment`,
      `/rest/api/3/issue/${epic.key}/changelog`,
    ]) {
      expect(await call(path), path).toMatchObject({ status: 404, body: { errorMessages: [GONE], errors: {} } });
    }
    const read = await call(`/rest/api/3/issue/${child.id}`);
    expect(read.status).toBe(200);
    expect(read.body.fields.parent).toBeUndefined();
    const after = emu.data.projects.flatMap((p) => p.issues);
    expect(after).toHaveLength(before.size - 1);
    for (const i of after) expect(i.updated).toBe(before.get(i.id));
    expect(emu.searchSettled()).toBe(true);

    expect(() => emu.deleteIssue(epic.id)).toThrow(epic.id);
    expect(() => emu.deleteIssue('ENG-99999')).toThrow('ENG-99999');
  });
});
