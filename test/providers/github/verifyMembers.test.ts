/**
 * GitHub's verify of members against the emulator (src/providers/github/verifyMembers.ts on the
 * kit's steps): each repository's assignees are listed; members belong to the whole integration,
 * so the unseen ones (gone from this repository's assignees, or assignable only elsewhere) are read
 * by account id, and only a 404 — a deleted account — marks one; never on a 5xx or a limit; a
 * member listed or written again has `deleted_at` cleared. Also: which datasets a GitHub verify plans.
 */
import { describe, expect, it } from 'vitest';
import type { RepoRecord, RequestLogEntry, UserRecord } from '../../../src/emulators/github/index.js';
import { classifyError } from '../../../src/errors.js';
import { GITHUB_DATASETS, runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import { RETRY_DEFAULTS } from '../../../src/providers/kit/retry.js';
import { count, T0 } from '../../helpers/emulatorSuite.js';
import { failureOf, rateLimitOf } from '../../helpers/failures.js';
import { ISSUES_ONLY, repoKey, useGithubSuite } from './support.js';

const FAST: GithubProviderOptions = {
  retry: { baseDelayMs: 1, maxDelayMs: 2 },
  budget: { probePollMs: 20, reserve: 0 },
};
const MINUTE = 60_000;

// Two repositories of 121 assignees each (two listing pages), the same people in both.
const fx = useGithubSuite({ seed: 31, scale: { ...ISSUES_ONLY, repos: 2, issues: 10, members: 120 } });

const repos = () => fx.emu.data.repos;
const sourceOf = (repo: RepoRecord) => repoKey(fx.emu, repo);

/** The members unit of each repository (reference: no window). */
async function readMembers() {
  for (const repo of repos()) {
    await runGithubUnit(fx.unit({ datasetKey: 'members', tier: 'reference', sourceKey: sourceOf(repo) }), FAST);
  }
}

/** A verify unit of the members of `repo`, planned at `before`. */
function verify(repo: RepoRecord, before: Date = fx.clock.now(), opts: GithubProviderOptions = FAST) {
  const spec = { datasetKey: 'members', tier: 'reference' as const, mode: 'verify' as const, since: null, before };
  return runGithubUnit(fx.unit({ ...spec, sourceKey: sourceOf(repo) }), opts);
}

/** The stored members marked deleted, by external id. */
async function marked(): Promise<string[]> {
  const { rows } = await fx.db.query<{ external_id: string }>(
    `SELECT external_id FROM ${fx.db.schema.table('members')} WHERE deleted_at IS NOT NULL ORDER BY external_id`,
  );
  return rows.map((r) => r.external_id);
}

const idsOf = (users: readonly UserRecord[]) => users.map((u) => String(u.id)).sort();
/** Two members (not the owner, whose account cannot be deleted). */
const twoMembers = () =>
  repos()[0]!
    .collaborators.filter((u) => u.association !== 'OWNER')
    .slice(3, 5);

const pathOf = (l: RequestLogEntry) => l.path.split('?')[0]!;
const isListing = (l: RequestLogEntry) => pathOf(l).endsWith('/assignees');
/** Reads of one account by id since log entry `from`: [id, status]. */
const accountReads = (from: number) =>
  fx.emu.log
    .slice(from)
    .filter((l) => /^\/user\/\d+$/.test(pathOf(l)))
    .map((l) => [pathOf(l).split('/').at(-1), l.status]);

describe('GitHub verify of members', () => {
  it('a verify run plans the members (once, integration-wide) beside the issues and comments', () => {
    const verified = GITHUB_DATASETS.filter((d) => d.verifies === true);
    expect(verified.map((d) => d.key)).toEqual([
      'members',
      'work-items',
      'work-item-comments',
      'pull-requests',
      'pull-request-reviews',
    ]);
    expect(GITHUB_DATASETS.find((d) => d.key === 'members')).toMatchObject({ tier: 'reference' });
  });

  const deletedOnly =
    'a deleted account is marked, and nothing else: not a user removed as one repository’s assignee only';
  it(deletedOnly, async () => {
    await fx.start();
    await readMembers();
    const stored = await count(fx.db, 'members');
    expect(stored).toBe(repos()[0]!.collaborators.length);
    const [gone, moved] = twoMembers() as [UserRecord, UserRecord];
    fx.clock.set(T0 + MINUTE);
    fx.emu.edit.deleteAccount(gone.id);
    fx.emu.edit.unassign(moved.id, repos()[0]); // listed only by the second repository now
    fx.clock.set(T0 + 10 * MINUTE);
    const planned = fx.clock.now();
    const from = fx.emu.log.length;

    const first = await verify(repos()[0]!, planned);
    const listed = repos()[0]!.collaborators.length;
    expect(first.verify).toEqual({ checked: listed + 1, missing: 0, stale: 0, restored: 0, deleted: 1 });
    expect(first.items).toBe(0);
    // Only the two unseen accounts were read: the deleted one answered 404, the other 200.
    expect(accountReads(from).sort()).toEqual([
      [String(gone.id), 404],
      [String(moved.id), 200],
    ]);
    expect(await marked()).toEqual([String(gone.id)]);

    const calls = fx.emu.log.length;
    const second = await verify(repos()[1]!, planned); // the same run's unit of the second repository
    expect(second.verify).toEqual({ checked: listed + 1, missing: 0, stale: 0, restored: 0, deleted: 0 });
    expect(fx.emu.log.slice(calls).every(isListing)).toBe(true); // everyone is listed or marked already
    expect(await marked()).toEqual([String(gone.id)]); // kept, marked; nothing else
    expect(await count(fx.db, 'members')).toBe(stored);
  });

  it('a member listed only by the second repository is not marked by the first’s unit', async () => {
    await fx.start();
    await readMembers();
    const [only] = twoMembers() as [UserRecord];
    fx.emu.edit.unassign(only.id, repos()[0]);
    // Assignable in the second repository alone, and new: never stored before.
    const fresh = fx.emu.data.users.find((u) => !repos()[1]!.collaborators.includes(u))!;
    repos()[1]!.collaborators.push(fresh);
    fx.clock.set(T0 + 10 * MINUTE);
    const from = fx.emu.log.length;
    const r = await verify(repos()[0]!);
    expect(r.verify).toMatchObject({ missing: 0, deleted: 0 });
    expect(accountReads(from)).toEqual([[String(only.id), 200]]);
    expect(await marked()).toEqual([]);
    const second = await verify(repos()[1]!);
    expect(second.verify).toMatchObject({ missing: 1, deleted: 0 });
    expect(second.items).toBe(1); // written from the page listed
    expect(await marked()).toEqual([]);
  });

  const serverErrors = 'a 5xx outlasting the retries on a later listing page, or on a confirmation, marks nothing';
  it(serverErrors, async () => {
    await fx.start();
    await readMembers();
    const [gone] = twoMembers() as [UserRecord];
    fx.emu.edit.deleteAccount(gone.id);
    fx.clock.set(T0 + 10 * MINUTE);
    const planned = fx.clock.now();
    const attempts = RETRY_DEFAULTS.attempts;
    // Once the first listing page is answered, the next listing request and each in-place retry meet a 502.
    const listing = { kind: 'server-error', path: '/assignees', status: 502, count: attempts } as const;
    fx.emu.onPage('/assignees', 1, () => fx.emu.setFaults([listing]));
    const from = fx.emu.log.length;
    expect(classifyError(await failureOf(verify(repos()[0]!, planned)))).toBe('provider_error');
    expect(fx.emu.log.slice(from).map((l) => [isListing(l), l.status])).toEqual([
      [true, 200],
      ...Array<[boolean, number]>(attempts).fill([true, 502]),
    ]);
    expect(await marked()).toEqual([]);

    // The listing complete, the account's read meets a 502 on every try.
    fx.emu.setFaults([{ kind: 'server-error', path: `/user/${gone.id}`, status: 502, count: attempts }]);
    const confirming = fx.emu.log.length;
    expect(classifyError(await failureOf(verify(repos()[0]!, planned)))).toBe('provider_error');
    expect(accountReads(confirming)).toEqual(Array(attempts).fill([String(gone.id), 502]));
    expect(await marked()).toEqual([]);

    fx.emu.setFaults([]);
    const r = await verify(repos()[0]!, planned); // the unit again, from the start
    expect(r.verify).toMatchObject({ deleted: 1 });
    expect(await marked()).toEqual([String(gone.id)]);
  });

  it('a limit answer during the listing or a confirmation marks nothing; once lifted, the verify marks', async () => {
    await fx.start({ rateLimit: { limit: 1000, windowSeconds: 600 } });
    await readMembers();
    const gone = twoMembers();
    for (const u of gone) fx.emu.edit.deleteAccount(u.id);
    fx.clock.set(T0 + 600_001 + MINUTE); // a fresh window
    const planned = fx.clock.now();
    fx.emu.rateLimit.limit = 1; // the first listing page, then the limit
    const listing = await rateLimitOf(verify(repos()[0]!, planned));
    expect(listing.checkpoint).toBeNull(); // a members verify lists again from the start
    expect(await marked()).toEqual([]);

    fx.clock.set(listing.liftsAt!.getTime() + 1);
    fx.emu.rateLimit.limit = 3; // both listing pages and one account read, then the limit
    const from = fx.emu.log.length;
    const confirming = await rateLimitOf(verify(repos()[0]!, planned));
    expect(accountReads(from).filter(([, status]) => status === 404)).toHaveLength(1);
    expect(await marked()).toEqual([]); // a batch is marked only once every read of it is answered

    fx.clock.set(confirming.liftsAt!.getTime() + 1);
    fx.emu.rateLimit.limit = 1000;
    const r = await verify(repos()[0]!, planned);
    expect(r.verify).toMatchObject({ deleted: 2 });
    expect(await marked()).toEqual(idsOf(gone));
  });

  it('a member marked deleted comes back: listed again by a verify, or written again by a read', async () => {
    await fx.start();
    await readMembers();
    const [listedBack, writtenBack] = twoMembers() as [UserRecord, UserRecord];
    const mark = (u: UserRecord) =>
      fx.db.query(`UPDATE ${fx.db.schema.table('members')} SET deleted_at = $1 WHERE external_id = $2`, [
        new Date(T0),
        String(u.id),
      ]);
    await mark(listedBack);
    fx.clock.set(T0 + 10 * MINUTE);
    const r = await verify(repos()[0]!);
    expect(r.verify).toMatchObject({ stale: 1, restored: 1, deleted: 0 });
    expect(r.items).toBe(1);
    expect(await marked()).toEqual([]);

    await mark(writtenBack);
    fx.clock.set(T0 + 20 * MINUTE);
    await readMembers();
    expect(await marked()).toEqual([]);
  });
});
