/**
 * `syncrelay chaos --provider X` in CI, one bounded run per provider: real engine processes under
 * the engine's faults (workers killed and frozen, reconcilers killed, publishes failing, messages
 * delivered twice) while the provider's emulator answers with its own faults and edits and deletes
 * its data under the readers; then a final incremental and a final verify on the quiet emulator and
 * every invariant PASS, the ground truth among them: the store equals the emulator's records after
 * the incremental, and after the verify the items deleted at the emulator, only they, are marked.
 */
import { describe, expect, it } from 'vitest';
import type { ChaosReport } from '../../src/chaos/report.js';
import { CHAOS_PROVIDERS, type ChaosProvider } from '../../src/chaos/targets/target.js';
import { passingChaos } from './passingChaos.js';
import { PG_BASE, REDIS_URL } from '../helpers/pg.js';

const SEED = 20_261_206;
const FAULTS = 'worker-kill,reconciler-kill,publish-fail,worker-freeze,duplicate-delivery,pg-terminate';

async function chaos(provider: ChaosProvider, seed: number): Promise<ChaosReport> {
  const args = [
    'chaos',
    ...['--provider', provider, '--edits-per-second', '3', '--faults', FAULTS],
    ...['--runs', '8', '--duration', '20', '--workers', '2', '--reconcilers', '2', '--concurrency', '4'],
    // A provider's limit responses defer units past the engine's own recovery (docs/reliability.md).
    ...['--slack', '60'],
    ...['--seed', String(seed), '--json'],
  ];
  const env = { DATABASE_URL: `${PG_BASE}/postgres`, REDIS_URL };
  return passingChaos(
    args,
    { env, timeoutMs: 280_000 },
    (report) =>
      `faults: ${JSON.stringify(report?.faults.events ?? [])}\nprovider: ${JSON.stringify(report?.provider ?? null)}`,
  );
}

describe('syncrelay chaos --provider (bounded)', () => {
  for (const [i, provider] of CHAOS_PROVIDERS.entries()) {
    it(
      `${provider}: every invariant, the ground truth among them, under engine and provider faults`,
      {
        timeout: 300_000,
      },
      async () => {
        const r = await chaos(provider, SEED + i);

        expect(r.provider?.name).toBe(provider);
        expect(r.provider?.finalRun?.status).toBe('success');
        expect(r.provider?.finalVerify?.status).toBe('success');
        for (const id of ['store_equals_ground_truth', 'deletions_equal_ground_truth']) {
          const truth = r.invariants.find((x) => x.id === id);
          expect(truth?.ok, JSON.stringify(truth)).toBe(true);
        }
        expect(r.invariants.every((x) => x.ok)).toBe(true);
        // The run really met trouble: engine faults, and the emulator's own faults and edits.
        expect(Object.values(r.faults.injected).reduce((a, b) => a + (b ?? 0), 0)).toBeGreaterThan(0);
        expect(r.provider!.stats.edits ?? 0).toBeGreaterThan(0);
        const deletions = r.provider!.stats.deletions ?? 0;
        expect(deletions, 'the emulator deleted items under the readers').toBeGreaterThan(0);
        expect(r.runs.total).toBe(10); // 8 planned, the final incremental and the final verify
        console.info(`chaos --provider ${provider}: ${JSON.stringify({ runs: r.runs, provider: r.provider })}`);
      },
    );
  }
});
