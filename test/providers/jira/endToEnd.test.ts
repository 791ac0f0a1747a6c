/**
 * The Jira provider in real runs: the engine (in-process broker, worker, reconciler) on real
 * PostgreSQL, the Jira emulator on 127.0.0.1 with its `email:api_token` credential stored
 * encrypted. A backfill writes every record once, the work-item metrics handler runs after it, and
 * an incremental run after changes reads the changed issues.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../../src/engine.js';
import { createJiraProvider } from '../../../src/providers/jira/index.js';
import {
  jiraDemoIntegration,
  JIRA_TABLES,
  startJiraEmulator,
  type JiraEmulator,
} from '../../../src/emulators/jira/index.js';
import { workItemMetricsHandler } from '../../../src/sinks/normalized/index.js';
import { openProviderEngine, runTerminal, waitFor, type TestEngine } from '../../helpers/engine.js';
import type { TestDatabase } from '../../helpers/pg.js';

const ORG = 'org-jira-e2e';
const DAY = 86_400_000;

describe('Jira end to end (engine, emulator)', () => {
  let h: TestEngine;
  let t: TestDatabase;
  let engine: Engine;
  let emu: JiraEmulator;

  beforeAll(async () => {
    emu = await startJiraEmulator({ seed: 31, scale: { projects: 2, issues: 90, longLists: 2, days: 12 } });
    h = await openProviderEngine({
      provider: createJiraProvider({
        postSyncHandlers: [workItemMetricsHandler],
        retry: { baseDelayMs: 5, maxDelayMs: 20 },
      }),
      concurrency: 4,
      poolSize: 8,
    });
    ({ t, engine } = h);
  }, 60_000);

  afterAll(async () => {
    await h?.close();
    await emu?.close();
  });

  async function counts(integrationId: string): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const table of JIRA_TABLES) {
      const { rows } = await t.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${t.db.schema.table(table)} WHERE integration_id = $1`,
        [integrationId],
      );
      out[table] = rows[0]!.n;
    }
    return out;
  }

  it('backfills every record once; an incremental run after changes reads the changed issues', async () => {
    const demo = jiraDemoIntegration(emu);
    const integ = await engine.createIntegration({ orgId: ORG, name: 'acme-jira', ...demo });
    const now = Date.now();
    const { syncRunId } = await engine.trigger({
      orgId: ORG,
      integrationId: integ.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: new Date(Math.floor((now - 14 * DAY) / DAY) * DAY),
      before: new Date(now),
    });
    expect(await runTerminal(t.db, syncRunId, 60_000)).toBe('success');
    const issues = emu.data.projects.flatMap((p) => p.issues);
    const kinds = new Set(['status', 'assignee', 'labels']);
    expect(await counts(integ.id)).toEqual({
      projects: 2,
      members: emu.data.users.length,
      sprints: emu.data.sprints.length,
      work_items: issues.length,
      work_item_comments: issues.reduce((n, i) => n + i.comments.length, 0),
      work_item_events: issues.reduce(
        (n, i) => n + i.histories.reduce((m, h) => m + h.items.filter((x) => kinds.has(x.field)).length, 0),
        0,
      ),
    });
    const metrics = await waitFor(async () => {
      const { rows } = await t.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${t.db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1`,
        [integ.id],
      );
      return rows[0]!.n > 0 ? rows[0]!.n : null;
    });
    expect(metrics).toBeGreaterThan(0);
    expect(JSON.stringify(emu.requestLog)).not.toContain(emu.apiToken);

    const m = emu.mutate();
    const before = emu.requestLog.length;
    const inc = await engine.trigger({
      orgId: ORG,
      integrationId: integ.id,
      mode: 'incremental',
      triggeredBy: 'manual',
    });
    expect(await runTerminal(t.db, inc.syncRunId, 60_000)).toBe('success');
    expect(emu.requestLog.length).toBeGreaterThan(before);
    const changed = await t.db.query<{ number: string; updated_at: Date }>(
      `SELECT number, updated_at FROM ${t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [integ.id],
    );
    const byKey = new Map(changed.rows.map((r) => [r.number, r.updated_at.getTime()]));
    const all = new Map(emu.data.projects.flatMap((p) => p.issues).map((i) => [i.key, i.updated]));
    for (const key of m.touched) expect(byKey.get(key)).toBe(all.get(key));
    expect(changed.rows.length).toBe(all.size);
  }, 90_000);
});
