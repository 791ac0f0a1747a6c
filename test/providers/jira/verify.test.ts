/**
 * Jira's verify of a project against the emulator (src/providers/jira/verify.ts on the kit's steps,
 * src/providers/kit/verify.ts): missing issues fetched with their family, stale ones refreshed,
 * deleted ones marked (never from an incomplete listing, never one still there), a marked one that
 * comes back restored, and a verify deferred by a rate limit resuming where it stood. Each verify
 * also runs its comments pass (verifyComments.test.ts): the stored comments of the issues it did
 * not write again are confirmed, and those of a deleted issue marked with it.
 */
import { describe, expect, it } from 'vitest';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import { classifyError } from '../../../src/errors.js';
import { createJiraProvider, runJiraUnit, type JiraProviderOptions } from '../../../src/providers/jira/index.js';
import { RETRY_DEFAULTS } from '../../../src/providers/kit/retry.js';
import { COMMENT_LIST_PAGE } from '../../../src/emulators/jira/index.js';
import { jiraRows } from '../../helpers/emulatorRows.js';
import { count, DAY, T0 } from '../../helpers/emulatorSuite.js';
import { failureOf, rateLimitOf } from '../../helpers/failures.js';
import { useJiraSuite } from './support.js';

const FAST: JiraProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, budget: { probePollMs: 20, reserve: 0 } };
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history'];
const MINUTE = 60_000;

const fx = useJiraSuite({
  seed: 21,
  searchLagMs: 0,
  commentListPage: COMMENT_LIST_PAGE,
  scale: { projects: 1, issues: 260, longLists: 0, days: 20 },
});

/** Backfills the whole project's family, so the store holds every issue. */
async function backfill() {
  const unit = fx.unit({ datasetKey: 'work-items', datasets: FAMILY, since: new Date(T0 - 400 * DAY) });
  await runJiraUnit(unit, FAST);
}

/** A verify unit planned at `before` (the run's planning time; a resumed attempt keeps it). */
function verify(checkpoint: UnitCheckpoint | null = null, before = fx.clock.now()) {
  const unit = fx.unit({ datasetKey: 'work-items', datasets: FAMILY, mode: 'verify', since: null, before, checkpoint });
  return runJiraUnit(unit, FAST);
}

const issues = () => fx.emu.data.projects.find((p) => p.key === 'ENG')!.issues;

async function stored(): Promise<Map<string, { updated: number; deleted: boolean }>> {
  const { rows } = await fx.db.query<{ external_id: string; updated_at: Date; deleted_at: Date | null }>(
    `SELECT external_id, updated_at, deleted_at FROM ${fx.db.schema.table('work_items')}`,
  );
  return new Map(rows.map((r) => [r.external_id, { updated: r.updated_at.getTime(), deleted: r.deleted_at !== null }]));
}

/** The ids of the rows marked deleted. */
async function marked(): Promise<string[]> {
  return [...(await stored()).entries()].filter(([, s]) => s.deleted).map(([id]) => id);
}

/** Rows per family table, as the store holds them. */
async function familyCounts() {
  return {
    work_items: await count(fx.db, 'work_items'),
    work_item_comments: await count(fx.db, 'work_item_comments'),
    work_item_events: await count(fx.db, 'work_item_events'),
  };
}

