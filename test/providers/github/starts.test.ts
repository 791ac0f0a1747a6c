/**
 * GitHub's work_items.started_at (docs/normalized-store.md): the first `labeled` event adding an
 * in-progress label, whichever of the issue and its events the sink stores first, however often
 * either is written again, and when the two are written at the same time. Rows come from the
 * GitHub mapping, as the provider's units write them, through a normalized sink running GitHub's
 * surface hooks.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { migrate } from '../../../src/db/migrator.js';
import { PgliteDb } from '../../../src/db/pglite.js';
import type { Db, Tx } from '../../../src/db/types.js';
import {
  eventRow,
  workItemRow,
  type GhIssue,
  type GhIssueEvent,
  type RowScope,
} from '../../../src/providers/github/mapping.js';
import { GITHUB_SURFACE_HOOKS } from '../../../src/providers/github/starts.js';
import { silentLogger } from '../../../src/logger.js';
import { computeWorkItemMetrics, normalizedSink, NORMALIZED_SURFACES } from '../../../src/sinks/normalized/index.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js';
import { insertIntegration, insertRunningUnit, testGuard } from '../../sinks/normalizedHelpers.js';

const ORG = 'org-starts';
const T0 = Date.UTC(2026, 0, 10, 12);
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function issue(number: number, over: Partial<GhIssue> = {}): GhIssue {
  return {
    id: 9_000 + number,
    number,
    title: `Issue ${number}`,
    state: 'closed',
    state_reason: 'completed',
    labels: [{ name: 'bug' }],
    assignees: [],
    created_at: iso(T0 - 100 * HOUR),
    updated_at: iso(T0 - HOUR),
    closed_at: iso(T0 - HOUR),
    html_url: `https://github.com/acme/app/issues/${number}`,
    ...over,
  };
}

let nextEventId = 1;
function event(number: number, kind: string, at: number, label?: string): GhIssueEvent {
  return {
    id: nextEventId++,
    event: kind,
    actor: { id: 1, login: 'octocat' },
    created_at: iso(at),
    ...(label === undefined ? {} : { label: { name: label } }),
    ...(kind === 'assigned' ? { assignee: { id: 2, login: 'hubot' } } : {}),
    issue: { number },
  };
}

const sinkOn = (db: Db) => normalizedSink(db, { hooks: [GITHUB_SURFACE_HOOKS] });

/**
 * Starts against PostgreSQL; the plain order cases also against PGlite, which runs one transaction
 * at a time (`concurrent` false: no two writes can overlap there).
 */
