/**
 * The Jira chaos target with the engine in-process: incremental runs while the emulator is hostile
 * (faults, edits and deletions during reads), then a final incremental once search has caught up;
 * the store must equal the target's ground truth, a verify must mark exactly the issues deleted,
 * and the check must name a row deleted or set to an older version.
 */
import { describe, expect, it } from 'vitest';
import { checkDeletions, checkGroundTruth } from '../../../src/chaos/checkTruth.js';
import { jiraGroundTruth, startJiraTarget } from '../../../src/chaos/targets/jira.js';
import type { ChaosTarget } from '../../../src/chaos/targets/target.js';
import { startJiraEmulator } from '../../../src/emulators/jira/index.js';
import { createJiraProvider } from '../../../src/providers/jira/index.js';
import { useEngineSuite } from '../../helpers/engineSuite.js';
import { waitFor } from '../../helpers/engine.js';

const ORG = 'org-jira-chaos-target';

describe('Jira chaos target (engine, emulator)', () => {
  const fx = useEngineSuite<ChaosTarget>({
    orgId: ORG,
    emulator: () => startJiraTarget({ seed: 11, editsPerSecond: 8 }),
    provider: createJiraProvider({ retry: { baseDelayMs: 5, maxDelayMs: 20 } }),
    concurrency: 4,
    poolSize: 8,
  });
  let integrationId = '';

  it('after hostile runs and a final incremental, the store equals the ground truth', async () => {
    const target = fx.emu;
    integrationId = await fx.integrate(target.integration);
    target.hostile(true);
    const first = await fx.run(integrationId, { mode: 'incremental', triggeredBy: 'manual' }, 40_000);
    expect(first.status).not.toBe('failed');
    // A second run while the edits go on (they are made as requests come in).
    await waitFor(() => Promise.resolve((target.stats().edits ?? 0) > 0), 10_000);
    await fx.run(integrationId, { mode: 'incremental', triggeredBy: 'manual' }, 40_000);
    target.hostile(false);
    const hostile = target.stats();
    expect(hostile.edits).toBeGreaterThan(0);
    expect(hostile.faults).toBeGreaterThan(0);
    await target.settled();
    const final = await fx.run(integrationId, { mode: 'incremental', triggeredBy: 'manual' }, 40_000);
    expect(final.status).toBe('success');
    const truth = target.truth();
    for (const t of truth) expect(t.rows.size, t.table).toBeGreaterThan(0);
    const result = await checkGroundTruth(fx.db, ORG, integrationId, truth);
    expect(result.examples).toEqual([]);
    expect(result.violations).toBe(0);
    expect(result.ok).toBe(true);

    const verify = await fx.run(integrationId, { mode: 'verify', triggeredBy: 'manual' }, 40_000);
    const deletions = await checkDeletions(fx.db, ORG, integrationId, truth, { id: verify.runId, ...verify });
    expect(deletions.examples).toEqual([]);
    expect(deletions.ok).toBe(true);
    // The hostile phase's end deleted a sprint and a user; comments deleted on live issues are held too.
    expect(deletions.checked).toMatch(/members 1 deleted at the provider, [01] marked/);
    expect(deletions.checked).toMatch(/sprints 1 deleted at the provider, [01] marked/);
    expect(deletions.checked).toMatch(/work_item_comments \d+ deleted at the provider, \d+ marked/);
  }, 90_000);

  it('names a row missing from the store and a row stored at an older version', async () => {
    const { db } = fx;
    const truth = fx.emu.truth();
    const table = (name: string) => db.schema.table(name);
    const { rows } = await db.query<{ external_id: string }>(
      `SELECT external_id FROM ${table('work_item_comments')} WHERE integration_id = $1 ORDER BY external_id LIMIT 1`,
      [integrationId],
    );
    const gone = rows[0]!.external_id;
    await db.query(`DELETE FROM ${table('work_item_comments')} WHERE integration_id = $1 AND external_id = $2`, [
      integrationId,
      gone,
    ]);
    const items = truth.find((t) => t.table === 'work_items')!;
    const [stale] = items.rows.keys();
    await db.query(
      `UPDATE ${table('work_items')} SET updated_at = updated_at - interval '1 minute'
        WHERE integration_id = $1 AND external_id = $2`,
      [integrationId, stale],
    );
    const result = await checkGroundTruth(db, ORG, integrationId, truth);
    expect(result.ok).toBe(false);
    expect(result.violations).toBe(2);
    expect(result.examples).toContainEqual(`work_item_comments ${gone}: at the provider, not in the store`);
    expect(result.examples.some((e) => e.startsWith(`work_items ${stale!} `) && e.includes('older version'))).toBe(
      true,
    );
  });
});

describe('Jira emulator churn (for the chaos target)', () => {
  it('edits move an issue to the clock’s now, search sees them after its lag, the truth at once', async () => {
    const emu = await startJiraEmulator({ seed: 5, scale: { projects: 2, issues: 40 }, searchLagMs: 300 });
    try {
      const before = jiraGroundTruth(emu.data);
      const count = (t: typeof before, table: string) => t.find((x) => x.table === table)!.rows.size;
      const keys = Array.from({ length: 30 }, () => emu.churnEdit());
      const after = jiraGroundTruth(emu.data);
      expect(emu.churnStats().edits).toBe(30);
      expect(emu.searchSettled()).toBe(false);
      const edited = emu.data.projects.flatMap((p) => p.issues).filter((i) => keys.includes(i.key));
      expect(Math.max(...edited.map((i) => i.updated))).toBeGreaterThan(Date.now() - 5_000);
      const grew = ['work_items', 'work_item_comments', 'work_item_events'].some(
        (t) => count(after, t) > count(before, t),
      );
      expect(grew).toBe(true);
      await waitFor(() => Promise.resolve(emu.searchSettled()), 5_000);
    } finally {
      await emu.close();
    }
  });
});
