/**
 * The Jira provider against the Jira emulator on 127.0.0.1, writing through the normalized sink
 * into the test database: datasets, the family in one unit and members alone, pagination, long
 * comment and changelog lists, windows, status mapping, lease loss and failures.
 */
import { describe, expect, it } from 'vitest';
import { classifyError, LeaseLostError, NonRetryableError } from '../../../src/errors.js';
import { runJiraUnit, type JiraProviderOptions } from '../../../src/providers/jira/index.js';
import { EMBEDDED } from '../../../src/emulators/jira/index.js';
import { jiraEventCount } from '../../helpers/emulatorRows.js';
import { count, DAY, rows, T0, truncateSurfaces } from '../../helpers/emulatorSuite.js';
import { failureOf } from '../../helpers/failures.js';
import { TestGuard } from '../../helpers/unitContext.js';
import { useJiraSuite } from './support.js';

const FAST: JiraProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, pageSize: 25 };
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history'];

const fx = useJiraSuite({ seed: 5, scale: { projects: 1, issues: 130, longLists: 2, days: 20 } });

const issues = () => fx.emu.data.projects[0]!.issues;
const searches = () => fx.emu.requestLog.filter((l) => l.path.startsWith('/rest/api/3/search/jql'));

describe('Jira provider: the work-item family', () => {
  it('one unit writes items, comments and history; ≥ 5 search pages; long lists from their endpoints', async () => {
    await fx.start();
    const r = await runJiraUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY }), FAST);
    const all = issues();
    const comments = all.reduce((n, i) => n + i.comments.length, 0);
    const events = jiraEventCount(all);
    expect(r.written).toEqual({ work_items: 130, work_item_comments: comments, work_item_events: events });
    expect(r.touchedSurfaces).toEqual(['work_items', 'work_item_comments', 'work_item_events']);
    expect(searches().length).toBe(6);
    expect(await count(fx.db, 'work_items')).toBe(130);
    expect(await count(fx.db, 'work_item_comments')).toBe(comments);
    expect(await count(fx.db, 'work_item_events')).toBe(events);

    const long = all.filter((i) => i.comments.length > EMBEDDED);
    expect(long.length).toBe(2);
    for (const i of long) {
      expect(fx.emu.requestLog.some((l) => l.path.startsWith(`/rest/api/3/issue/${i.id}/comment`))).toBe(true);
      expect(fx.emu.requestLog.some((l) => l.path.startsWith(`/rest/api/3/issue/${i.id}/changelog`))).toBe(true);
    }
    const perItem = fx.emu.requestLog.filter((l) => l.path.includes('/rest/api/3/issue/'));
    expect(perItem.length).toBe(4); // only the long ones
    const body = await fx.db.query<{ body: string }>(
      `SELECT body FROM ${fx.db.schema.table('work_item_comments')} WHERE external_id = $1`,
      [long[0]!.comments.at(-1)!.id],
    );
    expect(body.rows[0]!.body).toBe(long[0]!.comments.at(-1)!.text);
  });

  it('the family in one unit costs fewer requests than one unit per dataset, and writes the same rows', async () => {
    await fx.start();
    await runJiraUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY }), FAST);
    const together = fx.emu.requestLog.length;
    const written = { items: await count(fx.db, 'work_items'), events: await count(fx.db, 'work_item_events') };
    await truncateSurfaces(fx.db);
    fx.emu.requestLog.length = 0;
    for (const d of FAMILY) await runJiraUnit(fx.unit({ datasetKey: d }), FAST);
    const apart = fx.emu.requestLog.length;
    expect(together * 2).toBeLessThan(apart);
    expect({ items: await count(fx.db, 'work_items'), events: await count(fx.db, 'work_item_events') }).toEqual(
      written,
    );
  });

  it('maps status, started_at (first move into In Progress) and completed_at (the move into Done)', async () => {
    await fx.start();
    await runJiraUnit(fx.unit({ datasetKey: 'work-items', datasets: ['work-items'] }), FAST);
    const byId = new Map((await rows<Record<string, unknown>>(fx.db, 'work_items')).map((r) => [r.external_id, r]));
    const at = (ms: number) => new Date(ms);
    let checked = { done: 0, cancelled: 0, todo: 0, progress: 0 };
    for (const i of issues()) {
      const row = byId.get(i.id)!;
      const statusMoves = i.histories.flatMap((h) =>
        h.items.filter((x) => x.field === 'status').map((x) => ({ h, x })),
      );
      const started = statusMoves.find((m) => m.x.to === '3' || m.x.to === '10001');
      const doneMove = statusMoves.filter((m) => m.x.to === '10002').at(-1);
      expect(row.started_at).toEqual(started ? at(started.h.created) : null);
      expect(row).toMatchObject({
        number: i.key,
        container: 'ENG',
        labels: i.labels,
        assignees: i.assignee ? [i.assignee] : [],
      });
      if (i.statusId === '10002' && i.resolution === 'Done') {
        expect(row).toMatchObject({ status: 'done', status_raw: 'Done', completed_at: at(doneMove!.h.created) });
        checked.done++;
      } else if (i.statusId === '10002') {
        expect(row).toMatchObject({ status: 'cancelled', completed_at: at(doneMove!.h.created) });
        checked.cancelled++;
      } else if (i.statusId === '10000') {
        expect(row).toMatchObject({ status: 'todo', status_raw: 'To Do', completed_at: null, started_at: null });
        checked.todo++;
      } else {
        expect(row).toMatchObject({ status: 'in_progress', completed_at: null });
        checked.progress++;
      }
      if (i.parentId) expect(row.parent_external_id).toBe(i.parentId);
    }
    checked = { ...checked };
    expect(Object.values(checked).every((n) => n > 0)).toBe(true);
    expect([...byId.values()].some((r) => typeof r.milestone === 'string' && r.milestone.includes('Sprint'))).toBe(
      true,
    );
  });

  it('a member planned alone works: comments alone, history alone (no work items written)', async () => {
    await fx.start();
    const c = await runJiraUnit(fx.unit({ datasetKey: 'work-item-comments' }), FAST);
    expect(c.touchedSurfaces).toEqual(['work_item_comments']);
    expect(await count(fx.db, 'work_item_comments')).toBe(issues().reduce((n, i) => n + i.comments.length, 0));
    expect(fx.emu.requestLog.some((l) => l.path === '/rest/api/3/status')).toBe(false);
    expect(fx.emu.requestLog.some((l) => l.path.includes('/changelog'))).toBe(false);
    const h = await runJiraUnit(fx.unit({ datasetKey: 'work-item-history' }), FAST);
    expect(h.touchedSurfaces).toEqual(['work_item_events']);
    expect(await count(fx.db, 'work_items')).toBe(0);
    const kinds = await fx.db.query<{ kind: string }>(
      `SELECT DISTINCT kind FROM ${fx.db.schema.table('work_item_events')}`,
    );
    expect(kinds.rows.map((k) => k.kind).sort()).toEqual(['label', 'state']);
    expect(await runJiraUnit(fx.unit({ datasetKey: 'work-item-labels' }), FAST)).toMatchObject({
      items: 0,
      coveredBy: 'work-items',
    });
  });

  it('incremental after a backfill, items updated in between, another time zone: no gap, no duplicate', async () => {
    await fx.start({ timeZone: 'America/New_York' });
    // Two issues inside the minute of the watermark: one just before it, one just after.
    const [a, b] = [issues()[0]!, issues()[1]!];
    a.updated = T0 + 20_000;
    b.updated = T0 + 40_000;
    issues().sort((x, y) => x.updated - y.updated || Number(x.id) - Number(y.id));
    const watermark = new Date(T0 + 30_000);
    const since = new Date(T0 - 30 * DAY);
    const back = await runJiraUnit(
      fx.unit({ datasetKey: 'work-items', datasets: FAMILY, since, before: watermark }),
      FAST,
    );
    expect(back.written).toMatchObject({ work_items: 129 });
    expect(searches().at(-1)!.jql).toContain('updated < "2026-03-02 07:01"'); // T0 + 1 min in New York (UTC−5)
    fx.clock.set(T0 + 3_600_000 + 30_000);
    const m = fx.emu.mutate();
    fx.clock.advance(60_000);
    const inc = await runJiraUnit(
      fx.unit({
        datasetKey: 'work-items',
        datasets: FAMILY,
        mode: 'incremental',
        since: watermark,
        before: fx.clock.now(),
      }),
      FAST,
    );
    const expected = new Set([...m.touched, b.key]);
    expected.delete(a.key);
    expect(inc.written).toMatchObject({ work_items: expected.size });
    expect(inc.watermark).toBeUndefined();
    expect(searches().at(-1)!.jql).toContain('updated >= "2026-03-02 07:00"');
    const all = await rows<{ external_id: string; updated_at: Date; number: string }>(fx.db, 'work_items');
    expect(all.length).toBe(issues().length);
    expect(new Set(all.map((r) => r.number)).size).toBe(all.length);
    const byId = new Map(all.map((r) => [r.external_id, r.updated_at.getTime()]));
    for (const i of issues()) expect(byId.get(i.id)).toBe(i.updated);
  });

  it('an incremental unit that stops after maxPages moves its watermark only to what it read', async () => {
    await fx.start();
    const r = await runJiraUnit(fx.unit({ datasetKey: 'work-items', mode: 'incremental' }), { ...FAST, maxPages: 2 });
    const sorted = [...issues()].sort((a, b) => a.updated - b.updated);
    expect(r.written).toMatchObject({ work_items: 50 });
    expect(r.watermark).toEqual(new Date(sorted[49]!.updated));
  });

  it('a lease lost mid-unit stops it: nothing is written after the loss, no page asked for', async () => {
    await fx.start();
    const guard = new TestGuard('u-lost');
    guard.loseAfter = 2; // pages 1's work items, page 2's work items → lost on page 3
    const err = await failureOf(runJiraUnit(fx.unit({ datasetKey: 'work-items', guard }), FAST));
    expect(err).toBeInstanceOf(LeaseLostError);
    expect(await count(fx.db, 'work_items')).toBe(50);
    expect(searches().length).toBe(3);
  });
});

