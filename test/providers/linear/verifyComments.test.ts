/**
 * The comments' pass of Linear's verify of a team against the emulator (src/providers/linear/
 * verifyComments.ts): comments deleted at Linear (`commentDelete`, which leaves their issue's
 * `updatedAt` where it was) are marked and nothing else is, a comment the store lost is written
 * again, an edited one refreshed, one stored deleted but still at Linear restored; a limit or a 5xx
 * during the comments' listing marks nothing, and a unit deferred there resumes in the comments'
 * pass without listing the issues again.
 */
import { describe, expect, it } from 'vitest';
import { classifyError } from '../../../src/errors.js';
import { RETRY_DEFAULTS } from '../../../src/providers/kit/retry.js';
import { runLinearUnit } from '../../../src/providers/linear/index.js';
import { T0 } from '../../helpers/emulatorSuite.js';
import { failureOf, rateLimitOf } from '../../helpers/failures.js';
import { useLinearSuite } from './support.js';
import { backfill, FAST, verify } from './verifySupport.js';

const LIST = 'SyncIssuesVerifyList';
const COMMENTS = 'SyncCommentsVerifyList';
const CONFIRM = 'SyncCommentsVerifyConfirm';
const BY_IDS = 'SyncCommentsByIds';
const MINUTE = 60_000;

const fx = useLinearSuite({ seed: 21, scale: { teams: 1, issues: 600, days: 20 } });

/** The team's issues and their comments as the emulator holds them now. */
function issues() {
  return fx.emu.data.issues;
}
function comments() {
  return issues().flatMap((i) => i.comments);
}

interface StoredComment {
  updated: number;
  body: string;
  deleted: boolean;
}

async function storedComments(): Promise<Map<string, StoredComment>> {
  const { rows } = await fx.db.query<{ external_id: string; updated_at: Date; body: string; deleted_at: Date | null }>(
    `SELECT external_id, updated_at, body, deleted_at FROM ${fx.db.schema.table('work_item_comments')}`,
  );
  const entry = (r: (typeof rows)[number]) => ({
    updated: r.updated_at.getTime(),
    body: r.body,
    deleted: r.deleted_at !== null,
  });
  return new Map(rows.map((r) => [r.external_id, entry(r)]));
}

/** The ids stored deleted, of comments and of work items. */
async function marked(): Promise<{ comments: string[]; items: string[] }> {
  const ids = async (table: string) =>
    (
      await fx.db.query<{ external_id: string }>(
        `SELECT external_id FROM ${fx.db.schema.table(table)} WHERE deleted_at IS NOT NULL ORDER BY external_id`,
      )
    ).rows.map((r) => r.external_id);
  return { comments: await ids('work_item_comments'), items: await ids('work_items') };
}

/** Every comment of the team is stored live as the emulator holds it. */
async function expectCommentsAsModel(): Promise<void> {
  const stored = await storedComments();
  for (const c of comments()) {
    expect(stored.get(c.id), c.id).toEqual({ updated: c.updatedAt, body: c.body, deleted: false });
  }
}

const requestsSince = (from: number) => fx.emu.requestLog.slice(from);

/** Comments on three different issues (the first comment of each of the first three issues having one). */
function threeComments(): string[] {
  return issues()
    .filter((i) => i.comments.length > 0)
    .slice(0, 3)
    .map((i) => i.comments[0]!.id);
}

