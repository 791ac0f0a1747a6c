/**
 * The normalized sink's hooks: several providers' hooks on one surface run in the order given, in
 * the write's transaction, around the upserts; a hook on a name that is not a surface is refused;
 * the registry hands a provider's own hooks to the sink it is registered with.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { migrate } from '../../src/db/migrator.js';
import { PgliteDb } from '../../src/db/pglite.js';
import type { Tx } from '../../src/db/types.js';
import { ValidationError } from '../../src/errors.js';
import type { SurfaceHookMap } from '../../src/sdk/normalized.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Provider } from '../../src/sdk/types.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { insertIntegration, insertRunningUnit, testGuard } from './normalizedHelpers.js';

const ORG = 'org-hooks';
const T0 = Date.UTC(2026, 0, 10, 12);

describe('normalized sink hooks', () => {
  let db: PgliteDb;
  let integrationId: string;
  let unitId: string;
  const clock = new ManualClock(T0);

  beforeAll(async () => {
    db = await PgliteDb.open();
    await migrate(db);
    integrationId = await insertIntegration(db, ORG);
    unitId = await insertRunningUnit(db, ORG, integrationId, 'owner-a', new Date(T0 + 3_600_000));
  });
  afterAll(async () => {
    await db.close();
  });

  /** Hooks on work_items that log, as `name.when=<stored rows>`, what each saw. */
  function logging(name: string, log: string[]): SurfaceHookMap {
    const stored = async (tx: Tx) => {
      const { rows } = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${tx.schema.table('work_items')}`);
      return rows[0]!.n;
    };
    return {
      work_items: {
        before: async (tx, batch) => void log.push(`${name}.before=${await stored(tx)}/${batch.length}`),
        after: async (tx, batch) => void log.push(`${name}.after=${await stored(tx)}/${batch.length}`),
      },
    };
  }

  it("runs each provider's hooks in order: every before, the upserts, every after", async () => {
    const log: string[] = [];
    const sink = normalizedSink(db, { hooks: [logging('a', log), logging('b', log)] });
    const row = { org_id: ORG, integration_id: integrationId, provider: 'github', last_synced_at: clock.now() };
    await sink.write(testGuard(db, unitId, 'owner-a', clock), 'work_items', [
      { ...row, external_id: '1' },
      { ...row, external_id: '2' },
    ]);
    expect(log).toEqual(['a.before=0/2', 'b.before=0/2', 'a.after=2/2', 'b.after=2/2']);
  });

  it('refuses a hook on a name that is not a normalized surface', () => {
    const err = (() => {
      try {
        return normalizedSink(db, { hooks: [{ work_itemz: {} }] });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe('hooks.work_itemz');
  });

  it('registering a provider hands its hooks to its sink, once however often they are handed', async () => {
    const log: string[] = [];
    const hooks = logging('p', log);
    const provider = (name: string): Provider => ({
      name,
      datasets: [],
      surfaceHooks: hooks,
      runUnit: async () => ({}),
    });
    const sink = normalizedSink(db);
    new ProviderRegistry().register(provider('one'), sink).register(provider('two'), sink);
    const row = { org_id: ORG, integration_id: integrationId, provider: 'github', last_synced_at: clock.now() };
    await sink.write(testGuard(db, unitId, 'owner-a', clock), 'work_items', [{ ...row, external_id: '3' }]);
    expect(log.map((l) => l.split('=')[0])).toEqual(['p.before', 'p.after']);
  });
});
