/**
 * Nothing silently missed: the Jira reader against the emulator with Jira Cloud's hostile ways on
 * (docs/emulators.md), every result checked against the emulator's own records — search lagging
 * its writes (closed by the incremental overlap), the assignable-user search's short and empty
 * pages and its 1,000-user cap, the capped changelog a search embeds, team-managed boards' sprints.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SEARCH_LAG_MS, EMBEDDED, reachableUsers } from '../../../src/emulators/jira/index.js';
import { createJiraProvider, runJiraUnit, type JiraProviderOptions } from '../../../src/providers/jira/index.js';
import { jiraEventCount } from '../../helpers/emulatorRows.js';
import { DAY, rows, T0 } from '../../helpers/emulatorSuite.js';
import { useJiraSuite } from './support.js';

const FAST: JiraProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, pageSize: 25 };
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history'];
const MINUTE = 60_000;

const fx = useJiraSuite({ seed: 11, scale: { projects: 1, issues: 60, longLists: 0, days: 10 } });

const issuesOf = (key: string) => fx.emu.data.projects.find((p) => p.key === key)!.issues;

/** Stored work items: external id → updated_at (ms). */
async function storedUpdated(): Promise<Map<string, number>> {
  const all = await rows<{ external_id: string; updated_at: Date }>(fx.db, 'work_items');
  return new Map(all.map((r) => [r.external_id, r.updated_at.getTime()]));
}

describe('Jira reader: search is eventually consistent', () => {
  it('the incremental overlap covers the search lag: a window after it reads what the one before missed', async () => {
    await fx.start();
    const overlapMs = createJiraProvider().incrementalOverlapMs ?? 0;
    expect(overlapMs).toBeGreaterThanOrEqual(fx.emu.searchLagMs);
    expect(fx.emu.searchLagMs).toBe(DEFAULT_SEARCH_LAG_MS);
    const family = (since: Date, before: Date) =>
      runJiraUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY, mode: 'incremental', since, before }), FAST);
    await family(new Date(T0 - 30 * DAY), new Date(T0));

    // Issues change at T0 + 1 min; a run 10 s later reads [T0, T0 + 70 s): search does not see them yet.
    fx.clock.set(T0 + MINUTE);
    const changed = fx.emu.mutate();
    fx.clock.set(T0 + 70_000);
    const watermark = fx.clock.now();
    await family(new Date(T0), watermark);
    const ids = new Map(issuesOf('ENG').map((i) => [i.key, i]));
    const touched = changed.touched.map((k) => ids.get(k)!);
    let stored = await storedUpdated();
    expect(touched.filter((i) => stored.get(i.id) === i.updated)).toEqual([]);

    // The next run, the lag long passed: from the watermark, as without an overlap, they stay unread …
    fx.clock.set(T0 + 10 * MINUTE);
    await family(watermark, fx.clock.now());
    stored = await storedUpdated();
    expect(touched.filter((i) => stored.get(i.id) === i.updated)).toEqual([]);

    // … from the watermark less the provider's overlap, every issue is stored as the emulator holds it.
    await family(new Date(watermark.getTime() - overlapMs), fx.clock.now());
    stored = await storedUpdated();
    for (const i of issuesOf('ENG')) expect(stored.get(i.id), i.key).toBe(i.updated);
  });
});

