/**
 * Jira's verify of a project's comments against the emulator: the second pass of the family's
 * verify unit (src/providers/jira/verifyComments.ts on the kit's steps, src/providers/kit/verify.ts).
 * Every stored comment the issues pass did not write is confirmed by `comment/list`: those Jira no
 * longer has are marked deleted and nothing else is, a stale one is written again; a failed or
 * limited answer marks nothing, and a deferred unit resumes in the comments pass without listing
 * the issues again; a comment written back has `deleted_at` cleared.
 */
import { describe, expect, it } from 'vitest';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import { COMMENT_LIST_PAGE, type CommentRec, type IssueRec } from '../../../src/emulators/jira/index.js';
import { classifyError } from '../../../src/errors.js';
import { runJiraUnit, type JiraProviderOptions } from '../../../src/providers/jira/index.js';
import { RETRY_DEFAULTS } from '../../../src/providers/kit/retry.js';
import { DAY, T0 } from '../../helpers/emulatorSuite.js';
import { failureOf, rateLimitOf } from '../../helpers/failures.js';
import { useJiraSuite } from './support.js';

const FAST: JiraProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, budget: { probePollMs: 20, reserve: 0 } };
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history'];
const MINUTE = 60_000;
const LIST = '/rest/api/3/comment/list';

const fx = useJiraSuite({
  seed: 23,
  searchLagMs: 0,
  commentListPage: COMMENT_LIST_PAGE,
  scale: { projects: 1, issues: 120, longLists: 0, days: 20 },
});

async function backfill() {
  const unit = fx.unit({ datasetKey: 'work-items', datasets: FAMILY, since: new Date(T0 - 400 * DAY) });
  await runJiraUnit(unit, FAST);
}

function verify(checkpoint: UnitCheckpoint | null = null, before = fx.clock.now(), through: typeof fetch = fetch) {
  const unit = fx.unit({ datasetKey: 'work-items', datasets: FAMILY, mode: 'verify', since: null, before, checkpoint });
  return runJiraUnit(unit, { ...FAST, fetch: through });
}

const hrefOf = (url: string | URL | Request) => (url instanceof Request ? url.url : url.toString());

const issues = () => fx.emu.data.projects.find((p) => p.key === 'ENG')!.issues;
const comments = () => issues().flatMap((issue) => issue.comments.map((comment) => ({ issue, comment })));

interface Stored {
  updated: number;
  deleted: boolean;
  body: string | null;
}

async function stored(table = 'work_item_comments'): Promise<Map<string, Stored>> {
  const body = table === 'work_item_comments' ? 'body' : 'NULL::text AS body';
  const { rows } = await fx.db.query<{ external_id: string; updated_at: Date; deleted_at: Date | null; body: string }>(
    `SELECT external_id, updated_at, deleted_at, ${body} FROM ${fx.db.schema.table(table)}`,
  );
  return new Map(
    rows.map((r) => [r.external_id, { updated: r.updated_at.getTime(), deleted: r.deleted_at !== null, body: r.body }]),
  );
}

async function marked(table = 'work_item_comments'): Promise<string[]> {
  return [...(await stored(table)).entries()]
    .filter(([, s]) => s.deleted)
    .map(([id]) => id)
    .sort();
}

const idsOf = (list: readonly { comment: CommentRec }[]) => list.map((c) => c.comment.id).sort();
const requestsSince = (from: number) => fx.emu.requestLog.slice(from);
const isCommentList = (path: string) => path.startsWith(LIST);

/** Every comment Jira has is stored at its version, live. */
async function expectAllStored() {
  const rows = await stored();
  for (const { comment } of comments()) {
    expect(rows.get(comment.id), comment.id).toMatchObject({ updated: comment.updated, deleted: false });
  }
}

/** Deletes comments at Jira (their issues' `updated` stays where it was). */
function deleteComments(list: readonly { issue: IssueRec; comment: CommentRec }[]) {
  for (const { issue, comment } of list) fx.emu.deleteComment(issue.id, comment.id);
}

