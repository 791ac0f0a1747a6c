/**
 * Linear's verify of a team against the emulator (src/providers/linear/verify.ts on the kit's steps,
 * src/providers/kit/verify.ts): missing issues fetched with their family, stale ones refreshed,
 * deleted ones marked and archived ones kept (an archive is not a delete), a marked one that is
 * listed again restored, an unchanged team costing only its listing, issues changing during the
 * listing never marked, and a verify deferred by a rate limit resuming where its listing stood. The
 * unit carries work-item-comments, so its comments' pass runs too (counted with the issues'; its own
 * cases: verifyComments.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { classifyError } from '../../../src/errors.js';
import { RETRY_DEFAULTS } from '../../../src/providers/kit/retry.js';
import { count, T0 } from '../../helpers/emulatorSuite.js';
import { failureOf, rateLimitOf } from '../../helpers/failures.js';
import { useLinearSuite } from './support.js';
import { backfill, verify } from './verifySupport.js';

const LIST = 'SyncIssuesVerifyList';
const CONFIRM = 'SyncIssuesVerifyConfirm';
/** The comments' pass (a unit carrying work-item-comments runs it after the issues'). */
const COMMENTS = 'SyncCommentsVerifyList';
const COMMENTS_CONFIRM = 'SyncCommentsVerifyConfirm';
const MINUTE = 60_000;
/** Issues a listing page holds; each page after the first lists again the one at its bound. */
const PAGE = 250;

const fx = useLinearSuite({ seed: 21, scale: { teams: 1, issues: 600, days: 20 } });

/**
 * The listing requests of issues updated at `times`: each page after the first starts at the
 * earliest update of the one before (`updatedAt: { lte }`), so it lists the issues at it again; a
 * page wholly at that instant is followed by the cursor.
 */
function listingRequests(times: readonly number[]): number {
  const latestFirst = [...times].sort((a, b) => b - a);
  let from = 0;
  let bound: number | null = null;
  for (let requests = 1; ; requests++) {
    const page = latestFirst.slice(from, from + PAGE);
    if (from + page.length >= latestFirst.length) return requests;
    const earliest = page.at(-1)!;
    if (earliest === bound) from += PAGE;
    else from = latestFirst.indexOf(earliest);
    bound = earliest;
  }
}

/** The team's issues as the emulator holds them now. */
function issues() {
  const eng = fx.emu.data.teams.find((t) => t.key === 'ENG')!.id;
  return fx.emu.data.issues.filter((i) => i.teamId === eng);
}

/** The comments on `of` (the team's issues now, by default): what the comments' pass lists or marks. */
function commentsOf(of = issues()): number {
  return of.reduce((n, i) => n + i.comments.length, 0);
}

interface Stored {
  updated: number;
  deleted: boolean;
  archived: number | null;
}

async function stored(): Promise<Map<string, Stored>> {
  const { rows } = await fx.db.query<{
    external_id: string;
    updated_at: Date;
    deleted_at: Date | null;
    archived_at: Date | null;
  }>(`SELECT external_id, updated_at, deleted_at, archived_at FROM ${fx.db.schema.table('work_items')}`);
  return new Map(
    rows.map((r) => [
      r.external_id,
      { updated: r.updated_at.getTime(), deleted: r.deleted_at !== null, archived: r.archived_at?.getTime() ?? null },
    ]),
  );
}

/** Every issue of the team is stored live as the emulator holds it (update and archive times). */
async function expectStoredAsModel(): Promise<void> {
  const after = await stored();
  for (const i of issues()) {
    expect(after.get(i.id), i.id).toEqual({ updated: i.updatedAt, deleted: false, archived: i.archivedAt ?? null });
  }
}

/** The emulator's requests since `from` (its log's length then), by operation. */
const requestsSince = (from: number) => fx.emu.requestLog.slice(from);

