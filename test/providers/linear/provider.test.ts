/**
 * The Linear provider against the Linear emulator on 127.0.0.1, writing through the normalized
 * sink into the normalized tables of the test's own database.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { LeaseLostError, ValidationError } from '../../../src/errors.js';
import { linearBackfillEligibility } from '../../../src/domain/retryPolicy.js';
import {
  createLinearProvider,
  LINEAR_DATASETS,
  runLinearUnit,
  type LinearProviderOptions,
} from '../../../src/providers/linear/index.js';
import type { Workspace } from '../../../src/emulators/linear/index.js';
import { UpdateOrder } from '../../../src/providers/linear/units.js';
import { normalizedSink } from '../../../src/sinks/normalized/index.js';
import { insertIntegration, insertSources } from '../../../src/store/integrations.js';
import { linearEventCount as eventCount } from '../../helpers/emulatorRows.js';
import { count, DAY, rows as rowsOf, T0 } from '../../helpers/emulatorSuite.js';
import { ORG, TestGuard } from '../../helpers/unitContext.js';
import { useLinearSuite } from './support.js';

type IssueRec = Workspace['issues'][number];

const FAMILY = ['work-items', 'work-item-comments', 'work-item-history', 'work-item-labels'];
const OPTS: LinearProviderOptions = { pageSize: 10, nestedPageSize: 2, retry: { baseDelayMs: 1, maxDelayMs: 2 } };

const fx = useLinearSuite({ scale: { teams: 2, issues: 120, maxComments: 4 } });
beforeEach(() => fx.start());

/** The emulator's ENG issues updated in [since, before). */
function engIssues(since: number, before: number): IssueRec[] {
  const eng = fx.emu.data.teams.find((x) => x.key === 'ENG')!.id;
  return fx.emu.data.issues.filter((i) => i.teamId === eng && i.updatedAt >= since && i.updatedAt < before);
}

const window = { since: new Date(T0 - 40 * DAY), before: new Date(T0) };

