/**
 * The Linear reader against an emulator as hostile as Linear, nothing lost checked against the
 * emulator's own records (its model), not counts:
 * - leaky-bucket limits with an endpoint bucket answering 429 + retry-after: every deferral lifts no
 *   earlier than the answer allows, so the reader never meets the same limit twice in a row (driven
 *   by the test's clock, no wall time);
 * - partial data (`data` beside `errors`, a field nulled): retried in place, never written as if
 *   whole; a partial answer every time fails the unit (`provider_error`) with nothing of it written;
 * - issues edited, archived and deleted between two pages of a window (and churn by the clock): the
 *   window's read and the next window's together store every issue as the model has it.
 */
import { describe, expect, it } from 'vitest';
import { classifyError, RateLimitError } from '../../../src/errors.js';
import { runLinearUnit, type LinearProviderOptions } from '../../../src/providers/linear/index.js';
import { parseLinearFaults, type LinearEmulator } from '../../../src/emulators/linear/index.js';
import type { UnitCheckpoint } from '../../../src/domain/checkpoint.js';
import type { UnitResult } from '../../../src/sdk/types.js';
import { count, DAY, rows, T0, type UnitOverrides } from '../../helpers/emulatorSuite.js';
import { failureOf } from '../../helpers/failures.js';
import { useLinearSuite } from './support.js';

const FAST: LinearProviderOptions = {
  pageSize: 10,
  nestedPageSize: 10,
  retry: { baseDelayMs: 1, maxDelayMs: 2 },
  budget: { probePollMs: 20, flushEvery: 1 },
};
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history', 'work-item-labels'];
const ISSUES = 'SyncIssuesCommentsHistoryLabels';

const fx = useLinearSuite(
  { scale: { teams: 2, issues: 120 } },
  { datasetKey: 'work-items', datasets: FAMILY, since: new Date(T0 - 40 * DAY), before: new Date(T0) },
);

function unit(spec: Partial<UnitOverrides> = {}, opts: LinearProviderOptions = FAST) {
  return runLinearUnit(fx.unit({ datasetKey: 'work-items', ...spec }), opts);
}

interface StoredItem {
  external_id: string;
  updated_at: Date;
  assignees: string[];
}

/** The ENG issues of the model updated in `[since, before)`. */
function modelIssues(emu: LinearEmulator, since: number, before: number) {
  const eng = emu.data.teams.find((t) => t.key === 'ENG')!.id;
  return emu.data.issues.filter((i) => i.teamId === eng && i.updatedAt >= since && i.updatedAt < before);
}

/** Every stored work item equals the model's issue: its update time and its assignee. */
async function expectStoredAsModel(emu: LinearEmulator, since: number, before: number): Promise<void> {
  const stored = new Map((await rows<StoredItem>(fx.db, 'work_items')).map((r) => [r.external_id, r]));
  const users = new Map(emu.data.users.map((u) => [u.id, u.displayName]));
  const expected = modelIssues(emu, since, before);
  expect(expected.length).toBeGreaterThan(0);
  for (const issue of expected) {
    const row = stored.get(issue.id);
    expect(row, `issue ${issue.id} stored`).toBeDefined();
    expect(row!.updated_at.getTime()).toBe(issue.updatedAt);
    expect(row!.assignees).toEqual(issue.assigneeId ? [users.get(issue.assigneeId)] : []);
  }
}

/** Runs attempts of a unit until it succeeds, each resuming from the last one's checkpoint at its lift. */
async function untilDone(spec: Partial<UnitOverrides>, lifts: number[]): Promise<UnitResult> {
  let checkpoint: UnitCheckpoint | null = null;
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      return await unit({ ...spec, checkpoint });
    } catch (err) {
      if (!(err instanceof RateLimitError)) throw err;
      checkpoint = err.checkpoint ?? checkpoint;
      lifts.push(err.liftsAt!.getTime() - fx.clock.now().getTime());
      fx.clock.set(err.liftsAt!.getTime());
    }
  }
  throw new Error('the unit did not finish in 40 attempts');
}

