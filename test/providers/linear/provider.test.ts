/**
 * The Linear provider against the Linear emulator on 127.0.0.1, writing through the normalized
 * sink into the normalized tables of the test's own database.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { LeaseLostError, ValidationError } from '../../../src/errors.js';
import { linearBackfillEligibility } from '../../../src/domain/retryPolicy.js';
import {
  createLinearProvider,
  LINEAR_DATASETS,
  runLinearUnit,
  type LinearProviderOptions,
} from '../../../src/providers/linear/index.js';
import { startLinearEmulator, type LinearEmulator } from '../../../src/emulators/linear/index.js';
import { UpdateOrder } from '../../../src/providers/linear/units.js';
import type { IssueRec } from '../../../src/emulators/linear/generate.js';
import { normalizedSink } from '../../../src/sinks/normalized/index.js';
import { insertIntegration, insertSources } from '../../../src/store/integrations.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js';
import { countOf, linearContext, rowsOf, TestGuard, truncateSurfaces, type LinearUnitSpec } from './support.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const DAY = 86_400_000;
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history', 'work-item-labels'];
const OPTS: LinearProviderOptions = { pageSize: 10, nestedPageSize: 2, retry: { baseDelayMs: 1, maxDelayMs: 2 } };

let t: TestDatabase;
let clock: ManualClock;
let emu: LinearEmulator;

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t.drop();
});
beforeEach(async () => {
  clock = new ManualClock(T0);
  emu = await startLinearEmulator({ clock, now: new Date(T0), scale: { teams: 2, issues: 120, maxComments: 4 } });
  await truncateSurfaces(t.db);
});
afterEach(async () => {
  await emu.close();
});

function ctx(spec: Partial<LinearUnitSpec> & { datasetKey: string }) {
  return linearContext({ db: t.db, clock, apiUrl: emu.url, token: emu.token, ...spec });
}

/** The emulator's ENG issues updated in [since, before). */
function engIssues(since: number, before: number): IssueRec[] {
  const eng = emu.data.teams.find((x) => x.key === 'ENG')!.id;
  return emu.data.issues.filter((i) => i.teamId === eng && i.updatedAt >= since && i.updatedAt < before);
}

function eventCount(issues: IssueRec[]): number {
  return issues.reduce(
    (n, i) =>
      n +
      i.history.reduce(
        (m, h) =>
          m +
          (h.toStateId ? 1 : 0) +
          (h.toAssigneeId !== undefined ? 1 : 0) +
          (h.addedLabelIds?.length ?? 0) +
          (h.removedLabelIds?.length ?? 0),
        0,
      ),
    0,
  );
}

const window = { since: new Date(T0 - 40 * DAY), before: new Date(T0) };