describe('Linear verify', () => {
  /** A backfilled store, one issue then deleted at the provider, the clock moved on: that issue, the plan time. */
  async function backfilledThenOneDeleted() {
    await fx.start();
    await backfill(fx);
    const gone = issues()[20]!;
    fx.emu.deleteIssue(gone.id);
    fx.clock.set(T0 + 10 * MINUTE);
    return { gone, planned: fx.clock.now() };
  }

  it('fetches the missing with their family, refreshes the stale, marks the deleted, keeps the archived', async () => {
    await fx.start();
    await backfill(fx);
    const all = issues();
    expect(await count(fx.db, 'work_items')).toBe(all.length);
    // Missing: two issues' rows (and their comments) lost from the store.
    const lost = [all[3]!, all[40]!];
    const lostIds = lost.map((i) => i.id);
    await fx.db.query(
      `DELETE FROM ${fx.db.schema.table('work_item_comments')} WHERE work_item_external_id = ANY($1::text[])`,
      [lostIds],
    );
    await fx.db.query(`DELETE FROM ${fx.db.schema.table('work_items')} WHERE external_id = ANY($1::text[])`, [lostIds]);
    // Deleted at Linear: two issues; archived: one.
    const gone = [all[10]!, all[100]!];
    for (const i of gone) fx.emu.deleteIssue(i.id);
    const archived = all[200]!;
    fx.clock.set(T0 + MINUTE);
    fx.emu.archiveIssue(archived.id);
    // Stale: issues changed after the backfill (the archived one among them: its update moved).
    fx.clock.set(T0 + 2 * MINUTE);
    const m = fx.emu.mutate();
    const stale = new Set([...m.updated, archived.id].filter((id) => !lostIds.includes(id)));
    fx.clock.set(T0 + 10 * MINUTE);

    const r = await verify(fx);
    const now = issues();
    // The comments of the deleted issues are gone with them: the comments' pass marks them.
    expect(r.verify).toEqual({
      checked: now.length + commentsOf(),
      missing: lost.length + m.created.length,
      stale: stale.size,
      restored: 0,
      deleted: gone.length + commentsOf(gone),
    });
    await expectStoredAsModel();
    const after = await stored();
    for (const i of gone) expect(after.get(i.id)).toMatchObject({ deleted: true }); // kept, marked
    expect(after.get(archived.id)).toEqual({ updated: archived.updatedAt, deleted: false, archived: T0 + MINUTE });
    expect(await count(fx.db, 'work_items')).toBe(now.length + gone.length);
    const comments = lost.flatMap((i) => i.comments.map((c) => c.id));
    expect(comments.length).toBeGreaterThan(0);
    const { rows } = await fx.db.query(
      `SELECT 1 FROM ${fx.db.schema.table('work_item_comments')} WHERE external_id = ANY($1::text[])`,
      [comments],
    );
    expect(rows).toHaveLength(comments.length); // the family came with the missing issues

    // Unchanged: the listing's requests and nothing else (no fetch, no confirmation).
    const calls = fx.emu.requestLog.length;
    const again = await verify(fx);
    expect(again.verify).toEqual({ checked: now.length + commentsOf(), missing: 0, stale: 0, restored: 0, deleted: 0 });
    const log = requestsSince(calls);
    const commentTimes = now.flatMap((i) => i.comments.map((c) => c.updatedAt));
    expect(log.map((e) => e.operation)).toEqual([
      ...Array<string>(listingRequests(now.map((i) => i.updatedAt))).fill(LIST),
      ...Array<string>(listingRequests(commentTimes)).fill(COMMENTS),
    ]);
    expect(log.every((e) => e.status === 200)).toBe(true);
  });

  it('issues edited, archived or deleted during the listing: nothing skipped, nothing marked', async () => {
    await fx.start();
    await backfill(fx);
    fx.clock.set(T0 + 10 * MINUTE);
    const before = fx.clock.now();
    // After the first listing page: its last issue (where a cursor would point) is deleted, and two
    // issues not yet listed are edited and archived (each moves before everything listed, never to be
    // listed): they are confirmed present, archived or not, and fetched.
    let moved: string[] = [];
    let dropped: string | null = null;
    let droppedComments = 0;
    fx.emu.setChurn({
      afterIssuesPage: ({ operation, ids }) => {
        if (operation !== LIST || dropped) return;
        dropped = ids.at(-1)!;
        droppedComments = commentsOf(issues().filter((i) => i.id === dropped));
        moved = issues()
          .filter((i) => !ids.includes(i.id))
          .slice(0, 2)
          .map((i) => i.id);
        fx.clock.set(T0 + 11 * MINUTE);
        fx.emu.deleteIssue(dropped);
        fx.emu.editIssue(moved[0]!);
        fx.emu.archiveIssue(moved[1]!);
      },
    });
    const r = await verify(fx, null, before);
    // The deleted one was listed before it went: it is not marked by this verify (its comments, which
    // the comments' pass does not list, are).
    expect(r.verify).toEqual({
      checked: issues().length + 1 + commentsOf(),
      missing: 0,
      stale: 2,
      restored: 0,
      deleted: droppedComments,
    });
    await expectStoredAsModel();
    const after = await stored();
    expect(after.get(dropped!)).toMatchObject({ deleted: false });
    expect(after.get(moved[1]!)).toMatchObject({ deleted: false, archived: T0 + 11 * MINUTE });
    expect(fx.emu.requestLog.filter((e) => e.operation === CONFIRM)).toHaveLength(1);
  });

  it('a verify deferred by a rate limit mid-listing marks nothing, and resumed finishes where it stood', async () => {
    const { gone, planned } = await backfilledThenOneDeleted();
    // After the second listing page, the next request meets a limit.
    let pages = 0;
    const limit = { kind: 'ratelimited', count: 1, resetSeconds: 90 } as const;
    fx.emu.setChurn({
      afterIssuesPage: ({ operation }) => {
        if (operation === LIST && ++pages === 2) fx.emu.setFaults([limit]);
      },
    });
    const calls = fx.emu.requestLog.length;
    const err = await rateLimitOf(verify(fx, null, planned));
    // Two pages: the second lists again the issues at the first's earliest update.
    const latestFirst = issues().sort((a, b) => b.updatedAt - a.updatedAt);
    const edge = latestFirst[PAGE - 1]!.updatedAt;
    const listedFirst = 2 * PAGE - latestFirst.slice(0, PAGE).filter((i) => i.updatedAt === edge).length;
    expect(err.checkpoint).toMatchObject({ v: 1, pages: 2, counts: { checked: listedFirst, deleted: 0 } });
    expect(err.checkpoint!.after).toBeUndefined(); // still listing
    expect((await stored()).get(gone.id)).toMatchObject({ deleted: false }); // an incomplete listing marks nothing
    const first = requestsSince(calls);
    expect(first.map((e) => [e.operation, e.errorCode])).toEqual([
      [LIST, null],
      [LIST, null],
      [LIST, 'RATELIMITED'],
    ]);

    fx.emu.setChurn({});
    fx.clock.set(err.liftsAt!.getTime() + 1);
    const resumedAt = fx.emu.requestLog.length;
    const r = await verify(fx, err.checkpoint, planned);
    const n = issues().length;
    const goneComments = commentsOf([gone]);
    expect(r.verify).toEqual({
      checked: n + commentsOf(),
      missing: 0,
      stale: 0,
      restored: 0,
      deleted: 1 + goneComments,
    });
    expect((await stored()).get(gone.id)).toMatchObject({ deleted: true });
    // The second attempt listed on from its checkpoint's edge (not from the latest issue again),
    // then confirmed the one issue it did not list; then the comments' pass (the deleted issue's
    // comments confirmed gone).
    const second = requestsSince(resumedAt);
    const commentTimes = issues().flatMap((i) => i.comments.map((c) => c.updatedAt));
    expect(second.map((e) => e.operation)).toEqual([
      LIST,
      CONFIRM,
      ...Array<string>(listingRequests(commentTimes)).fill(COMMENTS),
      ...(goneComments > 0 ? [COMMENTS_CONFIRM] : []),
    ]);
    expect(Date.parse(second[0]!.upTo!)).toBe(err.checkpoint!.from);
    expect(n - listedFirst).toBeLessThan(PAGE); // one page holds the rest
  });

  it('a row stored deleted whose issue is listed is restored', async () => {
    await fx.start();
    await backfill(fx);
    const back = issues()[7]!;
    await fx.db.query(`UPDATE ${fx.db.schema.table('work_items')} SET deleted_at = $1 WHERE external_id = $2`, [
      new Date(T0),
      back.id,
    ]);
    fx.clock.set(T0 + 10 * MINUTE);
    const r = await verify(fx);
    expect(r.verify).toEqual({
      checked: issues().length + commentsOf(),
      missing: 0,
      stale: 1,
      restored: 1,
      deleted: 0,
    });
    expect((await stored()).get(back.id)).toEqual({ updated: back.updatedAt, deleted: false, archived: null });
  });

  const serverError =
    'a 5xx outlasting the retries on a later listing page marks nothing; the retried unit marks the deleted';
  it(serverError, async () => {
    const { gone, planned } = await backfilledThenOneDeleted();
    // After the first listing page, the next listing request and each in-place retry meet a 503.
    const down = { kind: 'server-error', operation: LIST, status: 503, count: RETRY_DEFAULTS.attempts } as const;
    fx.emu.setChurn({
      afterIssuesPage: ({ operation }) => {
        if (operation === LIST) fx.emu.setFaults([down]);
      },
    });
    const calls = fx.emu.requestLog.length;
    const err = await failureOf(verify(fx, null, planned));
    expect(classifyError(err)).toBe('provider_error');
    expect(requestsSince(calls).map((e) => [e.operation, e.status])).toEqual([
      [LIST, 200],
      ...Array<[string, number]>(RETRY_DEFAULTS.attempts).fill([LIST, 503]),
    ]);
    const marked = async () => [...(await stored()).entries()].filter(([, s]) => s.deleted).map(([id]) => id);
    expect(await marked()).toEqual([]); // an incomplete listing marks nothing

    fx.emu.setChurn({});
    fx.emu.setFaults([]);
    const r = await verify(fx, null, planned); // no checkpoint: the unit runs again from the start
    expect(r.verify).toEqual({
      checked: issues().length + commentsOf(),
      missing: 0,
      stale: 0,
      restored: 0,
      deleted: 1 + commentsOf([gone]),
    });
    expect(await marked()).toEqual([gone.id]);
    await expectStoredAsModel();
  });
});
