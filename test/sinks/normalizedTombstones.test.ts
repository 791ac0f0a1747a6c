import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { LeaseLostError, ValidationError } from '../../src/errors.js';
import {
  computeWorkItemMetrics,
  listStoredPage,
  markDeleted,
  type TombstoneScope,
  type TombstoneSurface,
} from '../../src/sinks/normalized/index.js';
import {
  insertIntegration,
  openPglite,
  openPostgres,
  testGuard,
  useSinkFixture,
  type OpenDb,
} from './normalizedHelpers.js';

const ORG = 'org-tombstones';
const T0 = Date.UTC(2026, 2, 4, 12);
const REPO = 'acme/api';
const OTHER_REPO = 'acme/web';

/** Tombstones on PostgreSQL and on PGlite. */
function tombstoneSuite(label: string, open: OpenDb): void {
  describe(`normalized store tombstones (${label})`, () => {
    const clock = new ManualClock(T0);
    const f = useSinkFixture(open, ORG, clock);
    let seq = 0;
    /** External ids unique to one test, so tests share the database without seeing each other's rows. */
    const fresh = (name: string) => `${name}-${++seq}`;

    const base = (externalId: string, integrationId = f.integrationId) => ({
      org_id: ORG,
      integration_id: integrationId,
      provider: 'github',
      external_id: externalId,
      last_synced_at: clock.now(),
    });
    const scope = (surface: TombstoneSurface, source: string | null = REPO, integrationId = f.integrationId) =>
      ({ orgId: ORG, integrationId, provider: 'github', surface, source }) satisfies TombstoneScope;
    const mark = (s: TombstoneScope, ids: string[], at = new Date(T0)) =>
      f.db.transaction((tx) => markDeleted(tx, s, ids, at));
    async function deletedAt(table: string, externalId: string, integrationId = f.integrationId) {
      const { rows } = await f.db.query<{ deleted_at: Date | null }>(
        `SELECT deleted_at FROM ${f.db.schema.table(table)} WHERE integration_id = $1 AND external_id = $2`,
        [integrationId, externalId],
      );
      return rows[0]!.deleted_at;
    }

    it('a row written after it was marked deleted is restored: its deleted_at is cleared', async () => {
      const id = fresh('item');
      const item = { ...base(id), title: 'Crash on save', container: REPO, updated_at: new Date(T0) };
      await f.sink.write(f.guard(), 'work_items', [item]);
      expect(await mark(scope('work_items'), [id])).toBe(1);
      expect(await deletedAt('work_items', id)).toEqual(new Date(T0));

      await f.sink.write(f.guard(), 'work_items', [{ ...item, title: 'Crash on save (reopened)' }]);
      expect(await deletedAt('work_items', id)).toBeNull();
    });

    it('every surface a provider deletes from is restored by a write', async () => {
      const item = fresh('parent');
      const pr = fresh('pr');
      await f.sink.write(f.guard(), 'work_items', [{ ...base(item), container: REPO }]);
      await f.sink.write(f.guard(), 'pull_requests', [{ ...base(pr), container: REPO }]);
      const rows: [TombstoneSurface, Record<string, unknown>, string | null][] = [
        ['work_item_comments', { ...base(fresh('c')), work_item_external_id: item }, REPO],
        ['pull_request_reviews', { ...base(fresh('r')), pull_request_external_id: pr }, REPO],
        ['pull_requests', { ...base(fresh('pr')), container: REPO }, REPO],
        ['sprints', { ...base(fresh('s')), container: REPO }, REPO],
        ['members', { ...base(fresh('m')), login: 'octocat' }, null],
      ];
      for (const [surface, row, source] of rows) {
        await f.sink.write(f.guard(), surface, [row]);
        expect(await mark(scope(surface, source), [row.external_id as string]), surface).toBe(1);
        await f.sink.write(f.guard(), surface, [row]);
        expect(await deletedAt(surface, row.external_id as string), surface).toBeNull();
      }
    });

    it('marks only rows not already deleted, keeping the first time; never removes a row', async () => {
      const [a, b] = [fresh('a'), fresh('b')];
      await f.sink.write(f.guard(), 'work_items', [
        { ...base(a), container: REPO },
        { ...base(b), container: REPO },
      ]);
      expect(await mark(scope('work_items'), [a], new Date(T0))).toBe(1);
      expect(await mark(scope('work_items'), [a, b, 'never-stored'], new Date(T0 + 60_000))).toBe(1);
      expect(await deletedAt('work_items', a)).toEqual(new Date(T0));
      expect(await deletedAt('work_items', b)).toEqual(new Date(T0 + 60_000));
      expect(await mark(scope('work_items'), [])).toBe(0);
    });

    it('marks only rows of the scope’s integration and source', async () => {
      const other = await insertIntegration(f.db, ORG);
      const id = fresh('shared');
      const otherRepo = fresh('other-repo');
      await f.sink.write(f.guard(), 'work_items', [
        { ...base(id), container: REPO },
        { ...base(id, other), container: REPO },
        { ...base(otherRepo), container: OTHER_REPO },
      ]);
      expect(await mark(scope('work_items'), [id, otherRepo])).toBe(1);
      expect(await deletedAt('work_items', id)).not.toBeNull();
      expect(await deletedAt('work_items', id, other)).toBeNull();
      expect(await deletedAt('work_items', otherRepo)).toBeNull();
    });

    it('scopes comments and reviews through their parent’s source', async () => {
      const [mine, theirs] = [fresh('item'), fresh('item')];
      const [c1, c2] = [fresh('comment'), fresh('comment')];
      await f.sink.write(f.guard(), 'work_items', [
        { ...base(mine), container: REPO },
        { ...base(theirs), container: OTHER_REPO },
      ]);
      await f.sink.write(f.guard(), 'work_item_comments', [
        { ...base(c1), work_item_external_id: mine, updated_at: new Date(T0) },
        { ...base(c2), work_item_external_id: theirs },
      ]);
      expect(await mark(scope('work_item_comments', OTHER_REPO), [c1])).toBe(0);
      const page = await f.db.transaction((tx) => listStoredPage(tx, scope('work_item_comments'), null, 100));
      expect(page.filter((e) => e.externalId === c1 || e.externalId === c2)).toEqual([
        { externalId: c1, updatedAt: new Date(T0), deletedAt: null },
      ]);
    });

    it('lists a source a page at a time in external id order, deleted rows with their time', async () => {
      const source = fresh('acme/paged');
      const ids = Array.from({ length: 5 }, (_, i) => `p-${seq}-${i}`);
      await f.sink.write(
        f.guard(),
        'work_items',
        ids.map((id, i) => ({ ...base(id), container: source, updated_at: new Date(T0 + i) })),
      );
      await f.sink.write(f.guard(), 'work_items', [{ ...base(fresh('elsewhere')), container: OTHER_REPO }]);
      await mark(scope('work_items', source), [ids[1]!]);
      const pages: string[][] = [];
      let after: string | null = null;
      for (;;) {
        const page = await listStoredPage(f.db, scope('work_items', source), after, 2);
        pages.push(page.map((e) => e.externalId));
        if (page.length < 2) break;
        after = page.at(-1)!.externalId;
      }
      expect(pages).toEqual([ids.slice(0, 2), ids.slice(2, 4), ids.slice(4)]);
      const first = await listStoredPage(f.db, scope('work_items', source), null, 2);
      expect(first).toEqual([
        { externalId: ids[0], updatedAt: new Date(T0), deletedAt: null },
        { externalId: ids[1], updatedAt: new Date(T0 + 1), deletedAt: new Date(T0) },
      ]);
    });

    it("a verify's side: compare stamps what was listed; unseen is what was neither listed nor written", async () => {
      const source = fresh('acme/verified');
      const [listed, written, unseen, old] = ['listed', 'written', 'unseen', 'old'].map((n) => `${n}-${seq}`) as [
        string,
        string,
        string,
        string,
      ];
      const at = (ms: number) => ({ last_synced_at: new Date(ms) });
      const rows = [listed, unseen, old].map((id) => ({ ...base(id), ...at(T0), container: source }));
      await f.sink.write(f.guard(), 'work_items', rows);
      await mark(scope('work_items', source), [old]); // deleted before: not a candidate again
      const since = new Date(T0 + 1000);
      const stones = f.sink.tombstones;
      const stored = await stones.compare(f.guard(), scope('work_items', source), [listed, 'not-stored'], since);
      expect(stored.map((e) => e.externalId)).toEqual([listed]);
      // Written after the verify began (by another unit): not unseen.
      await f.sink.write(f.guard(), 'work_items', [{ ...base(written), ...at(T0 + 2000), container: source }]);
      expect(await stones.unseen(scope('work_items', source), since, null, 100)).toEqual([unseen]);
      expect(await stones.unseen(scope('work_items', source), since, unseen, 100)).toEqual([]);

      // The mark keeps to the unseen: a listed or rewritten row is not marked, even when named.
      const ids = [listed, written, unseen];
      expect(await stones.markDeleted(f.guard(), scope('work_items', source), ids, since, since)).toBe(1);
      expect(await deletedAt('work_items', unseen)).toEqual(since);
      expect(await deletedAt('work_items', listed)).toBeNull();
      expect(await deletedAt('work_items', written)).toBeNull();

      // Under a lease held by someone else nothing is stamped or marked.
      const lost = testGuard(f.db, f.unitId, 'owner-b', clock);
      const late = new Date(T0 + 9000);
      await expect(stones.compare(lost, scope('work_items', source), [unseen], late)).rejects.toThrow(LeaseLostError);
      await expect(stones.markDeleted(lost, scope('work_items', source), [listed], late, late)).rejects.toThrow(
        LeaseLostError,
      );
      expect(await deletedAt('work_items', listed)).toBeNull();
      expect(await stones.unseen(scope('work_items', source), late, null, 100)).toEqual([listed, written]);
    });

    it('refuses a bad scope, page size or id list with a ValidationError naming the field', async () => {
      const cases: [Promise<unknown>, string][] = [
        [listStoredPage(f.db, scope('work_items'), null, 0), 'limit'],
        [listStoredPage(f.db, scope('work_items'), null, 10_001), 'limit'],
        [listStoredPage(f.db, scope('members', REPO), null, 10), 'source'],
        [listStoredPage(f.db, scope('work_items', null), null, 10), 'source'],
        [listStoredPage(f.db, { ...scope('work_items'), surface: 'commits' as TombstoneSurface }, null, 10), 'surface'],
        [listStoredPage(f.db, scope('work_items', REPO, 'not-a-uuid'), null, 10), 'integrationId'],
        [markDeleted(f.db, scope('work_items'), [''], new Date(T0)), 'externalIds[0]'],
      ];
      for (const [call, field] of cases) {
        const err = await call.then(
          () => null,
          (e: unknown) => e,
        );
        expect(err, field).toBeInstanceOf(ValidationError);
        expect((err as ValidationError).field).toBe(field);
      }
    });

    it('a row may not carry deleted_at; a work item carries archived_at', async () => {
      const id = fresh('archived');
      await expect(
        f.sink.write(f.guard(), 'work_items', [{ ...base(id), deleted_at: new Date(T0) }]),
      ).rejects.toMatchObject({ field: 'work_items.deleted_at' });
      await f.sink.write(f.guard(), 'work_items', [{ ...base(id), archived_at: '2026-03-01T00:00:00Z' }]);
      const { rows } = await f.db.query<{ archived_at: Date; deleted_at: Date | null }>(
        `SELECT archived_at, deleted_at FROM ${f.db.schema.table('work_items')} WHERE external_id = $1`,
        [id],
      );
      expect(rows).toEqual([{ archived_at: new Date('2026-03-01T00:00:00Z'), deleted_at: null }]);
    });

    it('the work-item-metrics handler does not count deleted work items or pull requests', async () => {
      const integrationId = await insertIntegration(f.db, ORG);
      const day = (h: number) => new Date(Date.UTC(2026, 2, 3, h));
      const [kept, gone, pr] = [fresh('kept'), fresh('gone'), fresh('pr')];
      const done = { container: REPO, status: 'done', created_at: day(0), completed_at: day(10) };
      await f.sink.write(f.guard(), 'work_items', [
        { ...base(kept, integrationId), ...done },
        { ...base(gone, integrationId), ...done, completed_at: day(20) },
      ]);
      await f.sink.write(f.guard(), 'pull_requests', [
        { ...base(pr, integrationId), container: REPO, state: 'merged', created_at: day(0), merged_at: day(1) },
      ]);
      const logger = pino({ level: 'silent' });
      const figures = async () => {
        clock.advance(1000);
        const payload = {
          orgId: ORG,
          runId: '00000000-0000-0000-0000-000000000001',
          integrationId,
          provider: 'github',
          datasets: ['work-items'],
          window: { from: day(0).toISOString(), to: day(23).toISOString() },
        };
        await f.db.transaction((tx) => computeWorkItemMetrics(payload, { tx, idempotencyKey: 'k', clock, logger }));
        const { rows } = await f.db.query(
          `SELECT items_created, items_completed, cycle_time_p90_hours, prs_merged
             FROM ${f.db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1 AND computed_at = $2`,
          [integrationId, clock.now()],
        );
        return rows;
      };
      expect(await figures()).toEqual([
        { items_created: 2, items_completed: 2, cycle_time_p90_hours: 19, prs_merged: 1 },
      ]);
      await mark(scope('work_items', REPO, integrationId), [gone]);
      await mark(scope('pull_requests', REPO, integrationId), [pr]);
      expect(await figures()).toEqual([
        { items_created: 1, items_completed: 1, cycle_time_p90_hours: 10, prs_merged: 0 },
      ]);
    });
  });
}

tombstoneSuite('PostgreSQL', openPostgres);
tombstoneSuite('PGlite', openPglite);
