/**
 * The GitHub chaos target in real runs: the engine (in-process broker, worker, reconciler) on
 * PostgreSQL reads the target's integration while the emulator is hostile (limit responses, 5xx,
 * slow answers, issues edited and deleted while lists are read); after a quiet final incremental
 * the normalized store equals the target's ground truth, after a verify exactly the deleted issues
 * are marked, and a store missing a row, or holding one at an older version, fails the check naming it.
 */
import { describe, expect, it } from 'vitest';
import { checkDeletions, checkGroundTruth } from '../../../src/chaos/checkTruth.js';
import { startGithubTarget } from '../../../src/chaos/targets/github.js';
import type { ChaosTarget, GroundTruth } from '../../../src/chaos/targets/target.js';
import type { Db } from '../../../src/db/types.js';
import { createGithubProvider } from '../../../src/providers/github/index.js';
import { useEngineSuite } from '../../helpers/engineSuite.js';

const ORG = 'org-chaos-github';
const RUN_MS = 45_000;

describe('GitHub chaos target (engine, emulator)', () => {
  const fx = useEngineSuite<ChaosTarget>({
    orgId: ORG,
    emulator: () => startGithubTarget({ seed: 23, editsPerSecond: 20 }),
    provider: createGithubProvider({ retry: { baseDelayMs: 5, maxDelayMs: 20 } }),
    concurrency: 4,
    poolSize: 8,
  });
  let integrationId = '';
  let truth: GroundTruth = [];

  const incremental = () => fx.run(integrationId, { mode: 'incremental', triggeredBy: 'manual' }, RUN_MS);

  it('hostile runs, then a quiet final incremental: the store equals the ground truth', async () => {
    const target = fx.emu;
    integrationId = await fx.integrate(target.integration);
    target.hostile(true);
    // Runs under faults may end in any terminal state: the final one must recover what they missed.
    for (let i = 0; i < 2; i++) expect(['success', 'partial', 'failed']).toContain((await incremental()).status);
    target.hostile(false);
    const during = target.stats();
    await target.settled();
    expect((await incremental()).status).toBe('success');

    expect(during.edits).toBeGreaterThan(0);
    expect(during.deletions).toBeGreaterThan(0);
    expect(during.faults).toBeGreaterThan(0);
    truth = target.truth();
    expect(truth.map((t) => t.table).sort()).toEqual(
      [
        'commits',
        'members',
        'pull_request_reviews',
        'pull_requests',
        'repositories',
        'work_item_comments',
        'work_item_events',
        'work_items',
      ].sort(),
    );
    for (const t of truth) expect(t.rows.size, t.table).toBeGreaterThan(0);
    const result = await checkGroundTruth(fx.db, ORG, integrationId, truth);
    expect(result.examples).toEqual([]);
    expect(result).toMatchObject({ ok: true, violations: 0 });

    const verify = await fx.run(integrationId, { mode: 'verify', triggeredBy: 'manual' }, RUN_MS);
    const deletions = await checkDeletions(fx.db, ORG, integrationId, truth, { id: verify.runId, ...verify });
    expect(deletions.examples).toEqual([]);
    expect(deletions.ok).toBe(true);
    // Comments deleted on issues still there are held to it too.
    // The hostile phase's end deleted a comment on a live issue and a member's account, both stored.
    expect(deletions.checked).toMatch(/work_item_comments [1-9]\d* deleted at the provider, [1-9]\d* marked/);
    expect(deletions.checked).toMatch(/members [1-9]\d* deleted at the provider, [1-9]\d* marked/);
  }, 120_000);

  it('a row missing from the store, or stored at an older version, fails the check naming it', async () => {
    expect(integrationId).not.toBe('');
    const before = await checkGroundTruth(fx.db, ORG, integrationId, truth);
    const [missing = '', stale = ''] = [...truth.find((t) => t.table === 'work_items')!.rows.keys()];
    await deleteRow(fx.db, 'work_items', integrationId, missing);
    await fx.db.query(
      `UPDATE ${fx.db.schema.table('work_items')} SET updated_at = updated_at - interval '1 hour'
        WHERE integration_id = $1 AND external_id = $2`,
      [integrationId, stale],
    );
    const after = await checkGroundTruth(fx.db, ORG, integrationId, truth);
    expect(after).toMatchObject({ ok: false, violations: before.violations + 2 });
    expect(after.examples).toContain(`work_items ${missing}: at the provider, not in the store`);
    const staleLine = new RegExp(
      `^work_items ${escape(stale)} \\(stored .+, latest .+\\): stored at an older version$`,
    );
    expect(after.examples.filter((e) => staleLine.test(e))).toHaveLength(1);

    // A live issue marked deleted fails both checks; a deleted one stored without the mark, the second.
    const [, , live = ''] = [...truth.find((t) => t.table === 'work_items')!.rows.keys()];
    await setDeleted(fx.db, integrationId, live, true);
    const deleted = await storedOneOf(fx.db, integrationId, [...truth.find((t) => t.table === 'work_items')!.deleted!]);
    await setDeleted(fx.db, integrationId, deleted, false);
    expect((await checkGroundTruth(fx.db, ORG, integrationId, truth)).examples).toContain(
      `work_items ${live}: at the provider, marked deleted in the store`,
    );
    const marks = await checkDeletions(fx.db, ORG, integrationId, truth, { id: 'r', status: 'success' });
    expect(marks.examples.sort()).toEqual(
      [
        `work_items ${live}: at the provider, marked deleted`,
        `work_items ${deleted}: deleted at the provider, not marked deleted`,
      ].sort(),
    );
  });
});

/** One of `ids` the store holds as a work item (the hostile runs stored issues deleted later). */
async function storedOneOf(db: Db, integrationId: string, ids: string[]): Promise<string> {
  const { rows } = await db.query<{ external_id: string }>(
    `SELECT external_id FROM ${db.schema.table('work_items')}
      WHERE integration_id = $1 AND external_id = ANY($2::text[]) ORDER BY external_id LIMIT 1`,
    [integrationId, ids],
  );
  expect(rows, 'an issue stored, then deleted at the provider').toHaveLength(1);
  return rows[0]!.external_id;
}

/** Sets or clears the work item's deleted_at (the row must exist). */
async function setDeleted(db: Db, integrationId: string, externalId: string, deleted: boolean): Promise<void> {
  const { rowCount } = await db.query(
    `UPDATE ${db.schema.table('work_items')} SET deleted_at = CASE WHEN $3 THEN now() END
      WHERE integration_id = $1 AND external_id = $2`,
    [integrationId, externalId, deleted],
  );
  expect(rowCount, externalId).toBe(1);
}

async function deleteRow(db: Db, table: string, integrationId: string, externalId: string): Promise<void> {
  const { rowCount } = await db.query(
    `DELETE FROM ${db.schema.table(table)} WHERE integration_id = $1 AND external_id = $2`,
    [integrationId, externalId],
  );
  expect(rowCount).toBe(1);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