describe('Jira reader: assignable users', () => {
  it('reads past short and empty pages: every assignable user of the pool, nothing flagged', async () => {
    await fx.start();
    const r = await runJiraUnit(fx.unit({ datasetKey: 'members', tier: 'reference' }), FAST);
    const stored = (await rows<{ external_id: string }>(fx.db, 'members')).map((m) => m.external_id);
    expect(new Set(stored)).toEqual(new Set(fx.emu.data.users.map((u) => u.accountId)));
    expect(stored.length).toBe(fx.emu.data.users.length);
    expect(r.incomplete).toBeUndefined();
    const calls = fx.emu.requestLog.filter((l) => l.path.startsWith('/rest/api/3/user/assignable/search'));
    expect(calls.length).toBe(10); // every range up to the 1,000th user
  });

  it('past the 1,000-user cap: every reachable user, and the unit says members may be incomplete', async () => {
    await fx.start({ scale: { projects: 1, issues: 10, users: 1100, days: 10 } });
    const warnings: string[] = [];
    const ctx = fx.unit({ datasetKey: 'members', tier: 'reference' });
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const r = await runJiraUnit({ ...ctx, logger }, FAST);
    const stored = new Set((await rows<{ external_id: string }>(fx.db, 'members')).map((m) => m.external_id));
    const reachable = reachableUsers(fx.emu.data).map((u) => u.accountId);
    expect(stored).toEqual(new Set(reachable));
    expect(reachable.length).toBeLessThan(fx.emu.data.users.length);
    expect(r.incomplete).toMatchObject({ surface: 'members' });
    expect(warnings.join('\n')).toContain('jira members may be incomplete');
  });
});

describe('Jira reader: the changelog a search embeds', () => {
  it('reads the whole changelog when the embedded one is capped, with or without its total', async () => {
    await fx.start({ scale: { projects: 1, issues: 40, longLists: 8, days: 10 } });
    const issues = issuesOf('ENG');
    const capped = issues.filter((i) => i.histories.length > EMBEDDED);
    // Some capped issues come without `total` (even ids), some with it.
    expect(capped.some((i) => Number(i.id) % 2 === 0)).toBe(true);
    expect(capped.some((i) => Number(i.id) % 2 === 1)).toBe(true);
    const r = await runJiraUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY }), FAST);
    expect(r.written).toMatchObject({ work_item_events: jiraEventCount(issues) });
    const events = await rows<{ external_id: string }>(fx.db, 'work_item_events');
    const historiesOf = new Map<string, Set<string>>();
    for (const e of events) {
      const [issue, history] = e.external_id.split(':') as [string, string];
      historiesOf.set(issue, (historiesOf.get(issue) ?? new Set()).add(history));
    }
    for (const i of capped) {
      const stored = historiesOf.get(i.id) ?? new Set();
      const wanted = i.histories.filter((h) => h.items.some((x) => ['status', 'assignee', 'labels'].includes(x.field)));
      expect(
        wanted.filter((h) => !stored.has(h.id)),
        i.key,
      ).toEqual([]);
    }
    // started_at comes from the oldest status move, which only the full changelog holds.
    const items = new Map(
      (await rows<{ external_id: string; started_at: Date | null }>(fx.db, 'work_items')).map((w) => [
        w.external_id,
        w.started_at?.getTime() ?? null,
      ]),
    );
    for (const i of capped) {
      const first = i.histories.find((h) =>
        h.items.some((x) => x.field === 'status' && (x.to === '3' || x.to === '10001')),
      );
      expect(items.get(i.id), i.key).toBe(first ? first.created : null);
    }
  });
});

describe('Jira reader: team-managed boards', () => {
  it('reads the sprints of a simple board; a simple board without sprints is no failure', async () => {
    await fx.start({ scale: { projects: 4, issues: 20, days: 10 } });
    const sprintsOf = (key: string) => {
      const boards = fx.emu.data.boards.filter((b) => b.projectKey === key).map((b) => b.id);
      return fx.emu.data.sprints.filter((s) => boards.includes(s.boardId)).map((s) => String(s.id));
    };
    const ops = await runJiraUnit(fx.unit({ datasetKey: 'sprints', tier: 'reference', sourceKey: 'OPS' }), FAST);
    expect(sprintsOf('OPS').length).toBeGreaterThan(0);
    expect(ops.items).toBe(sprintsOf('OPS').length);
    const stored = await rows<{ external_id: string; container: string }>(fx.db, 'sprints');
    expect(stored.map((s) => s.external_id).sort()).toEqual(sprintsOf('OPS').sort());
    expect(stored.every((s) => s.container === 'OPS')).toBe(true);
    const api = await runJiraUnit(fx.unit({ datasetKey: 'sprints', tier: 'reference', sourceKey: 'API' }), FAST);
    expect(api.items).toBe(0);
    expect(sprintsOf('API')).toEqual([]);
  });
});