describe('Jira provider: reference datasets and failures', () => {
  it('projects, members and sprints (scrum boards only); bearer tokens work too', async () => {
    await fx.start();
    expect(await runJiraUnit(fx.unit({ datasetKey: 'projects', tier: 'reference' }), FAST)).toMatchObject({ items: 1 });
    const m = await runJiraUnit(fx.unit({ datasetKey: 'members', tier: 'reference', token: fx.emu.apiToken }), FAST);
    expect(m.items).toBe(fx.emu.data.users.length);
    const s = await runJiraUnit(fx.unit({ datasetKey: 'sprints', tier: 'reference' }), FAST);
    expect(s.items).toBe(fx.emu.data.sprints.length);
    expect((await rows(fx.db, 'projects'))[0]).toMatchObject({
      key: 'ENG',
      state: 'active',
      url: `${fx.emu.url}/browse/ENG`,
    });
    expect((await rows(fx.db, 'sprints')).every((r) => r.container === 'ENG')).toBe(true);
    expect(fx.emu.requestLog.some((l) => /board\/2\/sprint/.test(l.path))).toBe(false); // the kanban board
    expect(fx.emu.requestLog.filter((l) => l.auth === 'bearer').length).toBeGreaterThan(0);
  });

  it('401 and 403 fail as auth without the secret; a missing project is not_found; 5xx retried in place', async () => {
    await fx.start();
    const bad = await failureOf(
      runJiraUnit(fx.unit({ datasetKey: 'projects', token: `${fx.emu.email}:ATATTwrongsecret` }), FAST),
    );
    expect(classifyError(bad)).toBe('auth');
    expect(bad.message).toContain('acme-jira');
    expect(bad.message).not.toContain('ATATTwrongsecret');
    fx.emu.setFaults([{ kind: 'forbidden', count: 1 }]);
    const forbidden = await failureOf(runJiraUnit(fx.unit({ datasetKey: 'work-items' }), FAST));
    expect(classifyError(forbidden)).toBe('auth');
    expect(forbidden.message).not.toContain(fx.emu.apiToken);
    const missing = await failureOf(runJiraUnit(fx.unit({ datasetKey: 'work-items', sourceKey: 'NOPE' }), FAST));
    expect(missing).toBeInstanceOf(NonRetryableError);
    expect((missing as NonRetryableError).category).toBe('not_found');
    fx.emu.setFaults([{ kind: 'server-error', count: 2, status: 503 }]);
    expect(await runJiraUnit(fx.unit({ datasetKey: 'projects' }), FAST)).toMatchObject({ items: 1 });
    fx.emu.setFaults([{ kind: 'server-error', count: 10, status: 500 }]);
    const down = await failureOf(runJiraUnit(fx.unit({ datasetKey: 'projects' }), FAST));
    expect((down as NonRetryableError).category).toBe('provider_error');
  });
});
