/**
 * The Linear provider in real runs (in-process engine, worker and reconciler on real PostgreSQL)
 * against the emulator: a backfill of every dataset stores each emulated record once in the
 * normalized tables, and an incremental run after changes reads them on without a gap or a
 * duplicate. The work-item-metrics handler runs over the result.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../../src/engine.js';
import { createLinearProvider, LINEAR_DATASETS } from '../../../src/providers/linear/index.js';
import { linearIntegrationFor, startLinearEmulator, type LinearEmulator } from '../../../src/emulators/linear/index.js';
import { workItemMetricsHandler } from '../../../src/sinks/normalized/index.js';
import { openProviderEngine, runTerminal, type TestEngine } from '../../helpers/engine.js';
import type { TestDatabase } from '../../helpers/pg.js';

const ORG = 'org-ln-e2e';
const DAY = 86_400_000;

describe('Linear in real runs', () => {
  let h: TestEngine;
  let t: TestDatabase;
  let engine: Engine;
  let emu: LinearEmulator;
  const started = Date.now();

  beforeAll(async () => {
    emu = await startLinearEmulator({ seed: 5, scale: { teams: 2, issues: 150, days: 20 } });
    h = await openProviderEngine({
      provider: createLinearProvider({ postSyncHandlers: [workItemMetricsHandler], pageSize: 25 }),
      concurrency: 3,
    });
    ({ t, engine } = h);
  });
  afterAll(async () => {
    await h?.close();
    await emu?.close();
  });

  async function stored(id: string, surface: string): Promise<{ keys: number; rows: number }> {
    const { rows } = await t.db.query<{ keys: number; n: number }>(
      `SELECT count(DISTINCT external_id)::int AS keys, count(*)::int AS n
         FROM ${t.db.schema.table(surface)} WHERE integration_id = $1`,
      [id],
    );
    return { keys: rows[0]!.keys, rows: rows[0]!.n };
  }

  function expected() {
    const d = emu.data;
    const events = d.issues.reduce(
      (n, i) =>
        n +
        i.history.reduce(
          (m, h) =>
            m +
            (h.toStateId ? 1 : 0) +
            (h.toAssigneeId !== undefined ? 1 : 0) +
            (h.addedLabelIds?.length ?? 0) +
            (h.removedLabelIds?.length ?? 0),
          0,
        ),
      0,
    );
    return {
      work_items: d.issues.length,
      work_item_comments: d.issues.reduce((n, i) => n + i.comments.length, 0),
      work_item_events: events,
      teams: d.teams.length,
      members: d.users.length,
      projects: d.projects.length,
      sprints: d.cycles.length,
    };
  }

  async function expectStoredEqualsEmulator(id: string): Promise<void> {
    for (const [surface, n] of Object.entries(expected())) {
      const got = await stored(id, surface);
      expect(got, surface).toEqual({ keys: n, rows: n });
    }
  }

  it('backfills every dataset, then an incremental run after changes reads them on', async () => {
    const setup = linearIntegrationFor(emu);
    expect([...setup.datasets].sort()).toEqual(LINEAR_DATASETS.map((d) => d.key).sort());
    const integ = await engine.createIntegration({ orgId: ORG, name: 'acme-linear', ...setup });
    const since = new Date(Math.floor((started - 22 * DAY) / DAY) * DAY);
    const backfill = await engine.trigger({
      orgId: ORG,
      integrationId: integ.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since,
      before: new Date(Date.now() + 60_000),
    });
    expect(await runTerminal(t.db, backfill.syncRunId)).toBe('success');
    await expectStoredEqualsEmulator(integ.id);

    const m = emu.mutate();
    expect(m.updated.length + m.created.length).toBeGreaterThan(0);
    const inc = await engine.trigger({ orgId: ORG, integrationId: integ.id, mode: 'incremental', triggeredBy: 'api' });
    expect(await runTerminal(t.db, inc.syncRunId)).toBe('success');
    await expectStoredEqualsEmulator(integ.id);
    // The changed issues' rows carry their new state.
    const { rows: changed } = await t.db.query<{ external_id: string; updated_at: Date }>(
      `SELECT external_id, updated_at FROM ${t.db.schema.table('work_items')}
        WHERE integration_id = $1 AND external_id = ANY($2::text[])`,
      [integ.id, m.updated],
    );
    expect(changed).toHaveLength(m.updated.length);
    for (const r of changed) expect(r.updated_at.getTime()).toBe(emu.data.issueById.get(r.external_id)!.updatedAt);
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${t.db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1`,
      [integ.id],
    );
    expect(rows[0]!.n).toBeGreaterThan(0);
  });
});