describe('Jira verify of comments', () => {
  it('marks the comments deleted at Jira and nothing else, refreshes a stale one; then nothing more', async () => {
    await fx.start();
    await backfill();
    const all = comments();
    expect(all.length).toBeGreaterThan(COMMENT_LIST_PAGE);
    expect((await stored()).size).toBe(all.length);
    fx.clock.set(T0 + MINUTE);
    const gone = [all[3]!, all[50]!, all.at(-2)!];
    deleteComments(gone);
    fx.clock.set(T0 + 10 * MINUTE);
    // A comment edited once the issues are listed, before its batch is confirmed: stale there.
    const edited = all[10]!;
    const editing: typeof fetch = (url, init) => {
      if (hrefOf(url).includes(LIST) && !edited.comment.text.endsWith('(edited)')) {
        edited.comment.text += ' (edited)';
        edited.comment.updated = edited.issue.updated = fx.clock.now().getTime();
      }
      return fetch(url, init);
    };
    const from = fx.emu.requestLog.length;

    const r = await verify(null, fx.clock.now(), editing);
    expect(r.verify).toEqual({
      checked: issues().length + all.length - gone.length,
      missing: 0,
      stale: 1,
      restored: 0,
      deleted: gone.length,
    });
    expect(r.written).toMatchObject({ work_items: 0, work_item_comments: 1 });
    await expectAllStored();
    expect((await stored()).get(edited.comment.id)!.body).toMatch(/\(edited\)$/);
    expect(await marked()).toEqual(idsOf(gone)); // kept, marked; nothing else
    expect((await stored()).size).toBe(all.length);
    expect(await marked('work_items')).toEqual([]);
    // The comments were confirmed by id: the batch's pages, and the stale one written from them.
    const lists = requestsSince(from).filter((l) => isCommentList(l.path));
    expect(lists.map((l) => l.status)).toEqual(
      Array<number>(Math.ceil((all.length - gone.length) / COMMENT_LIST_PAGE)).fill(200),
    );
    expect(requestsSince(from).filter((l) => /\/issue\/\d+\/comment/.test(l.path))).toEqual([]);

    fx.clock.set(T0 + 20 * MINUTE);
    // The next verify lists the edited comment's issue stale (the edit moved its `updated`) and
    // writes it with its comments; it confirms the others, and marks nothing more.
    const again = await verify();
    expect(again.verify).toEqual({
      checked: issues().length + all.length - gone.length - edited.issue.comments.length,
      missing: 0,
      stale: 1,
      restored: 0,
      deleted: 0,
    });
    expect(await marked()).toEqual(idsOf(gone));
  });

  it('a 5xx outlasting the retries on comment/list marks nothing; the retried unit marks the deleted', async () => {
    await fx.start();
    await backfill();
    fx.clock.set(T0 + MINUTE);
    const gone = [comments()[7]!];
    deleteComments(gone);
    fx.clock.set(T0 + 10 * MINUTE);
    const planned = fx.clock.now();
    fx.emu.setFaults([{ kind: 'server-error', path: LIST, status: 502, count: RETRY_DEFAULTS.attempts }]);
    const from = fx.emu.requestLog.length;
    const err = await failureOf(verify(null, planned));
    expect(classifyError(err)).toBe('provider_error');
    const lists = requestsSince(from).filter((l) => isCommentList(l.path));
    expect(lists.map((l) => l.status)).toEqual(Array<number>(RETRY_DEFAULTS.attempts).fill(502));
    expect(await marked()).toEqual([]); // an unconfirmed batch marks nothing

    fx.emu.setFaults([]);
    const r = await verify(null, planned); // no checkpoint: the unit runs again from the start
    expect(r.verify).toMatchObject({ deleted: 1, stale: 0, missing: 0 });
    expect(await marked()).toEqual(idsOf(gone));
  });

  it('a limit answer on comment/list defers the unit in the comments pass; resumed, it lists no issue', async () => {
    await fx.start();
    await backfill();
    fx.clock.set(T0 + MINUTE);
    const gone = [comments()[2]!, comments()[60]!];
    deleteComments(gone);
    fx.clock.set(T0 + 10 * MINUTE);
    const planned = fx.clock.now();
    fx.emu.setFaults([{ kind: 'rate-limit', path: LIST, count: 1, retryAfter: 600 }]);
    const err = await rateLimitOf(verify(null, planned));
    // The issues pass is done (its counts kept); the comments pass stands at its start.
    expect(err.checkpoint).toMatchObject({ v: 1, pass: 1, after: '', counts: { checked: issues().length } });
    expect(await marked()).toEqual([]);

    fx.emu.setFaults([]);
    fx.clock.set(err.liftsAt!.getTime() + 1);
    const from = fx.emu.requestLog.length;
    const r = await verify(err.checkpoint, planned);
    expect(r.verify).toEqual({
      checked: issues().length + comments().length,
      missing: 0,
      stale: 0,
      restored: 0,
      deleted: gone.length,
    });
    expect(await marked()).toEqual(idsOf(gone));
    const asked = requestsSince(from).map((l) => l.path);
    expect(asked.filter((p) => p.includes('/search/jql'))).toEqual([]); // no issue listed again
    expect(asked.filter(isCommentList).length).toBe(Math.ceil(comments().length / COMMENT_LIST_PAGE));
  });

  it('a comment marked deleted is cleared when a read writes it again', async () => {
    await fx.start();
    await backfill();
    const back = comments()[4]!;
    await fx.db.query(`UPDATE ${fx.db.schema.table('work_item_comments')} SET deleted_at = $1 WHERE external_id = $2`, [
      new Date(T0),
      back.comment.id,
    ]);
    expect(await marked()).toEqual([back.comment.id]);
    fx.clock.set(T0 + 10 * MINUTE);
    await backfill();
    expect(await marked()).toEqual([]);
    await expectAllStored();
  });
});