function startsSuite(
  label: string,
  open: () => Promise<{ db: Db; close(): Promise<void> }>,
  concurrent: boolean,
): void {
  describe(`GitHub started_at from label events (${label})`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let integrationId: string;
    let unitId: string;
    const clock = new ManualClock(T0);
    const guard = () => testGuard(db, unitId, 'owner-a', clock);
    const scope = (): RowScope => ({
      orgId: ORG,
      integrationId,
      provider: 'github',
      container: 'acme/app',
      syncedAt: clock.now(),
    });
    const writeIssues = (issues: GhIssue[], on: Db = db) =>
      sinkOn(on).write(
        guard(),
        'work_items',
        issues.map((i) => workItemRow(scope(), i)),
      );
    const writeEvents = (events: GhIssueEvent[], on: Db = db) =>
      sinkOn(on).write(
        guard(),
        'work_item_events',
        events.map((e) => eventRow(scope(), e)),
      );

    async function starts(): Promise<Record<string, number | null>> {
      const { rows } = await db.query<{ external_id: string; started_at: Date | null }>(
        `SELECT external_id, started_at FROM ${db.schema.table('work_items')}
          WHERE provider = 'github' ORDER BY external_id`,
      );
      return Object.fromEntries(rows.map((r) => [r.external_id, r.started_at?.getTime() ?? null]));
    }

    beforeAll(async () => {
      ({ db, close } = await open());
      integrationId = await insertIntegration(db, ORG);
      unitId = await insertRunningUnit(db, ORG, integrationId, 'owner-a', new Date(T0 + 24 * HOUR));
    });
    afterAll(async () => {
      await close();
    });
    beforeEach(async () => {
      for (const s of NORMALIZED_SURFACES) await db.query(`DELETE FROM ${db.schema.table(s)}`);
    });

    const history = () => [
      event(1, 'labeled', T0 - 90 * HOUR, 'bug'),
      event(1, 'assigned', T0 - 80 * HOUR),
      event(1, 'labeled', T0 - 50 * HOUR, 'In Progress'),
      event(1, 'closed', T0 - HOUR),
      event(2, 'labeled', T0 - 70 * HOUR, 'in-progress'),
      event(3, 'labeled', T0 - 60 * HOUR, 'wontfix'),
      event(3, 'assigned', T0 - 60 * HOUR),
    ];
    const want = {
      'acme/app#1': T0 - 50 * HOUR,
      'acme/app#2': T0 - 70 * HOUR,
      // Labels other than in-progress ones, and assignments, do not start an item.
      'acme/app#3': null,
    };
    const issues = () => [issue(1), issue(2, { state: 'open', closed_at: null }), issue(3)];

    it('the mapping leaves started_at to the sink', () => {
      expect(Object.hasOwn(workItemRow(scope(), issue(1)), 'started_at')).toBe(false);
    });

    it("a sink built without GitHub's hooks derives no start", async () => {
      const plain = normalizedSink(db);
      await plain.write(
        guard(),
        'work_item_events',
        history().map((e) => eventRow(scope(), e)),
      );
      await plain.write(
        guard(),
        'work_items',
        issues().map((i) => workItemRow(scope(), i)),
      );
      expect(await starts()).toEqual({ 'acme/app#1': null, 'acme/app#2': null, 'acme/app#3': null });
    });

    it('issues first, then their events: each takes its first in-progress label event', async () => {
      await writeIssues(issues());
      expect(await starts()).toEqual({ 'acme/app#1': null, 'acme/app#2': null, 'acme/app#3': null });
      await writeEvents(history());
      expect(await starts()).toEqual(want);
    });

    it('events first, then the issues: the same', async () => {
      await writeEvents(history());
      await writeIssues(issues());
      expect(await starts()).toEqual(want);
    });

    it('re-syncing both, in either order, again and again, leaves it there', async () => {
      const events = history();
      await writeIssues(issues());
      await writeEvents(events);
      for (let n = 0; n < 2; n++) {
        clock.advance(HOUR);
        await writeEvents(events);
        await writeIssues(issues());
        await writeIssues(issues());
        await writeEvents(events.slice(2, 3));
      }
      expect(await starts()).toEqual(want);
    });

    it('labelled, unlabelled, labelled again: the FIRST transition, whichever page is written first', async () => {
      const first = event(4, 'labeled', T0 - 40 * HOUR, 'in progress');
      const removed = event(4, 'unlabeled', T0 - 30 * HOUR, 'in progress');
      const again = event(4, 'labeled', T0 - 20 * HOUR, 'in progress');
      // The newest page first, as a descending read of the events list delivers them.
      await writeEvents([again]);
      await writeIssues([issue(4)]);
      expect(await starts()).toEqual({ 'acme/app#4': T0 - 20 * HOUR });
      await writeEvents([removed, first]);
      expect(await starts()).toEqual({ 'acme/app#4': T0 - 40 * HOUR });
      await writeEvents([again]);
      await writeIssues([issue(4)]);
      expect(await starts()).toEqual({ 'acme/app#4': T0 - 40 * HOUR });
    });

    it("never touches another provider's item, nor another integration's", async () => {
      const other = await insertIntegration(db, ORG);
      const linearStart = new Date(T0 - 10 * HOUR);
      await sinkOn(db).write(guard(), 'work_items', [
        {
          org_id: ORG,
          integration_id: integrationId,
          provider: 'linear',
          external_id: 'acme/app#1',
          started_at: linearStart,
          last_synced_at: clock.now(),
        },
      ]);
      await writeIssues([issue(1)]);
      await sinkOn(db).write(
        guard(),
        'work_item_events',
        history().map((e) => eventRow({ ...scope(), integrationId: other }, e)),
      );
      expect(await starts()).toEqual({ 'acme/app#1': null });
      await writeEvents(history());
      expect(await starts()).toEqual({ 'acme/app#1': T0 - 50 * HOUR });
      const { rows } = await db.query<{ started_at: Date }>(
        `SELECT started_at FROM ${db.schema.table('work_items')} WHERE provider = 'linear'`,
      );
      expect(rows).toEqual([{ started_at: linearStart }]);
    });

    it('the work-item-metrics handler measures cycle time from that start, not from creation', async () => {
      await writeEvents(history());
      await writeIssues([issue(1), issue(5)]);
      const day = iso(T0 - HOUR).slice(0, 10);
      const window = { from: `${day}T00:00:00Z`, to: `${day}T23:59:59Z` };
      const payload = { orgId: ORG, runId: '00000000-0000-0000-0000-000000000001', integrationId, window };
      await db.transaction((tx) =>
        computeWorkItemMetrics(
          { ...payload, provider: 'github', datasets: ['work-items', 'work-item-history'] },
          { tx, idempotencyKey: 'k', clock, logger: silentLogger() },
        ),
      );
      const { rows } = await db.query<{ done: number; p50: number; p90: number }>(
        `SELECT items_completed AS done, cycle_time_p50_hours AS p50, cycle_time_p90_hours AS p90
           FROM ${db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1`,
        [integrationId],
      );
      // #1 started 50 h before its close 1 h before T0: 49 h; #5, never labelled, from creation: 99 h.
      expect(rows).toHaveLength(1);
      expect(rows[0]!.done).toBe(2);
      expect(rows[0]!.p50).toBeCloseTo((49 + 99) / 2, 9);
      expect(rows[0]!.p90).toBeCloseTo(49 + 0.9 * 50, 9);
    });

    it.skipIf(!concurrent)(
      'an issue and its events written at the same time: neither write misses the other',
      async () => {
        // The second write starts once the first has done its work and holds its commit back, so
        // without the items' locks each would look for the other's rows before they are committed,
        // and both would miss them.
        const slow = holdingCommits(db, 300);
        let held = slow.nextHold();
        const issuesWrite = writeIssues(issues(), slow.db);
        await held;
        await Promise.all([issuesWrite, writeEvents(history(), slow.db)]);
        expect(await starts()).toEqual(want);

        await db.query(`DELETE FROM ${db.schema.table('work_items')}`);
        await db.query(`DELETE FROM ${db.schema.table('work_item_events')}`);
        held = slow.nextHold();
        const eventsWrite = writeEvents(history(), slow.db);
        await held;
        await Promise.all([eventsWrite, writeIssues(issues(), slow.db)]);
        expect(await starts()).toEqual(want);
      },
    );
  });
}

/**
 * `db` whose transactions wait `ms` after their work, before they commit; `nextHold()` resolves
 * when the next one has done its work and starts waiting.
 */
function holdingCommits(db: Db, ms: number): { db: Db; nextHold(): Promise<void> } {
  let waiting: (() => void)[] = [];
  const hold = async () => {
    const woken = waiting;
    waiting = [];
    for (const wake of woken) wake();
    await new Promise((r) => setTimeout(r, ms));
  };
  const held = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'transaction') {
        return <R>(fn: (tx: Tx) => Promise<R>) =>
          target.transaction(async (tx) => {
            const out = await fn(tx);
            await hold();
            return out;
          });
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { db: held, nextHold: () => new Promise<void>((resolve) => waiting.push(resolve)) };
}

startsSuite(
  'PostgreSQL',
  async () => {
    const t: TestDatabase = await createTestDatabase({ poolSize: 4 });
    return { db: t.db, close: () => t.drop() };
  },
  true,
);

startsSuite(
  'PGlite',
  async () => {
    const db = await PgliteDb.open();
    await migrate(db);
    return { db, close: () => db.close() };
  },
  false,
);
