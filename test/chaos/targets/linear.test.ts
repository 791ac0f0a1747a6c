/**
 * The Linear chaos target against the engine in-process (real PostgreSQL): incremental runs while
 * the emulator is hostile (faults, edits, archivals and deletions during reads), then a quiet final
 * incremental, leave the normalized store equal to the target's ground truth, and a verify marks
 * exactly the deleted issues (the archived stay live); a row removed or stored at an older version
 * is named by the check.
 */
import { describe, expect, it } from 'vitest';
import { checkDeletions, checkGroundTruth } from '../../../src/chaos/checkTruth.js';
import { LINEAR_CHAOS_SCALE, startLinearTarget } from '../../../src/chaos/targets/linear.js';
import type { ChaosTarget } from '../../../src/chaos/targets/target.js';
import { createLinearProvider } from '../../../src/providers/linear/index.js';
import { useEngineSuite } from '../../helpers/engineSuite.js';

const ORG = 'org-chaos-linear';
/** Hostile runs at most, waiting for faults, edits, an archival and a deletion to have met the reads. */
const MAX_HOSTILE_RUNS = 6;

describe('the Linear chaos target', () => {
  const fx = useEngineSuite<ChaosTarget>({
    orgId: ORG,
    emulator: () => startLinearTarget({ seed: 7, editsPerSecond: 60 }),
    // Small pages: more requests of each read, and more places for faults and changes to meet it.
    provider: createLinearProvider({ pageSize: 20 }),
    concurrency: 3,
  });
  let integrationId = '';

  const incremental = async () => (await fx.run(integrationId, { mode: 'incremental', triggeredBy: 'api' })).status;
  const check = () => checkGroundTruth(fx.db, ORG, integrationId, fx.emu.truth());

  it('after incremental runs under faults and changes, a quiet one leaves the store equal to the truth', async () => {
    const target = fx.emu;
    expect(target.provider).toBe('linear');
    expect(new URL(target.url).hostname).toBe('127.0.0.1');
    integrationId = await fx.integrate(target.integration);

    target.hostile(true);
    const landed = () => {
      const s = target.stats();
      return s.faults! > 0 && s.edits! > 0 && s.archived! > 0 && s.deletions! > 0 && s.commentDeletions! > 0;
    };
    for (let n = 0; n < MAX_HOSTILE_RUNS && (n < 2 || !landed()); n++) await incremental();
    target.hostile(false);
    await target.settled();
    expect(landed(), JSON.stringify(target.stats())).toBe(true);

    const quiet = target.stats();
    expect(await incremental()).toBe('success');
    const after = target.stats();
    expect([after.edits, after.archived, after.deletions, after.commentDeletions, after.faults]).toEqual([
      quiet.edits,
      quiet.archived,
      quiet.deletions,
      quiet.commentDeletions,
      quiet.faults,
    ]);

    const truth = target.truth();
    for (const t of truth) expect(t.rows.size, t.table).toBeGreaterThan(0);
    // Archived issues stay in the truth (the reader lists them); deleted ones leave it.
    const items = truth.find((t) => t.table === 'work_items')!;
    expect(items.rows.size).toBe(LINEAR_CHAOS_SCALE.issues - after.deletions!);
    const result = await check();
    expect(result.examples).toEqual([]);
    expect(result.violations).toBe(0);
    expect(result.ok).toBe(true);

    const verify = await fx.run(integrationId, { mode: 'verify', triggeredBy: 'api' });
    const deletions = await checkDeletions(fx.db, ORG, integrationId, truth, { id: verify.runId, ...verify });
    expect(deletions.examples).toEqual([]);
    expect(deletions.ok).toBe(true);
    // Those stored before they were deleted are marked (one deleted before any read stored it has no
    // row); a comment deleted on an issue still there is among the comments' (unless its issue was
    // deleted after it).
    expect(deletions.checked).toMatch(
      new RegExp(
        `^work_items ${after.deletions!} deleted at the provider, [1-9]\\d* marked, ` +
          'work_item_comments [1-9]\\d* deleted at the provider, [1-9]\\d* marked$',
      ),
    );
  }, 90_000);

  it('names a row missing from the store and a row stored at an older version', async () => {
    expect(integrationId).not.toBe('');
    const { db } = fx;
    const truth = fx.emu.truth();
    const items = truth.find((t) => t.table === 'work_items')!;
    const comments = truth.find((t) => t.table === 'work_item_comments')!;
    const gone = [...items.rows.keys()][0]!;
    const [older, latest] = [...comments.rows.entries()][0]!;

    await db.query(`DELETE FROM ${db.schema.table('work_items')} WHERE integration_id = $1 AND external_id = $2`, [
      integrationId,
      gone,
    ]);
    let result = await check();
    expect(result.ok).toBe(false);
    expect(result.violations).toBe(1);
    expect(result.examples).toEqual([`work_items ${gone}: at the provider, not in the store`]);

    await db.query(
      `UPDATE ${db.schema.table('work_item_comments')} SET updated_at = updated_at - interval '1 second'
        WHERE integration_id = $1 AND external_id = $2`,
      [integrationId, older],
    );
    result = await check();
    expect(result.violations).toBe(2);
    const stale = `work_item_comments ${older} (stored ${new Date(latest! - 1000).toISOString()}, latest `;
    expect(result.examples.some((e) => e.startsWith(stale) && e.endsWith('stored at an older version'))).toBe(true);
  });
});
