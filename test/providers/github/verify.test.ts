/**
 * GitHub's verify of a repository against the emulator (src/providers/github/verify.ts on the kit's
 * steps, src/providers/kit/verify.ts): one listing of the issues list compares issues with
 * `work_items` and pull requests with `pull_requests`; the missing and stale are written from the
 * page listed (pull requests with their detail and reviews), the deleted marked once a direct read
 * confirms them gone (410, 404, or transferred elsewhere), never from an incomplete listing and never
 * one that moved during it; a verify deferred by a rate limit resumes where it stood.
 */
import { describe, expect, it } from 'vitest';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import type { ItemRecord, RequestLogEntry } from '../../../src/emulators/github/index.js';
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
const FAMILY = ['work-items', 'pull-requests', 'pull-request-reviews'];
const MINUTE = 60_000;

// 250 issues and pull requests a repository: 3 listing pages (the keyset asks each from the last one's time).
const fx = useGithubSuite({ seed: 21, scale: { ...ISSUES_ONLY, repos: 2, issues: 400, pulls: 100, maxReviews: 2 } });

/** Backfills the whole repository's issues, pull requests and reviews. */
async function backfill(opts: GithubProviderOptions = FAST) {
  await runGithubUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY, since: new Date(T0 - 400 * DAY) }), opts);
}

/** A verify unit planned at `before` (the run's planning time; a resumed attempt keeps it). */
function verify(checkpoint: UnitCheckpoint | null = null, before = fx.clock.now(), opts: GithubProviderOptions = FAST) {
  const unit = fx.unit({ datasetKey: 'work-items', datasets: FAMILY, mode: 'verify', since: null, before, checkpoint });
  return runGithubUnit(unit, opts);
}

const items = () => fx.emu.data.repos[0]!.items;
const present = () => items().filter((i) => i.deletedAt === undefined);
const keyOf = (i: ItemRecord) => `${repoKey(fx.emu)}#${i.number}`;

interface Stored {
  updated: number;
  title: string;
  deleted: boolean;
}

async function stored(table: 'work_items' | 'pull_requests'): Promise<Map<string, Stored>> {
  const { rows } = await fx.db.query<{ external_id: string; updated_at: Date; title: string; deleted_at: Date | null }>(
    `SELECT external_id, updated_at, title, deleted_at FROM ${fx.db.schema.table(table)}`,
  );
  return new Map(
    rows.map((r) => [
      r.external_id,
      { updated: r.updated_at.getTime(), title: r.title, deleted: r.deleted_at !== null },
    ]),
  );
}

/** Every issue and pull request of the emulator's repository is stored as it holds it, live. */
async function expectAllStored() {
  const issues = await stored('work_items');
  const pulls = await stored('pull_requests');
  for (const i of present()) {
    const row = (i.pull ? pulls : issues).get(keyOf(i));
    expect(row, keyOf(i)).toEqual({ updated: i.updatedAt, title: i.title, deleted: false });
  }
}

const pathOf = (l: RequestLogEntry) => l.path.split('?')[0]!;
const isListing = (l: RequestLogEntry) => /\/issues$/.test(pathOf(l));
/** Direct reads of one issue (`/issues/{n}`) since log entry `from`. */
const issueReads = (from: number) => fx.emu.log.slice(from).filter((l) => /\/issues\/\d+$/.test(pathOf(l)));

/** The URL a fetch was asked for. */
const hrefOf = (url: string | URL | Request) => (url instanceof Request ? url.url : url.toString());

/** A fetch whose listing pages leave out the issues `hidden` names (as a listing that skipped them). */
function hiding(hidden: readonly ItemRecord[], inner: typeof fetch = fetch): typeof fetch {
  const numbers = new Set(hidden.map((i) => i.number));
  return async (url, init) => {
    const res = await inner(url, init);
    if (!/\/issues$/.test(new URL(hrefOf(url)).pathname) || res.status !== 200) return res;
    const page = (await res.json()) as { number: number }[];
    const headers = new Headers(res.headers);
    headers.delete('content-length');
    return new Response(JSON.stringify(page.filter((o) => !numbers.has(o.number))), { status: 200, headers });
  };
}

