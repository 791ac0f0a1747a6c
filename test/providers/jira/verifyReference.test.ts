/**
 * Jira's verify of sprints and members against the emulator (src/providers/jira/verifyReference.ts
 * on the kit's steps): a sprint deleted and a user deleted are marked, nothing else; a sprint of
 * another project's board is gone from this one; a user no longer assignable stays live; a failed
 * or rate-limited listing marks nothing; a marked row listed again is restored; an unchanged store
 * costs the listing alone.
 */
import { describe, expect, it } from 'vitest';
import { deleteSprint, deleteUser, reachableUsers, setAssignable } from '../../../src/emulators/jira/index.js';
import { classifyError } from '../../../src/errors.js';
import { runJiraUnit, type JiraProviderOptions } from '../../../src/providers/jira/index.js';
import { RETRY_DEFAULTS } from '../../../src/providers/kit/retry.js';
import { T0 } from '../../helpers/emulatorSuite.js';
import { failureOf, rateLimitOf } from '../../helpers/failures.js';
import { useJiraSuite } from './support.js';

const FAST: JiraProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, budget: { probePollMs: 20, reserve: 0 } };
const MINUTE = 60_000;

const fx = useJiraSuite({ seed: 5, searchLagMs: 0, scale: { projects: 2, issues: 30, longLists: 0, days: 20 } });

/** A reference unit of `dataset` over ENG: a sync, or a verify planned now. */
function unit(dataset: 'sprints' | 'members', mode: 'full_resync' | 'verify' = 'verify') {
  const timing = mode === 'verify' ? { since: null, before: fx.clock.now() } : { since: null, before: null };
  return runJiraUnit(fx.unit({ datasetKey: dataset, tier: 'reference', mode, ...timing }), FAST);
}

/** Each stored row of `table`: whether it is marked deleted. */
async function stored(table: 'sprints' | 'members'): Promise<Map<string, boolean>> {
  const { rows } = await fx.db.query<{ external_id: string; deleted_at: Date | null }>(
    `SELECT external_id, deleted_at FROM ${fx.db.schema.table(table)}`,
  );
  return new Map(rows.map((r) => [r.external_id, r.deleted_at !== null]));
}

async function marked(table: 'sprints' | 'members'): Promise<string[]> {
  return [...(await stored(table))].filter(([, d]) => d).map(([id]) => id);
}

const engSprints = () => {
  const boards = new Set(fx.emu.data.boards.filter((b) => b.projectKey === 'ENG' && b.sprints).map((b) => b.id));
  return fx.emu.data.sprints.filter((s) => boards.has(s.boardId));
};

/** Requests since `from` whose path starts with `prefix`: path and status. */
const calls = (from: number, prefix: string) =>
  fx.emu.requestLog
    .slice(from)
    .filter((l) => l.path.startsWith(prefix))
    .map((l) => [l.path, l.status]);

