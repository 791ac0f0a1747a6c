/**
 * The Jira provider in real runs: the engine (in-process broker, worker, reconciler) on real
 * PostgreSQL, the Jira emulator on 127.0.0.1 with its `email:api_token` credential stored
 * encrypted. A backfill writes every record once, the work-item metrics handler runs after it, and
 * incremental runs after changes read the changed issues: search sees a change only after its lag,
 * and the next incremental run's overlap reads what the run before could not see yet.
 */
import { describe, expect, it } from 'vitest';
import { createJiraProvider } from '../../../src/providers/jira/index.js';
import { jiraDemoIntegration, JIRA_TABLES, startJiraEmulator } from '../../../src/emulators/jira/index.js';
import { workItemMetricsHandler } from '../../../src/sinks/normalized/index.js';
import { waitFor } from '../../helpers/engine.js';
import { jiraRows } from '../../helpers/emulatorRows.js';
import { useEngineSuite } from '../../helpers/engineSuite.js';
import { DAY } from '../../helpers/emulatorSuite.js';

describe('Jira end to end (engine, emulator)', () => {
  const fx = useEngineSuite({
    orgId: 'org-jira-e2e',
    // A search lag of 1 s (not the default 30 s) keeps the wait for the index short on the real clock.
    emulator: () =>
      startJiraEmulator({ seed: 31, scale: { projects: 2, issues: 90, longLists: 2, days: 12 }, searchLagMs: 1000 }),
    provider: createJiraProvider({
      postSyncHandlers: [workItemMetricsHandler],
      retry: { baseDelayMs: 5, maxDelayMs: 20 },
    }),
    concurrency: 4,
    poolSize: 8,
  });

  it('backfills every record once; incremental runs after changes read the changed issues', async () => {
    const { emu, db } = fx;
    const id = await fx.integrate(jiraDemoIntegration(emu));
    const now = Date.now();
    const since = new Date(Math.floor((now - 14 * DAY) / DAY) * DAY);
    const backfill = await fx.run(
      id,
      { mode: 'backfill', triggeredBy: 'backfill', since, before: new Date(now) },
      60_000,
    );
    expect(backfill.status).toBe('success');
    const expected = jiraRows(emu.data);
    expect(expected.projects).toBe(2);
    expect(Object.keys(expected).sort()).toEqual([...JIRA_TABLES].sort());
    for (const [table, n] of Object.entries(expected))
      expect(await fx.stored(id, table), table).toEqual({ keys: n, rows: n });
    const metrics = await waitFor(async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1`,
        [id],
      );
      return rows[0]!.n > 0 ? rows[0]!.n : null;
    });
    expect(metrics).toBeGreaterThan(0);
    expect(JSON.stringify(emu.requestLog)).not.toContain(emu.apiToken);

    const m = emu.mutate();
    const before = emu.requestLog.length;
    // The first run may come before search sees the changes; the next one's overlap reads them.
    const inc = await fx.run(id, { mode: 'incremental', triggeredBy: 'manual' }, 60_000);
    expect(inc.status).toBe('success');
    expect(emu.requestLog.length).toBeGreaterThan(before);
    await waitFor(() => Promise.resolve(emu.searchSettled()), 10_000);
    const next = await fx.run(id, { mode: 'incremental', triggeredBy: 'manual' }, 60_000);
    expect(next.status).toBe('success');
    const changed = await db.query<{ number: string; updated_at: Date }>(
      `SELECT number, updated_at FROM ${db.schema.table('work_items')} WHERE integration_id = $1`,
      [id],
    );
    const byKey = new Map(changed.rows.map((r) => [r.number, r.updated_at.getTime()]));
    const all = new Map(emu.data.projects.flatMap((p) => p.issues).map((i) => [i.key, i.updated]));
    for (const key of m.touched) expect(byKey.get(key)).toBe(all.get(key));
    expect(changed.rows.length).toBe(all.size);
  }, 90_000);
});
