/** Jira objects onto normalized rows: changelog events, status, started and completed times. */
import { describe, expect, it } from 'vitest';
import { eventRows, workItemRow, type JiraHistory, type JiraIssue } from '../../../src/providers/jira/mapping.js';

const scope = {
  orgId: 'o',
  integrationId: '00000000-0000-4000-8000-000000000001',
  provider: 'jira',
  siteUrl: 'https://acme.atlassian.net',
  syncedAt: new Date(0),
};
const item = (
  field: string,
  from: string | null,
  fromString: string | null,
  to: string | null,
  toString: string | null,
) => ({
  field,
  fieldtype: 'jira',
  fieldId: field,
  from,
  fromString,
  to,
  toString,
});
const CATEGORIES = new Map([
  ['1', 'new'],
  ['3', 'indeterminate'],
  ['4', 'indeterminate'],
  ['5', 'done'],
]);

describe('Jira mapping', () => {
  it('changelog items become state, assignee and one label event per label; other fields are left out', () => {
    const h: JiraHistory = {
      id: '77',
      author: { accountId: 'acc-1' },
      created: '2026-03-02T12:00:00.000+0000',
      items: [
        item('status', '1', 'To Do', '3', 'In Progress'),
        item('assignee', null, null, 'acc-2', 'Ada'),
        item('labels', null, 'a b', null, 'b c'),
        item('summary', null, 'x', null, 'y'),
      ],
    };
    const rows = eventRows(scope, '100', [h]);
    expect(rows.map((r) => [r.external_id, r.kind, r.from_value, r.to_value])).toEqual([
      ['100:77:0', 'state', 'To Do', 'In Progress'],
      ['100:77:1', 'assignee', null, 'acc-2'],
      ['100:77:2:+c', 'label', null, 'c'],
      ['100:77:2:-a', 'label', 'a', null],
    ]);
    expect(rows[0]).toMatchObject({ actor: 'acc-1', occurred_at: new Date(Date.UTC(2026, 2, 2, 12)) });
  });

  it('status from category and resolution; started: first move into progress; completed: last into done', () => {
    const at = (d: number) => `2026-03-0${d}T10:00:00.000+0000`;
    const histories: JiraHistory[] = [
      { id: '3', created: at(5), items: [item('status', '4', 'Review', '5', 'Done')] },
      { id: '1', created: at(2), items: [item('status', '1', 'To Do', '3', 'In Progress')] },
      { id: '2', created: at(3), items: [item('status', '3', 'In Progress', '5', 'Done')] },
      { id: '4', created: at(4), items: [item('status', '5', 'Done', '4', 'Review')] },
    ];
    const issue = (category: string, resolution: string | null): JiraIssue => ({
      id: '10',
      key: 'ENG-1',
      fields: {
        summary: 's',
        status: { id: '5', name: 'Done', statusCategory: { key: category } },
        resolution: resolution === null ? null : { name: resolution },
        resolutiondate: at(6),
        parent: { id: '9', key: 'ENG-0' },
        project: { id: '1', key: 'ENG' },
        customfield_10020: [
          { id: 1, name: 'Sprint 1', state: 'closed' },
          { id: 2, name: 'Sprint 2', state: 'active' },
        ],
      },
    });
    const done = workItemRow(scope, issue('done', 'Done'), histories, CATEGORIES, 'customfield_10020');
    expect(done).toMatchObject({
      status: 'done',
      started_at: new Date(Date.UTC(2026, 2, 2, 10)),
      completed_at: new Date(Date.UTC(2026, 2, 5, 10)),
      parent_external_id: '9',
      milestone: 'Sprint 2',
      url: 'https://acme.atlassian.net/browse/ENG-1',
    });
    const wont = workItemRow(scope, issue('done', "Won't Do"), histories, CATEGORIES, 'customfield_10020');
    expect(wont).toMatchObject({ status: 'cancelled', completed_at: new Date(Date.UTC(2026, 2, 5, 10)) });
    const noLog = workItemRow(scope, issue('done', 'Done'), [], CATEGORIES, 'customfield_10020');
    expect(noLog).toMatchObject({ started_at: null, completed_at: new Date(Date.UTC(2026, 2, 6, 10)) });
    const odd = workItemRow(scope, issue('mystery', null), [], CATEGORIES, 'customfield_10020');
    expect(odd).toMatchObject({ status: null, status_raw: 'Done' });
  });
});