describe('GitHub verify', () => {
  it('writes the missing and stale from the listing, marks the deleted; then costs only the listing', async () => {
    await fx.start();
    await backfill();
    const pullCount = items().filter((i) => i.pull).length;
    expect(pullCount).toBeGreaterThan(10);
    expect(await count(fx.db, 'work_items')).toBe(items().length - pullCount);
    expect(await count(fx.db, 'pull_requests')).toBe(pullCount);
    const issues = items().filter((i) => !i.pull);
    const pulls = items().filter((i) => i.pull);
    // Missing: two issues' rows and a pull request's lost from the store.
    const lost = [issues[3]!, issues[60]!, pulls[5]!];
    await fx.db.query(`DELETE FROM ${fx.db.schema.table('work_items')} WHERE external_id = ANY($1::text[])`, [
      lost.map(keyOf),
    ]);
    await fx.db.query(`DELETE FROM ${fx.db.schema.table('pull_requests')} WHERE external_id = ANY($1::text[])`, [
      lost.map(keyOf),
    ]);
    fx.clock.set(T0 + MINUTE);
    // Deleted at GitHub: two issues.
    const gone = [issues[10]!, issues[150]!];
    for (const i of gone) fx.emu.edit.remove(i.number);
    // Stale: three issues and two pull requests edited after the backfill.
    const edited = [issues[0]!, issues[20]!, issues[120]!, pulls[0]!, pulls[30]!];
    for (const i of edited) fx.emu.edit.touch(i.number);
    fx.clock.set(T0 + 10 * MINUTE);
    const from = fx.emu.log.length;

    const r = await verify();
    const n = present().length;
    expect(r.verify).toEqual({ checked: n, missing: lost.length, stale: edited.length, restored: 0, deleted: 2 });
    await expectAllStored();
    const after = await stored('work_items');
    for (const i of gone) expect(after.get(keyOf(i))!.deleted).toBe(true); // kept, marked
    expect(await count(fx.db, 'work_items')).toBe(issues.length);
    // Issues came from the listing pages; each deleted one was read once (410); pull requests cost
    // their detail and reviews only when missing or stale.
    const reads = issueReads(from);
    expect(reads.map((l) => [pathOf(l).split('/').at(-1), l.status])).toEqual(
      expect.arrayContaining(gone.map((i) => [String(i.number), 410])),
    );
    expect(reads).toHaveLength(gone.length);
    const details = fx.emu.log.slice(from).filter((l) => /\/pulls\/\d+$/.test(pathOf(l)));
    expect(details).toHaveLength(3); // pulls[5] (missing), pulls[0] and pulls[30] (stale)

    const calls = fx.emu.log.length;
    fx.clock.set(T0 + 20 * MINUTE);
    const again = await verify();
    expect(again.verify).toEqual({ checked: n, missing: 0, stale: 0, restored: 0, deleted: 0 });
    // Unchanged: one listing request per 100 objects, nothing else.
    const log = fx.emu.log.slice(calls);
    expect(log.every(isListing)).toBe(true);
    expect(log).toHaveLength(Math.ceil(n / 100));
  });

  it('a verify deferred by the rate limit marks nothing; resumed with its start, it finishes', async () => {
    await fx.start({ rateLimit: { limit: 1000, windowSeconds: 600 } });
    await backfill();
    const gone = items().find((i) => !i.pull && i.number > 100)!;
    fx.clock.set(T0 + MINUTE);
    fx.emu.edit.remove(gone.number);
    fx.clock.set(T0 + 600_001 + 10 * MINUTE); // a fresh window
    fx.emu.rateLimit.limit = 2; // 2 listing pages, then the limit
    const before = fx.emu.log.length;
    const planned = fx.clock.now();
    const err = await rateLimitOf(verify(null, planned));
    // The second page starts at the first one's last second: its first object was listed already.
    expect(err.checkpoint).toMatchObject({ v: 1, pages: 2, counts: { checked: 199, deleted: 0 } });
    expect(err.checkpoint).not.toHaveProperty('after'); // still listing
    expect((await stored('work_items')).get(keyOf(gone))!.deleted).toBe(false); // an incomplete listing marks nothing

    fx.clock.set(err.liftsAt!.getTime() + 1);
    fx.emu.rateLimit.limit = 1000;
    const r = await verify(err.checkpoint, planned);
    expect(r.verify).toEqual({ checked: present().length, missing: 0, stale: 0, restored: 0, deleted: 1 });
    expect((await stored('work_items')).get(keyOf(gone))!.deleted).toBe(true);
    await expectAllStored();
    // The second attempt listed on from its checkpoint's time (not the first two pages again), then
    // read the one issue it did not list: 410.
    const log = fx.emu.log.slice(before).filter((l) => l.status !== 403 && l.status !== 429);
    const lists = log.filter(isListing);
    expect(lists).toHaveLength(3);
    expect(Date.parse(new URL(lists[2]!.path, 'http://x').searchParams.get('since')!)).toBe(err.checkpoint!.from);
    expect(issueReads(before).map((l) => [pathOf(l), l.status])).toEqual([
      [`/repos/${repoKey(fx.emu)}/issues/${gone.number}`, 410],
    ]);
  });

  it('a verify deferred while confirming resumes at the id it reached', async () => {
    await fx.start({ rateLimit: { limit: 1000, windowSeconds: 600 } });
    await backfill();
    fx.clock.set(T0 + MINUTE);
    const gone = items()
      .filter((i) => !i.pull && i.number > 20)
      .slice(0, 3);
    for (const i of gone) fx.emu.edit.remove(i.number);
    fx.clock.set(T0 + 600_001 + 10 * MINUTE);
    fx.emu.rateLimit.limit = 4; // 3 listing pages and one of the three reads
    const planned = fx.clock.now();
    const err = await rateLimitOf(verify(null, planned));
    expect(err.checkpoint).toMatchObject({ pages: 3, after: '', counts: { checked: present().length, deleted: 0 } });
    const marked = async () => [...(await stored('work_items')).values()].filter((s) => s.deleted).length;
    expect(await marked()).toBe(0); // a batch is marked once all of it is confirmed

    fx.clock.set(err.liftsAt!.getTime() + 1);
    fx.emu.rateLimit.limit = 1000;
    const from = fx.emu.log.length;
    const r = await verify(err.checkpoint, planned);
    expect(r.verify).toEqual({ checked: present().length, missing: 0, stale: 0, restored: 0, deleted: 3 });
    expect(await marked()).toBe(3);
    expect(fx.emu.log.slice(from).filter(isListing)).toHaveLength(0); // no listing again
  });

  it('an issue edited during the listing (it moves to the end) is read again, never marked deleted', async () => {
    await fx.start();
    await backfill();
    fx.clock.set(T0 + 10 * MINUTE);
    // Between the first and second listing pages the first issue listed is edited: it moves to the end.
    const first = [...present()].sort((a, b) => a.updatedAt - b.updatedAt || a.number - b.number)[0]!;
    let lists = 0;
    const edit: typeof fetch = async (url, init) => {
      if (/\/issues$/.test(new URL(hrefOf(url)).pathname) && ++lists === 2) fx.emu.edit.touch(first.number);
      return fetch(url, init);
    };
    const from = fx.emu.log.length;
    const r = await verify(null, fx.clock.now(), { ...FAST, fetch: edit });
    expect(first.updatedAt).toBe(T0 + 10 * MINUTE);
    // Listed twice, checked once, refreshed from its second listing; nothing read directly.
    expect(r.verify).toEqual({ checked: present().length, missing: 0, stale: 1, restored: 0, deleted: 0 });
    await expectAllStored();
    expect(issueReads(from)).toHaveLength(0);
    const issues = await stored('work_items');
    const pulls = await stored('pull_requests');
    expect([...issues.values(), ...pulls.values()].filter((s) => s.deleted)).toEqual([]);
  });

  it('an object the listing skipped is confirmed present by a direct read, never marked', async () => {
    await fx.start();
    await backfill();
    fx.clock.set(T0 + 10 * MINUTE);
    const skipped = [items().find((i) => !i.pull)!, items().find((i) => i.pull)!];
    const from = fx.emu.log.length;
    const r = await verify(null, fx.clock.now(), { ...FAST, fetch: hiding(skipped) });
    expect(r.verify).toEqual({ checked: present().length, missing: 0, stale: 0, restored: 0, deleted: 0 });
    expect(issueReads(from).map((l) => [pathOf(l).split('/').at(-1), l.status])).toEqual(
      expect.arrayContaining(skipped.map((i) => [String(i.number), 200])),
    );
    expect(issueReads(from)).toHaveLength(2);
    await expectAllStored();
  });

  it('an issue transferred to another repository (301) or answering 404 is gone from this one', async () => {
    await fx.start();
    await backfill();
    fx.clock.set(T0 + 10 * MINUTE);
    const [moved, hidden] = items().filter((i) => !i.pull);
    const elsewhere = fx.emu.data.repos[1]!;
    // Neither is listed any longer; reading `moved` redirects to issue 1 of the other repository
    // (its new place), reading `hidden` answers 404.
    const answers: typeof fetch = async (url, init) => {
      const path = new URL(hrefOf(url)).pathname;
      if (path === `/repos/${repoKey(fx.emu)}/issues/${moved!.number}`) {
        const location = `${fx.emu.url}/repositories/${elsewhere.id}/issues/1`;
        return new Response(null, { status: 301, headers: { location } });
      }
      if (path === `/repos/${repoKey(fx.emu)}/issues/${hidden!.number}`) {
        const body = JSON.stringify({ message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });
        return new Response(body, { status: 404, headers: { 'content-type': 'application/json' } });
      }
      return fetch(url, init);
    };
    const from = fx.emu.log.length;
    const r = await verify(null, fx.clock.now(), { ...FAST, fetch: hiding([moved!, hidden!], answers) });
    expect(r.verify).toEqual({ checked: present().length - 2, missing: 0, stale: 0, restored: 0, deleted: 2 });
    // The redirect was followed to the other repository's issue, which was not taken for this one's.
    expect(issueReads(from).map((l) => pathOf(l))).toEqual([`/repositories/${elsewhere.id}/issues/1`]);
    const after = await stored('work_items');
    expect(after.get(keyOf(moved!))!.deleted).toBe(true);
    expect(after.get(keyOf(hidden!))!.deleted).toBe(true);
  });

  it('a row marked deleted whose issue is listed again is restored', async () => {
    await fx.start();
    await backfill();
    const back = items().find((i) => !i.pull)!;
    await fx.db.query(`UPDATE ${fx.db.schema.table('work_items')} SET deleted_at = $1 WHERE external_id = $2`, [
      new Date(T0),
      keyOf(back),
    ]);
    fx.clock.set(T0 + 10 * MINUTE);
    const r = await verify();
    expect(r.verify).toMatchObject({ stale: 1, restored: 1, deleted: 0 });
    expect((await stored('work_items')).get(keyOf(back))!.deleted).toBe(false);
  });

  const serverError =
    'a 5xx outlasting the retries on a later listing page marks nothing; the retried unit marks the deleted';
  it(serverError, async () => {
    await fx.start();
    await backfill();
    const gone = items().find((i) => !i.pull && i.number > 100)!;
    fx.clock.set(T0 + MINUTE);
    fx.emu.edit.remove(gone.number);
    fx.clock.set(T0 + 10 * MINUTE);
    const planned = fx.clock.now();
    // Once the first listing page is answered, the next listing request and each in-place retry meet a 502.
    const listing = `/repos/${repoKey(fx.emu)}/issues`;
    const down = { kind: 'server-error', path: listing, status: 502, count: RETRY_DEFAULTS.attempts } as const;
    fx.emu.onPage('/issues', 1, () => fx.emu.setFaults([down]));
    const from = fx.emu.log.length;
    const err = await failureOf(verify(null, planned));
    expect(classifyError(err)).toBe('provider_error');
    expect(fx.emu.log.slice(from).map((l) => [isListing(l), l.status])).toEqual([
      [true, 200],
      ...Array<[boolean, number]>(RETRY_DEFAULTS.attempts).fill([true, 502]),
    ]);
    const marked = async () => {
      const rows = [...(await stored('work_items')).entries(), ...(await stored('pull_requests')).entries()];
      return rows.filter(([, s]) => s.deleted).map(([key]) => key);
    };
    expect(await marked()).toEqual([]); // an incomplete listing marks nothing

    fx.emu.setFaults([]);
    const r = await verify(null, planned); // no checkpoint: the unit runs again from the start
    expect(r.verify).toEqual({ checked: present().length, missing: 0, stale: 0, restored: 0, deleted: 1 });
    expect(await marked()).toEqual([keyOf(gone)]);
    await expectAllStored();
  });
});