describe('Jira verify of sprints', () => {
  it('marks a sprint deleted in Jira and one moved to another project, nothing else; then finds nothing', async () => {
    await fx.start();
    await unit('sprints', 'full_resync');
    const all = engSprints();
    expect(all.length).toBeGreaterThan(3);
    const gone = all[1]!;
    deleteSprint(fx.emu.data, gone.id);
    const moved = all[2]!;
    moved.boardId = fx.emu.data.boards.find((b) => b.projectKey !== 'ENG' && b.sprints)!.id;
    fx.clock.set(T0 + 10 * MINUTE);

    const from = fx.emu.requestLog.length;
    const r = await unit('sprints');
    // Checked: the sprints listed; neither gone one (read directly, not found the project's) counts.
    expect(r.verify).toEqual({ checked: all.length - 2, missing: 0, stale: 0, restored: 0, deleted: 2 });
    expect((await marked('sprints')).sort()).toEqual([String(gone.id), String(moved.id)].sort());
    // Each unseen sprint read directly: a 404 for the deleted one, the moved one's answer names another board.
    expect(calls(from, '/rest/agile/1.0/sprint/')).toEqual([
      [`/rest/agile/1.0/sprint/${gone.id}`, 404],
      [`/rest/agile/1.0/sprint/${moved.id}`, 200],
    ]);

    fx.clock.set(T0 + 20 * MINUTE);
    const again = fx.emu.requestLog.length;
    const second = await unit('sprints');
    expect(second.verify).toEqual({ checked: all.length - 2, missing: 0, stale: 0, restored: 0, deleted: 0 });
    expect(calls(again, '/rest/agile/1.0/sprint/')).toEqual([]); // the listing alone: nothing refetched
    expect(second.items).toBe(0);
  });

  it('a sprint marked deleted and listed again is written back, live', async () => {
    await fx.start();
    await unit('sprints', 'full_resync');
    const back = String(engSprints()[0]!.id);
    await fx.db.query(`UPDATE ${fx.db.schema.table('sprints')} SET deleted_at = $1 WHERE external_id = $2`, [
      new Date(T0),
      back,
    ]);
    fx.clock.set(T0 + 10 * MINUTE);
    const r = await unit('sprints');
    expect(r.verify).toMatchObject({ stale: 1, restored: 1, deleted: 0 });
    expect(r.items).toBe(1);
    expect(await marked('sprints')).toEqual([]);
  });

  it('a 5xx outlasting the retries during the listing marks nothing', async () => {
    await fx.start();
    await unit('sprints', 'full_resync');
    deleteSprint(fx.emu.data, engSprints()[0]!.id);
    fx.clock.set(T0 + 10 * MINUTE);
    fx.emu.setFaults([{ kind: 'server-error', path: '/sprint', status: 503, count: RETRY_DEFAULTS.attempts }]);
    const err = await failureOf(unit('sprints'));
    expect(classifyError(err)).toBe('provider_error');
    expect(await marked('sprints')).toEqual([]);
  });
});

describe('Jira verify of members', () => {
  it('marks a user deleted from the site; one no longer assignable stays live', async () => {
    await fx.start();
    await unit('members', 'full_resync');
    const users = reachableUsers(fx.emu.data);
    expect(users.length).toBeGreaterThan(3);
    const gone = users[1]!;
    const unassignable = users[2]!;
    deleteUser(fx.emu.data, gone.accountId);
    setAssignable(fx.emu.data, unassignable.accountId, false);
    fx.clock.set(T0 + 10 * MINUTE);

    const from = fx.emu.requestLog.length;
    const r = await unit('members');
    // Checked: the users listed, and the unassignable one confirmed present by its read.
    expect(r.verify).toEqual({ checked: users.length - 1, missing: 0, stale: 0, restored: 0, deleted: 1 });
    expect(await marked('members')).toEqual([gone.accountId]);
    const reads = calls(from, '/rest/api/3/user?').sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    const read = (id: string) => `/rest/api/3/user?accountId=${encodeURIComponent(id)}`;
    const expected = [
      [read(gone.accountId), 404],
      [read(unassignable.accountId), 200],
    ].sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(reads).toEqual(expected);
    expect((await stored('members')).get(unassignable.accountId)).toBe(false);
  });

  it('a rate limit during the listing marks nothing; a member written back is live again', async () => {
    await fx.start();
    await unit('members', 'full_resync');
    const users = reachableUsers(fx.emu.data);
    deleteUser(fx.emu.data, users[0]!.accountId);
    fx.clock.set(T0 + 10 * MINUTE);
    fx.emu.setFaults([{ kind: 'rate-limit', path: '/user/assignable/search', retryAfter: 60, count: 20 }]);
    const err = await rateLimitOf(unit('members'));
    expect(await marked('members')).toEqual([]);
    fx.emu.setFaults([]);
    fx.clock.set(err.liftsAt!.getTime() + 1);

    const back = users[3]!.accountId;
    await fx.db.query(`UPDATE ${fx.db.schema.table('members')} SET deleted_at = $1 WHERE external_id = $2`, [
      new Date(T0),
      back,
    ]);
    const r = await unit('members');
    expect(r.verify).toMatchObject({ restored: 1, deleted: 1 });
    expect(await marked('members')).toEqual([users[0]!.accountId]);
  });
});