describe('Linear verify: comments', () => {
  /** A backfilled store, then three comments deleted at Linear and the clock moved on: their ids, the plan time. */
  async function backfilledThenCommentsDeleted() {
    await fx.start();
    await backfill(fx);
    const gone = threeComments().sort();
    for (const id of gone) fx.emu.deleteComment(id);
    fx.clock.set(T0 + 10 * MINUTE);
    return { gone, planned: fx.clock.now() };
  }

  it('marks the comments deleted at Linear, and nothing else; their issues are unchanged', async () => {
    const { gone } = await backfilledThenCommentsDeleted();
    expect(fx.emu.data.deletedComments.map((c) => c.id).sort()).toEqual(gone);
    const calls = fx.emu.requestLog.length;
    const r = await verify(fx);
    expect(r.verify).toEqual({
      checked: issues().length + comments().length,
      missing: 0,
      stale: 0,
      restored: 0,
      deleted: gone.length,
    });
    expect(await marked()).toEqual({ comments: gone, items: [] });
    await expectCommentsAsModel();
    // The issues' pass confirms nothing (no issue moved); the comments' pass confirms the three at once.
    const ops = requestsSince(calls).map((e) => e.operation);
    expect(ops.filter((o) => o !== LIST && o !== COMMENTS)).toEqual([CONFIRM]);
    expect(ops.filter((o) => o === COMMENTS).length).toBeLessThanOrEqual(Math.ceil(comments().length / 250) + 1);
  });

  it('writes again a comment the store lost, and refreshes an edited one (its issue unmoved)', async () => {
    await fx.start();
    await backfill(fx);
    const [lost, edited] = threeComments();
    await fx.db.query(`DELETE FROM ${fx.db.schema.table('work_item_comments')} WHERE external_id = $1`, [lost]);
    fx.clock.set(T0 + MINUTE);
    const issuesBefore = issues().map((i) => [i.id, i.updatedAt]);
    fx.emu.editComment(edited!);
    expect(issues().map((i) => [i.id, i.updatedAt])).toEqual(issuesBefore);
    fx.clock.set(T0 + 10 * MINUTE);
    const calls = fx.emu.requestLog.length;
    const r = await verify(fx);
    expect(r.verify).toEqual({
      checked: issues().length + comments().length,
      missing: 1,
      stale: 1,
      restored: 0,
      deleted: 0,
    });
    expect(r.work_item_comments).toBe(2);
    await expectCommentsAsModel();
    expect((await storedComments()).get(edited!)!.body).toMatch(/\(edited\)$/);
    expect(await marked()).toEqual({ comments: [], items: [] });
    // Each read by id from the listing page that showed it (the edited one first, the lost one far
    // down); no issue fetched.
    const ops = requestsSince(calls).map((e) => e.operation);
    expect(ops.filter((o) => o === BY_IDS)).toHaveLength(2);
    expect(ops.filter((o) => o !== LIST && o !== COMMENTS && o !== BY_IDS)).toEqual([]);
  });

  it('restores a comment stored deleted that Linear still has (its row written back, deleted_at cleared)', async () => {
    await fx.start();
    await backfill(fx);
    const [back] = threeComments();
    await fx.db.query(`UPDATE ${fx.db.schema.table('work_item_comments')} SET deleted_at = $1 WHERE external_id = $2`, [
      new Date(T0),
      back,
    ]);
    expect((await marked()).comments).toEqual([back]);
    fx.clock.set(T0 + 10 * MINUTE);
    const r = await verify(fx);
    expect(r.verify).toMatchObject({ stale: 1, restored: 1, deleted: 0 });
    expect(await marked()).toEqual({ comments: [], items: [] });
    await expectCommentsAsModel();
  });

  it('a limit during the comments listing marks nothing; resumed, it lists on in the comments pass', async () => {
    const { gone, planned } = await backfilledThenCommentsDeleted();
    // After the second page of comments, the next request meets a limit.
    let pages = 0;
    const limit = { kind: 'ratelimited', count: 1, resetSeconds: 90 } as const;
    fx.emu.setChurn({
      afterCommentsPage: ({ operation }) => {
        if (operation === COMMENTS && ++pages === 2) fx.emu.setFaults([limit]);
      },
    });
    const calls = fx.emu.requestLog.length;
    const err = await rateLimitOf(verify(fx, null, planned));
    expect(err.checkpoint).toMatchObject({ v: 1, pass: 1, pages: expect.any(Number) as number });
    expect(err.checkpoint!.after).toBeUndefined(); // still listing
    expect(typeof err.checkpoint!.from).toBe('number');
    expect(await marked()).toEqual({ comments: [], items: [] }); // an incomplete listing marks nothing
    const first = requestsSince(calls).map((e) => [e.operation, e.errorCode]);
    expect(first.slice(-3)).toEqual([
      [COMMENTS, null],
      [COMMENTS, null],
      [COMMENTS, 'RATELIMITED'],
    ]);

    fx.emu.setChurn({});
    fx.clock.set(err.liftsAt!.getTime() + 1);
    const resumedAt = fx.emu.requestLog.length;
    const r = await verify(fx, err.checkpoint, planned);
    expect(r.verify).toMatchObject({ deleted: gone.length, missing: 0, stale: 0 });
    expect(await marked()).toEqual({ comments: gone, items: [] });
    // The issues are not listed again: the comments' listing goes on from its checkpoint's edge.
    const second = requestsSince(resumedAt);
    expect(second.map((e) => e.operation)).not.toContain(LIST);
    expect(second[0]!.operation).toBe(COMMENTS);
    expect(Date.parse(second[0]!.upTo!)).toBe(err.checkpoint!.from);
    expect(second.at(-1)!.operation).toBe(CONFIRM);
  });

  it('a 5xx outlasting the retries during the comments listing marks nothing; run again, it marks', async () => {
    const { gone, planned } = await backfilledThenCommentsDeleted();
    const down = { kind: 'server-error', operation: COMMENTS, status: 503, count: RETRY_DEFAULTS.attempts } as const;
    fx.emu.setChurn({
      afterCommentsPage: ({ operation }) => {
        if (operation === COMMENTS) fx.emu.setFaults([down]);
      },
    });
    const calls = fx.emu.requestLog.length;
    const err = await failureOf(verify(fx, null, planned));
    expect(classifyError(err)).toBe('provider_error');
    const commentCalls = requestsSince(calls).filter((e) => e.operation === COMMENTS);
    expect(commentCalls.map((e) => e.status)).toEqual([200, ...Array<number>(RETRY_DEFAULTS.attempts).fill(503)]);
    expect(await marked()).toEqual({ comments: [], items: [] });

    fx.emu.setChurn({});
    fx.emu.setFaults([]);
    const r = await verify(fx, null, planned);
    expect(r.verify).toMatchObject({ deleted: gone.length });
    expect(await marked()).toEqual({ comments: gone, items: [] });
  });

  it('without work-item-comments in the unit, no comment is listed', async () => {
    await fx.start();
    await backfill(fx);
    fx.emu.deleteComment(threeComments()[0]!);
    fx.clock.set(T0 + 10 * MINUTE);
    const calls = fx.emu.requestLog.length;
    const before = fx.clock.now();
    const unit = fx.unit({ datasetKey: 'work-items', datasets: ['work-items'], mode: 'verify', since: null, before });
    const r = await runLinearUnit(unit, FAST);
    expect(r.verify).toMatchObject({ checked: issues().length, deleted: 0 });
    expect(requestsSince(calls).every((e) => e.operation === LIST)).toBe(true);
    expect(await marked()).toEqual({ comments: [], items: [] });
  });
});