describe('Linear provider: the work-item family', () => {
  it('one unit writes items, comments and history with one issues query per page (+ overflow pages)', async () => {
    const c = ctx({ datasetKey: 'work-items', datasets: FAMILY, ...window });
    const result = await runLinearUnit(c, OPTS);
    const issues = engIssues(T0 - 40 * DAY, T0);
    const comments = issues.reduce((n, i) => n + i.comments.length, 0);
    expect(issues.length).toBe(60);
    expect(await countOf(t.db, 'work_items')).toBe(60);
    expect(await countOf(t.db, 'work_item_comments')).toBe(comments);
    expect(await countOf(t.db, 'work_item_events')).toBe(eventCount(issues));
    expect(result).toMatchObject({ work_items: 60, work_item_comments: comments });
    expect(result.touchedSurfaces).toEqual(['work_items', 'work_item_comments', 'work_item_events']);

    const ops = emu.stats().byOperation;
    expect(ops.SyncIssuesCommentsHistoryLabels).toBe(6); // 60 issues, 10 per page: ≥ 5 pages
    // Nested connections are paged only when they overflow their first 2 entries.
    const overflow = (n: number) => Math.ceil(Math.max(0, n - 2) / 10);
    expect(ops.SyncIssueCommentsPage ?? 0).toBe(issues.reduce((n, i) => n + overflow(i.comments.length), 0));
    expect(ops.SyncIssueHistoryPage ?? 0).toBe(issues.reduce((n, i) => n + overflow(i.history.length), 0));
    expect(ops.SyncIssueLabelsPage ?? 0).toBe(issues.reduce((n, i) => n + overflow(i.labelIds.length), 0));
    expect(c.lease.writes).toBe(6 * 3); // one fenced write per surface per page
  });

  it('the family in one unit asks for a third of the issue pages that one unit per dataset does', async () => {
    await runLinearUnit(ctx({ datasetKey: 'work-items', datasets: FAMILY, ...window }), OPTS);
    const family = emu.stats().byOperation;
    emu.requestLog.length = 0;
    for (const d of ['work-items', 'work-item-comments', 'work-item-history']) {
      await runLinearUnit(ctx({ datasetKey: d, ...window }), OPTS);
    }
    const separate = emu.stats().byOperation;
    const issuePages = (ops: Record<string, number>) =>
      Object.entries(ops)
        .filter(([op]) => op.startsWith('SyncIssues'))
        .reduce((n, [, k]) => n + k, 0);
    expect(issuePages(family)).toBe(6);
    expect(issuePages(separate)).toBe(18);
  });

  it('maps status, started_at (first move into a started state), completed_at, labels and assignee', async () => {
    await runLinearUnit(ctx({ datasetKey: 'work-items', datasets: FAMILY, ...window }), OPTS);
    const rows = new Map((await rowsOf<Record<string, unknown>>(t.db, 'work_items')).map((r) => [r.external_id, r]));
    const typeOf = (i: IssueRec) => emu.data.states.find((s) => s.id === i.stateId)!;
    const byType = (type: string) => engIssues(0, T0).find((i) => typeOf(i).type === type)!;
    const firstStart = (i: IssueRec) => {
      const h = i.history.find((x) => emu.data.states.find((s) => s.id === x.toStateId)?.type === 'started');
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
    const names = labelled.labelIds.map((id) => emu.data.labels.find((l) => l.id === id)!.name);
    expect([...row.labels].sort()).toEqual([...names].sort());
    expect(row.assignees).toEqual([emu.data.users.find((u) => u.id === labelled.assigneeId)!.displayName]);
    const events = await rowsOf<{ kind: string; to_value: string | null }>(t.db, 'work_item_events');
    expect(new Set(events.map((e) => e.kind))).toEqual(new Set(['state', 'label', 'assignee']));
  });

  it('a member planned alone asks only for its own connection and writes only its surface', async () => {
    const c = ctx({ datasetKey: 'work-item-comments', ...window });
    const result = await runLinearUnit(c, OPTS);
    const issues = engIssues(T0 - 40 * DAY, T0);
    expect(await countOf(t.db, 'work_item_comments')).toBe(issues.reduce((n, i) => n + i.comments.length, 0));
    expect(await countOf(t.db, 'work_items')).toBe(0);
    expect(await countOf(t.db, 'work_item_events')).toBe(0);
    expect(result.touchedSurfaces).toEqual(['work_item_comments']);
    expect(emu.stats().byOperation.SyncIssuesIdsComments).toBe(6);
    expect(emu.stats().byOperation.SyncIssuesCommentsHistoryLabels).toBeUndefined();

    await runLinearUnit(ctx({ datasetKey: 'work-item-history', ...window }), OPTS);
    expect(await countOf(t.db, 'work_item_events')).toBe(eventCount(issues));
    await runLinearUnit(ctx({ datasetKey: 'work-item-labels', ...window }), OPTS);
    expect(await countOf(t.db, 'work_items')).toBe(issues.length);
    expect(emu.stats().byOperation.SyncIssuesLabels).toBe(6);
  });

  it('incremental after a backfill, with issues updated in between: no gap, no duplicate', async () => {
    const backfill = await runLinearUnit(ctx({ datasetKey: 'work-items', datasets: FAMILY, ...window }), OPTS);
    expect(backfill.work_items).toBe(60);
    clock.set(T0 + 3_600_000);
    const m = emu.mutate();
    const since = new Date(T0);
    const before = new Date(T0 + 3_600_000 + 1);
    const changed = engIssues(since.getTime(), before.getTime());
    expect(changed.length).toBeGreaterThan(0);
    emu.requestLog.length = 0;
    const inc = await runLinearUnit(
      ctx({ datasetKey: 'work-items', datasets: FAMILY, mode: 'incremental', since, before }),
      OPTS,
    );
    expect(inc.work_items).toBe(changed.length);
    const engAll = engIssues(0, Number.MAX_SAFE_INTEGER);
    expect(await countOf(t.db, 'work_items')).toBe(engAll.length);
    const rows = await rowsOf<{ external_id: string; updated_at: Date }>(t.db, 'work_items');
    const want = new Map(engAll.map((i) => [i.id, i.updatedAt]));
    for (const r of rows) expect(r.updated_at.getTime()).toBe(want.get(r.external_id));
    expect(await countOf(t.db, 'work_item_comments')).toBe(engAll.reduce((n, i) => n + i.comments.length, 0));
    expect(m.created.length + m.updated.length).toBeGreaterThan(changed.length - 1);
  });

  it('issues served newest first: an incremental unit past maxPages reads its whole window (no gap)', async () => {
    const c = ctx({ datasetKey: 'work-items', datasets: FAMILY, mode: 'incremental', ...window });
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
    const c = ctx({ datasetKey: 'work-items', datasets: FAMILY, guard, ...window });
    await expect(runLinearUnit(c, OPTS)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await countOf(t.db, 'work_items')).toBe(20);
    const page1 = engIssues(T0 - 40 * DAY, T0).slice(-10); // the newest ten
    expect(await countOf(t.db, 'work_item_comments')).toBe(page1.reduce((n, i) => n + i.comments.length, 0));
    expect(emu.stats().byOperation.SyncIssuesCommentsHistoryLabels).toBe(2);
  });
});

describe('Linear provider: reference datasets, config and policy', () => {
  it('writes teams, members, projects and cycles (sprints)', async () => {
    for (const key of ['teams', 'members', 'projects', 'cycles']) {
      await runLinearUnit(ctx({ datasetKey: key, tier: 'reference' }), OPTS);
    }
    expect(await rowsOf<{ key: string }>(t.db, 'teams')).toMatchObject([{ key: 'ENG' }]);
    expect(await countOf(t.db, 'members')).toBe(emu.data.users.length);
    expect(await countOf(t.db, 'projects')).toBe(emu.data.projects.length);
    const sprints = await rowsOf<{ container: string; state: string }>(t.db, 'sprints');
    expect(sprints).toHaveLength(emu.scale.cycles);
    expect(sprints.every((s) => s.container === 'ENG')).toBe(true);
    expect(new Set(sprints.map((s) => s.state))).toEqual(new Set(['closed', 'active', 'future']));
    const states = await runLinearUnit(ctx({ datasetKey: 'workflow-states', tier: 'reference' }), OPTS);
    expect(states).toMatchObject({ items: 0, coveredBy: 'work-items' });
  });

  it('a reference unit planned without a source reads every enabled team of the integration', async () => {
    const integration = await insertIntegration(
      t.db,
      { orgId: 'org-ln', provider: 'linear', name: 'acme-linear', config: { apiUrl: emu.url } },
      clock.now(),
    );
    await insertSources(t.db, 'org-ln', integration.id, ['DES', 'ENG']);
    const spec = { datasetKey: 'cycles', tier: 'reference' as const, sourceKey: null, integrationId: integration.id };
    expect(await runLinearUnit(ctx(spec), OPTS)).toMatchObject({ items: 2 * emu.scale.cycles });
    await runLinearUnit(ctx({ ...spec, datasetKey: 'teams' }), OPTS);
    const teams = await rowsOf<{ key: string }>(t.db, 'teams');
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
    const sink = normalizedSink(t.db);
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
