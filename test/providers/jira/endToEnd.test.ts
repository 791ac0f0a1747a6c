/**
 * The Jira provider in real runs: the engine (in-process broker, worker, reconciler) on real
 * PostgreSQL, the Jira emulator on 127.0.0.1 with its `email:api_token` credential stored
 * encrypted. A backfill writes every record once, the work-item metrics handler runs after it, and
 * an incremental run after changes reads the changed issues.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../../src/broker/inprocess.js';
import { Engine } from '../../../src/engine.js';
import { silentLogger } from '../../../src/logger.js';
import { createJiraProvider } from '../../../src/providers/jira/index.js';
import {
  jiraDemoIntegration,
  JIRA_TABLES,
  startJiraEmulator,
  type JiraEmulator,
} from '../../../src/providers/jira/emulator/index.js';
import { ProviderRegistry } from '../../../src/providers/registry.js';
import { SecretKey } from '../../../src/secrets/key.js';
import { normalizedSink, workItemMetricsHandler } from '../../../src/sinks/normalized/index.js';
import { testSettings, waitFor } from '../../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/pg.js';

const ORG = 'org-jira-e2e';
const DAY = 86_400_000;

describe('Jira end to end (engine, emulator)', () => {
  let t: TestDatabase;
  let engine: Engine;
  let broker: InProcessBroker;
  let emu: JiraEmulator;

  beforeAll(async () => {
    t = await createTestDatabase({ poolSize: 8 });
    broker = new InProcessBroker();
    emu = await startJiraEmulator({ seed: 31, scale: { projects: 2, issues: 90, longLists: 2, days: 12 } });
    const registry = new ProviderRegistry().register(
      createJiraProvider({ postSyncHandlers: [workItemMetricsHandler], retry: { baseDelayMs: 5, maxDelayMs: 20 } }),
      normalizedSink(t.db),
    );
    engine = await Engine.open({
      settings: testSettings({ secretKey: SecretKey.generate() }),
      db: t.db,
      broker,
      registry,
      logger: silentLogger(),
      migrate: false,
    });
    engine.startWorker({ concurrency: 4 });
    await engine.startReconciler({ scheduler: false });
  }, 60_000);

  afterAll(async () => {
    await engine?.close();
    await broker?.close();
    await emu?.close();
    await t?.drop();
  });

  async function finished(runId: string): Promise<string> {
    return waitFor(
      async () => {
        const { rows } = await t.db.query<{ status: string }>(
          `SELECT status FROM ${t.db.schema.table('sync_runs')} WHERE id = $1`,
          [runId],
        );
        const s = rows[0]?.status;
        return s === 'success' || s === 'failed' || s === 'partial' || s === 'cancelled' ? s : null;
      },
      60_000,
      100,
    );
  }

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
    expect(await finished(syncRunId)).toBe('success');
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
    expect(await finished(inc.syncRunId)).toBe('success');
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