describe('Linear provider: the work-item family', () => {
  it('one unit writes items, comments and history with one issues query per page (+ overflow pages)', async () => {
    const c = fx.unit({ datasetKey: 'work-items', datasets: FAMILY, ...window });
    const result = await runLinearUnit(c, OPTS);
    const issues = engIssues(T0 - 40 * DAY, T0);
    const comments = issues.reduce((n, i) => n + i.comments.length, 0);
    expect(issues.length).toBe(60);
    expect(await count(fx.db, 'work_items')).toBe(60);
    expect(await count(fx.db, 'work_item_comments')).toBe(comments);
    expect(await count(fx.db, 'work_item_events')).toBe(eventCount(issues));
    expect(result).toMatchObject({ work_items: 60, work_item_comments: comments });
    expect(result.touchedSurfaces).toEqual(['work_items', 'work_item_comments', 'work_item_events']);

    const ops = fx.emu.stats().byOperation;
    expect(ops.SyncIssuesCommentsHistoryLabels).toBe(6); // 60 issues, 10 per page: ≥ 5 pages
    // Nested connections are paged only when they overflow their first 2 entries.
    const overflow = (n: number) => Math.ceil(Math.max(0, n - 2) / 10);
    expect(ops.SyncIssueCommentsPage ?? 0).toBe(issues.reduce((n, i) => n + overflow(i.comments.length), 0));
    expect(ops.SyncIssueHistoryPage ?? 0).toBe(issues.reduce((n, i) => n + overflow(i.history.length), 0));
    expect(ops.SyncIssueLabelsPage ?? 0).toBe(issues.reduce((n, i) => n + overflow(i.labelIds.length), 0));
    expect(c.lease.writes).toBe(6 * 3); // one fenced write per surface per page
  });

  it('the family in one unit asks for a third of the issue pages that one unit per dataset does', async () => {
    await runLinearUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY, ...window }), OPTS);
    const family = fx.emu.stats().byOperation;
    fx.emu.requestLog.length = 0;
    for (const d of ['work-items', 'work-item-comments', 'work-item-history']) {
      await runLinearUnit(fx.unit({ datasetKey: d, ...window }), OPTS);
    }
    const separate = fx.emu.stats().byOperation;
    const issuePages = (ops: Record<string, number>) =>
      Object.entries(ops)
        .filter(([op]) => op.startsWith('SyncIssues'))
        .reduce((n, [, k]) => n + k, 0);
    expect(issuePages(family)).toBe(6);
    expect(issuePages(separate)).toBe(18);
  });

  it('maps status, started_at (first move into a started state), completed_at, labels and assignee', async () => {
    await runLinearUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY, ...window }), OPTS);
    const rows = new Map((await rowsOf<Record<string, unknown>>(fx.db, 'work_items')).map((r) => [r.external_id, r]));
    const typeOf = (i: IssueRec) => fx.emu.data.states.find((s) => s.id === i.stateId)!;
    const byType = (type: string) => engIssues(0, T0).find((i) => typeOf(i).type === type)!;
    const firstStart = (i: IssueRec) => {
      const h = i.history.find((x) => fx.emu.data.states.find((s) => s.id === x.toStateId)?.type === 'started');
      return h ? new Date(h.createdAt) : null;
    };
    const done = byType('completed');
    expect(rows.get(done.id)).toMatchObject({
      status: 'done',
      status_raw: 'Done',
      completed_at: new Date(done.completedAt!),
      started_at: firstStart(done),
      provider: 'linear',
      container: 'ENG',
      number: `ENG-${done.number}`,
    });
    expect(firstStart(done)).not.toBeNull();
    const started = byType('started');
    expect(rows.get(started.id)).toMatchObject({
      status: 'in_progress',
      completed_at: null,
      started_at: firstStart(started),
    });
    const backlog = byType('backlog');
    expect(rows.get(backlog.id)).toMatchObject({ status: 'todo', started_at: null, completed_at: null });
    const canceled = engIssues(0, T0).find((i) => typeOf(i).type === 'canceled');
    if (canceled)
      expect(rows.get(canceled.id)).toMatchObject({
        status: 'cancelled',
        completed_at: new Date(canceled.canceledAt!),
      });
    const labelled = engIssues(0, T0).find((i) => i.labelIds.length > 0 && i.assigneeId)!;
    const row = rows.get(labelled.id) as { labels: string[]; assignees: string[] };
    const names = labelled.labelIds.map((id) => fx.emu.data.labels.find((l) => l.id === id)!.name);
    expect([...row.labels].sort()).toEqual([...names].sort());
    expect(row.assignees).toEqual([fx.emu.data.users.find((u) => u.id === labelled.assigneeId)!.displayName]);
    const events = await rowsOf<{ kind: string; to_value: string | null }>(fx.db, 'work_item_events');
    expect(new Set(events.map((e) => e.kind))).toEqual(new Set(['state', 'label', 'assignee']));
  });

  it('a member planned alone asks only for its own connection and writes only its surface', async () => {
    const c = fx.unit({ datasetKey: 'work-item-comments', ...window });
    const result = await runLinearUnit(c, OPTS);
    const issues = engIssues(T0 - 40 * DAY, T0);
    expect(await count(fx.db, 'work_item_comments')).toBe(issues.reduce((n, i) => n + i.comments.length, 0));
    expect(await count(fx.db, 'work_items')).toBe(0);
    expect(await count(fx.db, 'work_item_events')).toBe(0);
    expect(result.touchedSurfaces).toEqual(['work_item_comments']);
    expect(fx.emu.stats().byOperation.SyncIssuesIdsComments).toBe(6);
    expect(fx.emu.stats().byOperation.SyncIssuesCommentsHistoryLabels).toBeUndefined();

    await runLinearUnit(fx.unit({ datasetKey: 'work-item-history', ...window }), OPTS);
    expect(await count(fx.db, 'work_item_events')).toBe(eventCount(issues));
    await runLinearUnit(fx.unit({ datasetKey: 'work-item-labels', ...window }), OPTS);
    expect(await count(fx.db, 'work_items')).toBe(issues.length);
    expect(fx.emu.stats().byOperation.SyncIssuesLabels).toBe(6);
  });

  it('incremental after a backfill, with issues updated in between: no gap, no duplicate', async () => {
    const backfill = await runLinearUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY, ...window }), OPTS);
    expect(backfill.work_items).toBe(60);
    fx.clock.set(T0 + 3_600_000);
    const m = fx.emu.mutate();
    const since = new Date(T0);
    const before = new Date(T0 + 3_600_000 + 1);
    const changed = engIssues(since.getTime(), before.getTime());
    expect(changed.length).toBeGreaterThan(0);
    fx.emu.requestLog.length = 0;
    const inc = await runLinearUnit(
      fx.unit({ datasetKey: 'work-items', datasets: FAMILY, mode: 'incremental', since, before }),
      OPTS,
    );
    expect(inc.work_items).toBe(changed.length);
    const engAll = engIssues(0, Number.MAX_SAFE_INTEGER);
    expect(await count(fx.db, 'work_items')).toBe(engAll.length);
    const rows = await rowsOf<{ external_id: string; updated_at: Date }>(fx.db, 'work_items');
    const want = new Map(engAll.map((i) => [i.id, i.updatedAt]));
    for (const r of rows) expect(r.updated_at.getTime()).toBe(want.get(r.external_id));
    expect(await count(fx.db, 'work_item_comments')).toBe(engAll.reduce((n, i) => n + i.comments.length, 0));
    expect(m.created.length + m.updated.length).toBeGreaterThan(changed.length - 1);
  });

  it('issues served newest first: an incremental unit past maxPages reads its whole window (no gap)', async () => {
    const c = fx.unit({ datasetKey: 'work-items', datasets: FAMILY, mode: 'incremental', ...window });
    const r = await runLinearUnit(c, { ...OPTS, maxPages: 2 });
    expect(r.work_items).toBe(60);
    expect(r.watermark).toBeUndefined(); // the unit's before
  });

  it('issues served oldest first: an incremental unit stops after maxPages, watermark at what it read', () => {
    const order = new UpdateOrder();
    for (const t of ['2026-03-01T00:00:00Z', '2026-03-01T00:00:00Z', '2026-03-02T00:00:00Z']) order.see(t);
    expect(order).toMatchObject({ ascending: true, latest: new Date('2026-03-02T00:00:00Z') });
    order.see('2026-02-01T00:00:00Z');
    expect(order.ascending).toBe(false);
  });

  it('a lease lost mid-unit: nothing is written after the loss and no page is read after it', async () => {
    const guard = new TestGuard('lost-unit');
    guard.loseAfter = 4; // page 1's three writes and page 2's work_items go through; its comments do not
    const c = fx.unit({ datasetKey: 'work-items', datasets: FAMILY, guard, ...window });
    await expect(runLinearUnit(c, OPTS)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await count(fx.db, 'work_items')).toBe(20);
    const page1 = engIssues(T0 - 40 * DAY, T0).slice(-10); // the newest ten
    expect(await count(fx.db, 'work_item_comments')).toBe(page1.reduce((n, i) => n + i.comments.length, 0));
    expect(fx.emu.stats().byOperation.SyncIssuesCommentsHistoryLabels).toBe(2);
  });
});

