/**
 * GitHub's verify of a repository's issue comments against the emulator
 * (src/providers/github/verifyComments.ts on the kit's steps, src/providers/kit/verify.ts): one
 * listing of the repository's comments compares issue comments with `work_item_comments`; the
 * missing and stale are written from the page listed, the deleted (and those of a deleted issue)
 * marked once a direct read answers 404, never from an incomplete listing; a comment listed again,
 * or written again, has `deleted_at` cleared.
 */
import { describe, expect, it } from 'vitest';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import type { CommentRecord, RequestLogEntry } from '../../../src/emulators/github/index.js';
import { classifyError } from '../../../src/errors.js';
import { runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import { RETRY_DEFAULTS } from '../../../src/providers/kit/retry.js';
import { count, DAY, T0 } from '../../helpers/emulatorSuite.js';
import { failureOf, rateLimitOf } from '../../helpers/failures.js';
import { ISSUES_ONLY, repoKey, useGithubSuite } from './support.js';

const FAST: GithubProviderOptions = {
  retry: { baseDelayMs: 1, maxDelayMs: 2 },
  budget: { probePollMs: 20, reserve: 0 },
};
const MINUTE = 60_000;
const COMMENTS = 'work-item-comments';

// About 450 issue comments and some on pull requests: 5 or more listing pages.
const fx = useGithubSuite({ seed: 22, scale: { ...ISSUES_ONLY, issues: 300, pulls: 40, maxComments: 3 } });

/** Backfills the repository's issues and their comments (a comment is in its issue's source). */
async function backfill() {
  const since = new Date(T0 - 400 * DAY);
  await runGithubUnit(fx.unit({ datasetKey: 'work-items', since }), FAST);
  await runGithubUnit(fx.unit({ datasetKey: COMMENTS, since }), FAST);
}

/** A verify unit of the comments planned at `before` (a resumed attempt keeps it). */
function verify(checkpoint: UnitCheckpoint | null = null, before = fx.clock.now(), opts: GithubProviderOptions = FAST) {
  const unit = fx.unit({ datasetKey: COMMENTS, mode: 'verify', since: null, before, checkpoint });
  return runGithubUnit(unit, opts);
}

const repo = () => fx.emu.data.repos[0]!;
/** The comments GitHub has on the repository's issues (not on its pull requests). */
const issueComments = () => repo().comments.filter((c) => !c.item.pull && c.item.deletedAt === undefined);

interface Stored {
  updated: number;
  deleted: boolean;
}

async function stored(table = 'work_item_comments'): Promise<Map<string, Stored>> {
  const { rows } = await fx.db.query<{ external_id: string; updated_at: Date; deleted_at: Date | null }>(
    `SELECT external_id, updated_at, deleted_at FROM ${fx.db.schema.table(table)}`,
  );
  return new Map(rows.map((r) => [r.external_id, { updated: r.updated_at.getTime(), deleted: r.deleted_at !== null }]));
}

/** The stored rows marked deleted, by external id. */
async function marked(table = 'work_item_comments'): Promise<string[]> {
  return [...(await stored(table)).entries()]
    .filter(([, s]) => s.deleted)
    .map(([id]) => id)
    .sort();
}

const idsOf = (comments: readonly CommentRecord[]) => comments.map((c) => String(c.id)).sort();

/** Every issue comment GitHub has is stored at its version, live. */
async function expectAllStored() {
  const rows = await stored();
  for (const c of issueComments())
    expect(rows.get(String(c.id)), String(c.id)).toEqual({ updated: c.updatedAt, deleted: false });
}

const pathOf = (l: RequestLogEntry) => l.path.split('?')[0]!;
const isListing = (l: RequestLogEntry) => /\/issues\/comments$/.test(pathOf(l));
/** Direct reads of one comment since log entry `from`: [id, status]. */
const commentReads = (from: number) =>
  fx.emu.log
    .slice(from)
    .filter((l) => /\/issues\/comments\/\d+$/.test(pathOf(l)))
    .map((l) => [pathOf(l).split('/').at(-1), l.status]);

const hrefOf = (url: string | URL | Request) => (url instanceof Request ? url.url : url.toString());

/** A fetch whose comment listing pages leave out `hidden` (as a listing that skipped them). */
function hiding(hidden: readonly CommentRecord[]): typeof fetch {
  const ids = new Set(hidden.map((c) => c.id));
  return async (url, init) => {
    const res = await fetch(url, init);
    if (!/\/issues\/comments$/.test(new URL(hrefOf(url)).pathname) || res.status !== 200) return res;
    const page = (await res.json()) as { id: number }[];
    const headers = new Headers(res.headers);
    headers.delete('content-length');
    return new Response(JSON.stringify(page.filter((o) => !ids.has(o.id))), { status: 200, headers });
  };
}

describe('GitHub verify of issue comments', () => {
  const listingOnly =
    'writes the missing and stale from the listing, marks the deleted and nothing else; then costs only the listing';
  it(listingOnly, async () => {
    await fx.start();
    await backfill();
    const before = issueComments();
    expect(before.length).toBeGreaterThan(300);
    expect(await count(fx.db, 'work_item_comments')).toBe(before.length);
    // Missing: two comments' rows lost from the store.
    const lost = [before[4]!, before[200]!];
    await fx.db.query(`DELETE FROM ${fx.db.schema.table('work_item_comments')} WHERE external_id = ANY($1::text[])`, [
      idsOf(lost),
    ]);
    fx.clock.set(T0 + MINUTE);
    // Deleted at GitHub: three comments, and an issue with its comments.
    const removed = [before[10]!, before[150]!, before.at(-3)!];
    for (const c of removed) fx.emu.edit.removeComment(c.id);
    const issue = repo().items.find((i) => !i.pull && i.comments.length > 0 && !lost.some((c) => c.item === i))!;
    const withIssue = [...issue.comments];
    fx.emu.edit.remove(issue.number);
    // Stale: two comments edited after the backfill.
    const edited = [before[0]!, before[300]!].filter((c) => !removed.includes(c) && c.item !== issue);
    for (const c of edited) fx.emu.edit.editComment(c.id);
    fx.clock.set(T0 + 10 * MINUTE);
    const from = fx.emu.log.length;

    const r = await verify();
    const gone = [...removed, ...withIssue];
    const n = issueComments().length;
    expect(r.verify).toEqual({ checked: n, missing: 2, stale: edited.length, restored: 0, deleted: gone.length });
    expect(r.items).toBe(2 + edited.length);
    await expectAllStored();
    expect(await marked()).toEqual(idsOf(gone)); // kept, marked; nothing else
    expect(await count(fx.db, 'work_item_comments')).toBe(before.length);
    expect(await marked('work_items')).toEqual([]); // the comments' verify marks no issue
    // Each deleted comment was read once (404); nothing else was read directly.
    expect(commentReads(from).sort()).toEqual(idsOf(gone).map((id) => [id, 404]));

    const calls = fx.emu.log.length;
    fx.clock.set(T0 + 20 * MINUTE);
    const again = await verify();
    expect(again.verify).toEqual({ checked: n, missing: 0, stale: 0, restored: 0, deleted: 0 });
    // Unchanged: listing requests only, about one per 100 comments (pull requests' included).
    const log = fx.emu.log.slice(calls);
    expect(log.every(isListing)).toBe(true);
    const listed = repo().comments.length;
    expect(log.length).toBeGreaterThanOrEqual(Math.ceil(listed / 100));
    expect(log.length).toBeLessThanOrEqual(Math.ceil(listed / 99));
  });

  it('a verify deferred by the rate limit marks nothing; resumed with its start, it finishes', async () => {
    await fx.start({ rateLimit: { limit: 1000, windowSeconds: 600 } });
    await backfill();
    const gone = issueComments()[20]!;
    fx.clock.set(T0 + MINUTE);
    fx.emu.edit.removeComment(gone.id);
    fx.clock.set(T0 + 600_001 + 10 * MINUTE); // a fresh window
    fx.emu.rateLimit.limit = 2; // 2 listing pages, then the limit
    const planned = fx.clock.now();
    const err = await rateLimitOf(verify(null, planned));
    expect(err.checkpoint).toMatchObject({ v: 1, pages: 2, counts: { deleted: 0 } });
    expect(err.checkpoint).not.toHaveProperty('after'); // still listing
    expect(await marked()).toEqual([]); // an incomplete listing marks nothing

    fx.clock.set(err.liftsAt!.getTime() + 1);
    fx.emu.rateLimit.limit = 1000;
    const from = fx.emu.log.length;
    const r = await verify(err.checkpoint, planned);
    expect(r.verify).toEqual({ checked: issueComments().length, missing: 0, stale: 0, restored: 0, deleted: 1 });
    expect(await marked()).toEqual([String(gone.id)]);
    expect(commentReads(from)).toEqual([[String(gone.id), 404]]);
    await expectAllStored();
  });

  const smallWindows =
    'confirmations keep their progress step by step: a window smaller than a hundred reads still ends the verify';
  it(smallWindows, async () => {
    await fx.start({ rateLimit: { limit: 100_000, windowSeconds: 600 } });
    await backfill();
    fx.clock.set(T0 + 600_001 + MINUTE); // a fresh window
    const before = fx.emu.log.length;
    await verify(); // what an unchanged verify asks
    const asks = fx.emu.log.length - before;
    const gone = issueComments().slice(10, 22);
    for (const c of gone) fx.emu.edit.removeComment(c.id);
    fx.clock.set(fx.clock.now().getTime() + 700_000); // past that verify's window
    // The listing, then room for ten reads of one comment each.
    fx.emu.rateLimit.limit = asks + 10;
    const planned = fx.clock.now();
    const err = await rateLimitOf(verify(null, planned));
    expect(err.checkpoint).toHaveProperty('after');
    expect((err.checkpoint as { after: string }).after).not.toBe('');
    const first = await marked();
    expect(first.length).toBeGreaterThan(0);

    fx.clock.set(err.liftsAt!.getTime() + 1);
    const r = await verify(err.checkpoint, planned);
    expect(r.verify).toMatchObject({ deleted: gone.length }); // the unit's counts, both attempts
    expect(await marked()).toEqual(idsOf(gone));
  });

  const serverError =
    'a 5xx outlasting the retries on a later listing page marks nothing; the retried unit marks the deleted';
  it(serverError, async () => {
    await fx.start();
    await backfill();
    const gone = issueComments()[30]!;
    fx.clock.set(T0 + MINUTE);
    fx.emu.edit.removeComment(gone.id);
    fx.clock.set(T0 + 10 * MINUTE);
    const planned = fx.clock.now();
    // Once the first listing page is answered, the next listing request and each in-place retry meet a 502.
    const listing = `/repos/${repoKey(fx.emu)}/issues/comments`;
    const down = { kind: 'server-error', path: listing, status: 502, count: RETRY_DEFAULTS.attempts } as const;
    fx.emu.onPage('/issues/comments', 1, () => fx.emu.setFaults([down]));
    const from = fx.emu.log.length;
    const err = await failureOf(verify(null, planned));
    expect(classifyError(err)).toBe('provider_error');
    expect(fx.emu.log.slice(from).map((l) => [isListing(l), l.status])).toEqual([
      [true, 200],
      ...Array<[boolean, number]>(RETRY_DEFAULTS.attempts).fill([true, 502]),
    ]);
    expect(await marked()).toEqual([]); // an incomplete listing marks nothing

    fx.emu.setFaults([]);
    const r = await verify(null, planned); // no checkpoint: the unit runs again from the start
    expect(r.verify).toEqual({ checked: issueComments().length, missing: 0, stale: 0, restored: 0, deleted: 1 });
    expect(await marked()).toEqual([String(gone.id)]);
  });

  it('a comment the listing skipped is confirmed present by a direct read, never marked', async () => {
    await fx.start();
    await backfill();
    fx.clock.set(T0 + 10 * MINUTE);
    const skipped = [issueComments()[0]!, issueComments()[99]!];
    const from = fx.emu.log.length;
    const r = await verify(null, fx.clock.now(), { ...FAST, fetch: hiding(skipped) });
    expect(r.verify).toEqual({ checked: issueComments().length, missing: 0, stale: 0, restored: 0, deleted: 0 });
    expect(commentReads(from).sort()).toEqual(idsOf(skipped).map((id) => [id, 200]));
    expect(await marked()).toEqual([]);
  });

  it('a comment marked deleted comes back: listed again by a verify, or written again by a read', async () => {
    await fx.start();
    await backfill();
    const [listedBack, writtenBack] = issueComments();
    const mark = (c: CommentRecord) =>
      fx.db.query(`UPDATE ${fx.db.schema.table('work_item_comments')} SET deleted_at = $1 WHERE external_id = $2`, [
        new Date(T0),
        String(c.id),
      ]);
    await mark(listedBack!);
    fx.clock.set(T0 + 10 * MINUTE);
    const r = await verify();
    expect(r.verify).toMatchObject({ stale: 1, restored: 1, deleted: 0 });
    expect(await marked()).toEqual([]);

    await mark(writtenBack!);
    fx.clock.set(T0 + 20 * MINUTE);
    await runGithubUnit(fx.unit({ datasetKey: COMMENTS, since: new Date(T0 - 400 * DAY) }), FAST);
    expect(await marked()).toEqual([]);
    await expectAllStored();
  });
});