/** The live comments stored of the issues `of` (all when null) less those of the issues `except`. */
async function storedComments(except: readonly string[], of: readonly string[] | null = null): Promise<number> {
  const { rows } = await fx.db.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${fx.db.schema.table('work_item_comments')}
      WHERE deleted_at IS NULL AND NOT (work_item_external_id = ANY($1::text[]))
        AND ($2::text[] IS NULL OR work_item_external_id = ANY($2::text[]))`,
    [except, of],
  );
  return Number(rows[0]!.n);
}

/** The `comment/list` requests confirming `n` comments that all exist: pages of COMMENT_LIST_PAGE. */
const commentListRequests = (n: number) => Math.ceil(n / COMMENT_LIST_PAGE);

const hrefOf = (url: string | URL | Request) => (url instanceof Request ? url.url : url.toString());

/**
 * A verify's counts once issue `goneId` was deleted at Jira: every live issue and every stored
 * comment of one checked; the issue and its stored comments marked.
 */
async function countsAfterDeleting(goneId: string) {
  const confirmed = await storedComments([goneId]);
  const goneComments = await storedComments([], [goneId]);
  return { checked: issues().length + confirmed, missing: 0, stale: 0, restored: 0, deleted: 1 + goneComments };
}

describe('Jira verify', () => {
  it('fetches the missing with their family, refreshes the stale, marks the deleted; then finds nothing', async () => {
    await fx.start();
    await backfill();
    const all = issues();
    expect(await count(fx.db, 'work_items')).toBe(all.length);
    // Missing: two issues' rows (and their comments) lost from the store.
    const lost = [all[3]!, all[40]!];
    await fx.db.query(
      `DELETE FROM ${fx.db.schema.table('work_item_comments')} WHERE work_item_external_id = ANY($1::text[])`,
      [lost.map((i) => i.id)],
    );
    await fx.db.query(`DELETE FROM ${fx.db.schema.table('work_items')} WHERE external_id = ANY($1::text[])`, [
      lost.map((i) => i.id),
    ]);
    // Deleted at Jira: two issues.
    const gone = [all[10]!, all[100]!];
    for (const i of gone) fx.emu.deleteIssue(i.id);
    // Stale: issues changed after the backfill.
    fx.clock.set(T0 + MINUTE);
    const m = fx.emu.mutate();
    const created = m.created.length;
    const lostKeys = new Set(lost.map((i) => i.key));
    const stale = m.touched.filter((k) => !m.created.includes(k) && !lostKeys.has(k)).length;
    fx.clock.set(T0 + 10 * MINUTE);
    // The comments pass confirms the stored comments of the issues the first pass did not write.
    const byKey = new Map(issues().map((i) => [i.key, i.id]));
    const written = [...m.touched.map((k) => byKey.get(k)!), ...lost.map((i) => i.id)];
    const goneIds = gone.map((i) => i.id);
    const confirmed = await storedComments([...written, ...goneIds]);
    const goneComments = await storedComments([], goneIds);
    expect(goneComments).toBeGreaterThan(0);

    const r = await verify();
    const now = issues();
    expect(r.verify).toEqual({
      checked: now.length + confirmed,
      missing: lost.length + created,
      stale,
      restored: 0,
      deleted: gone.length + goneComments,
    });
    const after = await stored();
    for (const i of now) expect(after.get(i.id), i.key).toEqual({ updated: i.updated, deleted: false });
    for (const i of gone) expect(after.get(i.id)!.deleted).toBe(true); // kept, marked
    expect(await count(fx.db, 'work_items')).toBe(now.length + gone.length);
    const lostComments = lost.flatMap((i) => i.comments.map((c) => c.id));
    const { rows } = await fx.db.query(
      `SELECT 1 FROM ${fx.db.schema.table('work_item_comments')} WHERE external_id = ANY($1::text[])`,
      [lostComments],
    );
    expect(rows).toHaveLength(lostComments.length); // the family came with the missing issues

    fx.clock.set(T0 + 20 * MINUTE); // a later verify: what the first stamped is unseen since it began
    const calls = fx.emu.requestLog.length;
    const comments = await storedComments([]);
    expect(comments).toBe(now.reduce((n, i) => n + i.comments.length, 0));
    const again = await verify();
    expect(again.verify).toEqual({ checked: now.length + comments, missing: 0, stale: 0, restored: 0, deleted: 0 });
    // Unchanged: /myself, one listing request per 100 issues, then the comments confirmed by id.
    const asked = fx.emu.requestLog.slice(calls);
    expect(asked.length).toBe(1 + Math.ceil(now.length / 100) + commentListRequests(comments));
    expect(asked.filter((l) => l.path.startsWith('/rest/api/3/comment/list'))).toHaveLength(
      commentListRequests(comments),
    );
  });

  it('an issue the listing skips (it moved during the read) is confirmed present, never marked', async () => {
    await fx.start();
    await backfill();
    fx.clock.set(T0 + 10 * MINUTE);
    // Between the first and second listing pages an issue of the first page is edited: it moves to
    // the end, every later one a place forward, and the one at the boundary is never listed.
    const first = [...issues()].sort((a, b) => a.updated - b.updated || Number(a.id) - Number(b.id))[0]!;
    let pages = 0;
    const edit: typeof fetch = async (url, init) => {
      const href = url instanceof Request ? url.url : url.toString();
      if (href.includes('/search/jql') && ++pages === 2) {
        first.updated = fx.clock.now().getTime();
        first.summary += ' (edited)';
      }
      return fetch(url, init);
    };
    const r = await runJiraUnit(
      fx.unit({ datasetKey: 'work-items', datasets: FAMILY, mode: 'verify', since: null, before: fx.clock.now() }),
      { ...FAST, fetch: edit },
    );
    // Every issue checked once, and the comments of all but the one edited (written again).
    const confirmed = (await storedComments([])) - first.comments.length;
    expect(r.verify).toMatchObject({ deleted: 0, checked: issues().length + confirmed });
    expect([...(await stored()).values()].filter((s) => s.deleted)).toEqual([]);
  });

  it('a verify deferred by the rate limit marks nothing, and resumed finishes where it stood', async () => {
    // /myself and 2 listing pages, then the limit.
    await fx.start({ rateLimit: { limit: 1000, windowSeconds: 600 } });
    await backfill();
    const gone = issues()[200]!;
    fx.emu.deleteIssue(gone.id);
    fx.clock.set(T0 + 600_001 + 10 * MINUTE); // a fresh window
    fx.emu.rateLimit.limit = 3;
    const before = fx.emu.requestLog.length;
    const planned = fx.clock.now();
    const err = await rateLimitOf(verify(null, planned));
    expect(err.checkpoint).toMatchObject({ v: 1, pages: 2, counts: { checked: 200, deleted: 0 } });
    expect((await stored()).get(gone.id)!.deleted).toBe(false); // an incomplete listing marks nothing

    fx.clock.set(err.liftsAt!.getTime() + 1);
    fx.emu.rateLimit.limit = 1000;
    const expected = await countsAfterDeleting(gone.id);
    const r = await verify(err.checkpoint, planned);
    expect(r.verify).toEqual(expected);
    expect((await stored()).get(gone.id)!.deleted).toBe(true);
    // The second attempt listed on from its checkpoint (not the first two pages again), then
    // confirmed the one issue it did not list: a search by id, and a direct read answering 404.
    const log = fx.emu.requestLog.slice(before).filter((l) => l.status !== 429);
    const searches = log.filter((l) => l.path.includes('/search/jql'));
    expect(searches).toHaveLength(2 + Math.ceil((issues().length - 200) / 100) + 1);
    expect(log.filter((l) => l.path.startsWith(`/rest/api/3/issue/${gone.id}`)).map((l) => l.status)).toEqual([404]);
  });

  it('a row marked deleted whose issue is listed again is restored', async () => {
    await fx.start();
    await backfill();
    const back = issues()[7]!;
    await fx.db.query(`UPDATE ${fx.db.schema.table('work_items')} SET deleted_at = $1 WHERE external_id = $2`, [
      new Date(T0),
      back.id,
    ]);
    fx.clock.set(T0 + 10 * MINUTE);
    const r = await verify();
    expect(r.verify).toMatchObject({ stale: 1, restored: 1, deleted: 0 });
    expect((await stored()).get(back.id)!.deleted).toBe(false);
  });

  const serverError =
    'a 5xx outlasting the retries on a later listing page marks nothing; the retried unit marks the deleted';
  it(serverError, async () => {
    await fx.start();
    await backfill();
    const gone = issues()[10]!;
    fx.emu.deleteIssue(gone.id);
    fx.clock.set(T0 + 10 * MINUTE);
    const planned = fx.clock.now();
    // From the listing's second page on, the search answers 503 to the request and each in-place retry.
    const down = { kind: 'server-error', path: '/search/jql', status: 503, count: RETRY_DEFAULTS.attempts } as const;
    let searches = 0;
    const failing: typeof fetch = (url, init) => {
      if (hrefOf(url).includes('/search/jql') && ++searches === 2) fx.emu.setFaults([down]);
      return fetch(url, init);
    };
    const from = fx.emu.requestLog.length;
    const unit = fx.unit({ datasetKey: 'work-items', datasets: FAMILY, mode: 'verify', since: null, before: planned });
    const err = await failureOf(runJiraUnit(unit, { ...FAST, fetch: failing }));
    expect(classifyError(err)).toBe('provider_error');
    const listed = fx.emu.requestLog.slice(from).filter((l) => l.path.includes('/search/jql'));
    expect(listed.map((l) => l.status)).toEqual([200, ...Array<number>(RETRY_DEFAULTS.attempts).fill(503)]);
    expect(await marked()).toEqual([]); // an incomplete listing marks nothing

    fx.emu.setFaults([]);
    const expected = await countsAfterDeleting(gone.id);
    const r = await verify(null, planned); // no checkpoint: the unit runs again from the start
    expect(r.verify).toEqual(expected);
    expect(await marked()).toEqual([gone.id]);
  });

  const lagged =
    'issues an incremental missed for the search lag, its watermark then past them, are found with their family';
  it(lagged, async () => {
    // Search sees a change 10 minutes late, longer than the incremental overlap.
    const overlap = createJiraProvider().incrementalOverlapMs!;
    await fx.start({ searchLagMs: 2 * overlap });
    await backfill(); // up to T0 (the suite's window): the store holds every issue
    const full = jiraRows(fx.emu.data);
    // At T0 + 1 min issues are created, commented on and moved along their workflow.
    fx.clock.set(T0 + MINUTE);
    const m = fx.emu.mutate();
    expect(m.created.length).toBeGreaterThan(0);
    expect(m.transitioned.length + m.commented.length).toBeGreaterThan(0);
    const changed = jiraRows(fx.emu.data);
    expect(changed).not.toEqual(full);
    // Incrementals as the coordinator plans them: each from the previous one's end less the overlap.
    let watermark = T0;
    const incremental = async (at: number) => {
      fx.clock.set(at);
      const since = new Date(watermark - overlap);
      await runJiraUnit(
        fx.unit({ datasetKey: 'work-items', datasets: FAMILY, mode: 'incremental', since, before: new Date(at) }),
        FAST,
      );
      watermark = at;
    };
    // The first runs while the changes are not yet visible to search; the next starts past them.
    fx.clock.set(T0 + overlap + 2 * MINUTE);
    expect(fx.emu.searchSettled()).toBe(false);
    await incremental(T0 + overlap + 2 * MINUTE);
    await incremental(T0 + 4 * overlap);
    expect(fx.emu.searchSettled()).toBe(true);
    expect(watermark - overlap).toBeGreaterThan(T0 + MINUTE);
    // Neither read the created issues, nor the changes (but for those of an issue whose earlier
    // update fell within the first one's overlap): the store lacks them and their comments and changelog events.
    const before = await stored();
    const byKey = new Map(issues().map((i) => [i.key, i]));
    for (const key of m.created) expect(before.has(byKey.get(key)!.id), key).toBe(false);
    const stale = m.touched.filter(
      (k) => !m.created.includes(k) && before.get(byKey.get(k)!.id)!.updated !== T0 + MINUTE,
    );
    expect(stale.length).toBeGreaterThan(0);
    const lost = await familyCounts();
    expect(lost.work_items).toBe(full.work_items);
    expect(lost.work_item_comments + lost.work_item_events).toBeLessThan(
      changed.work_item_comments! + changed.work_item_events!,
    );

    const confirmed = await storedComments(stale.map((k) => byKey.get(k)!.id));
    const r = await verify();
    expect(r.verify).toEqual({
      checked: issues().length + confirmed,
      missing: m.created.length,
      stale: stale.length,
      restored: 0,
      deleted: 0,
    });
    expect(await familyCounts()).toEqual({
      work_items: changed.work_items,
      work_item_comments: changed.work_item_comments,
      work_item_events: changed.work_item_events,
    });
    const after = await stored();
    for (const i of issues()) expect(after.get(i.id), i.key).toEqual({ updated: i.updated, deleted: false });
  });
});