describe('Linear provider: reference datasets, config and policy', () => {
  it('writes teams, members, projects and cycles (sprints)', async () => {
    for (const key of ['teams', 'members', 'projects', 'cycles']) {
      await runLinearUnit(fx.unit({ datasetKey: key, tier: 'reference' }), OPTS);
    }
    expect(await rowsOf<{ key: string }>(fx.db, 'teams')).toMatchObject([{ key: 'ENG' }]);
    expect(await count(fx.db, 'members')).toBe(fx.emu.data.users.length);
    expect(await count(fx.db, 'projects')).toBe(fx.emu.data.projects.length);
    const sprints = await rowsOf<{ container: string; state: string }>(fx.db, 'sprints');
    expect(sprints).toHaveLength(fx.emu.scale.cycles);
    expect(sprints.every((s) => s.container === 'ENG')).toBe(true);
    expect(new Set(sprints.map((s) => s.state))).toEqual(new Set(['closed', 'active', 'future']));
    const states = await runLinearUnit(fx.unit({ datasetKey: 'workflow-states', tier: 'reference' }), OPTS);
    expect(states).toMatchObject({ items: 0, coveredBy: 'work-items' });
  });

  it('a reference unit planned without a source reads every enabled team of the integration', async () => {
    const integration = await insertIntegration(
      fx.db,
      { orgId: ORG, provider: 'linear', name: 'acme-linear', config: { apiUrl: fx.emu.url } },
      fx.clock.now(),
    );
    await insertSources(fx.db, ORG, integration.id, ['DES', 'ENG']);
    const spec = { datasetKey: 'cycles', tier: 'reference' as const, sourceKey: null, integrationId: integration.id };
    expect(await runLinearUnit(fx.unit(spec), OPTS)).toMatchObject({ items: 2 * fx.emu.scale.cycles });
    await runLinearUnit(fx.unit({ ...spec, datasetKey: 'teams' }), OPTS);
    const teams = await rowsOf<{ key: string }>(fx.db, 'teams');
    expect(teams.map((x) => x.key).sort()).toEqual(['DES', 'ENG']);
  });

  it('validates config and team keys, naming the field', () => {
    const p = createLinearProvider();
    expect(() => p.validateConfig!({ apiUrl: 'http://example.com/graphql' })).toThrow(/config\.apiUrl/);
    expect(() => p.validateConfig!({ apiUrl: 'http://127.0.0.1:4000/graphql', budgetShare: 0.5 })).not.toThrow();
    expect(() => p.validateConfig!({ budgetShare: 2 })).toThrow(/config\.budgetShare/);
    expect(() => p.validateConfig!({ token: 'x' })).toThrow(ValidationError);
    expect(() => p.validateSource!('ENG', 'sources.0')).not.toThrow();
    for (const bad of ['eng', 'E-1', '', 'ABCDEFGHIJK', 'ENG"']) {
      expect(() => p.validateSource!(bad, 'sources.0')).toThrow(/sources\.0/);
    }
  });

  it('the family is fetched with work-items, and every surface is retry-safe for the expired-lease policy', () => {
    const sink = normalizedSink(fx.db);
    for (const d of LINEAR_DATASETS.filter((x) => x.tier === 'work_item')) {
      expect(d.fetchedWith).toBe(d.key === 'work-items' ? undefined : 'work-items');
      const facts = {
        provider: 'linear',
        mode: 'backfill',
        datasetKey: d.key,
        declaredSurfaces: d.surfaces,
        retrySafeSurfaces: sink.retrySafeSurfaces,
      };
      expect(linearBackfillEligibility(facts)).toBe(true);
    }
  });
});