describe('leaky buckets, an endpoint bucket, 429 with retry-after', () => {
  it('never meets the same limit twice in a row; every issue of the window lands (clock-driven)', async () => {
    // `issues` has a bucket of its own: 3 requests, refilled at 3 a minute; a spent one answers 429.
    const issues = { limit: 3, windowSeconds: 60 };
    await fx.start({ rateLimit: { endpoints: { issues }, status: 429 } });
    const lifts: number[] = [];
    const result = await untilDone({}, lifts);
    expect(result).toMatchObject({ work_items: 60 });
    const log = fx.emu.requestLog.filter((e) => e.operation === ISSUES);
    // A limited answer is never followed by another: the reader waits out what the answer says.
    const limited = log.map((e, n) => (e.errorCode === 'RATELIMITED' ? n : -1)).filter((n) => n >= 0);
    for (const n of limited) expect(log[n + 1]?.errorCode ?? null).toBeNull();
    expect(limited.length).toBeLessThanOrEqual(1); // the endpoint bucket, once learned, defers without calling
    for (const wait of lifts) expect(wait).toBeGreaterThanOrEqual(20_000); // one request refills in 20 s
    await expectStoredAsModel(fx.emu, T0 - 40 * DAY, T0);
  });

  it('a 429 lifts no earlier than its retry-after, though no bucket it shows is spent', async () => {
    await fx.start({ rateLimit: { endpoints: { issues: { limit: 1, windowSeconds: 90 } }, status: 429 } });
    await failureOf(unit()); // spends the endpoint bucket: a fresh unit's first call meets the limit
    const calls = fx.emu.requestLog.length;
    const err = (await failureOf(unit({ integrationId: '00000000-0000-4000-8000-0000000000c2' }))) as RateLimitError;
    expect(err).toBeInstanceOf(RateLimitError);
    const answered = fx.emu.requestLog.slice(calls);
    expect(answered.map((e) => e.status)).toEqual([429]);
    expect(err.liftsAt!.getTime()).toBeGreaterThanOrEqual(T0 + 90_000); // retry-after: 90 s
  });
});

describe('partial data: `data` beside `errors`', () => {
  it('is retried in place and never written: what lands is the model', async () => {
    await fx.start({ faults: parseLinearFaults(`partial:count=2:op=${ISSUES}`) });
    expect(await unit()).toMatchObject({ work_items: 60 });
    const first = fx.emu.requestLog.filter((e) => e.operation === ISSUES).slice(0, 3);
    expect(first.map((e) => [e.status, e.fault])).toEqual([
      [200, 'partial'],
      [200, 'partial'],
      [200, null],
    ]);
    await expectStoredAsModel(fx.emu, T0 - 40 * DAY, T0);
  });

  it('a partial answer every time fails the unit (provider_error); nothing of it is written', async () => {
    await fx.start({ faults: parseLinearFaults(`partial:op=${ISSUES}`) });
    const err = await failureOf(unit());
    expect(classifyError(err)).toBe('provider_error');
    expect(await count(fx.db, 'work_items')).toBe(0);
  });
});

describe('issues changing while a window is read', () => {
  it('edited, archived and deleted between pages, and churn by the clock: nothing lost', async () => {
    await fx.start();
    const emu = fx.emu;
    let pages = 0;
    emu.setChurn({
      editsPerSecond: 2,
      afterIssuesPage: ({ ids }) => {
        pages++;
        fx.clock.set(T0 + pages * 1000); // a second between pages: churn edits issues by the clock
        if (pages !== 1) return;
        const unread = modelIssues(emu, T0 - 40 * DAY, T0).filter((i) => !ids.includes(i.id));
        emu.editIssue(ids[ids.length - 1]!); // the page's last issue: where a cursor would point
        emu.archiveIssue(unread[0]!.id);
        emu.deleteIssue(unread[1]!.id);
        emu.editIssue(unread[2]!.id);
      },
    });
    const window = await unit();
    expect(emu.churned.length).toBeGreaterThan(0);
    // Some issues were written before they were edited out of the window: more rows than it holds now.
    expect(window.work_items).toBeGreaterThanOrEqual(modelIssues(emu, T0 - 40 * DAY, T0).length);
    await expectStoredAsModel(emu, T0 - 40 * DAY, T0);
    // The next window (the watermark is the last one's end) holds every issue edited meanwhile.
    emu.setChurn({});
    const end = fx.clock.now().getTime() + 1;
    await unit({ since: new Date(T0), before: new Date(end) });
    await expectStoredAsModel(emu, T0 - 40 * DAY, end);
  });
});
