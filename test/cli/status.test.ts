/**
 * `syncrelay status` (the real command as a child process, on a cloned PostgreSQL database whose
 * sources were synced by real synthetic runs): a table worst first with every line that is not
 * fresh marked; `--json` prints the API's answer (an array without --integration); `--org` narrows;
 * an unknown integration exits non-zero with one line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpoints } from '../../src/api/contracts/endpoints.js';
import { readIntegrationFreshness } from '../../src/api/routes/freshness.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { getIntegration } from '../../src/store/integrations.js';
import { testSettings } from '../helpers/engine.js';
import { seedFreshnessStates, type FreshnessSeed } from '../helpers/freshness.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { parseJson, runCli } from './helpers.js';

const ORG = 'org-status';
let t: TestDatabase;
let engine: Engine;
let env: Record<string, string>;
let seed: FreshnessSeed;
let other: string;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 4 });
  engine = await Engine.open({
    settings: testSettings(),
    db: t.db,
    broker: new InProcessBroker(),
    logger: silentLogger(),
    migrate: false,
  });
  engine.startWorker({ concurrency: 2 });
  await engine.startReconciler({ scheduler: false });
  seed = await seedFreshnessStates(engine, ORG);
  other = (
    await engine.createIntegration({
      orgId: 'org-status-other',
      provider: 'synthetic',
      name: 'Other org',
      sources: ['x'],
      datasets: ['work-items'],
    })
  ).id;
  env = { DATABASE_URL: t.url, REDIS_URL, SYNCRELAY_QUEUE_PREFIX: uniquePrefix('cli-status') };
}, 60_000);
afterAll(async () => {
  await engine?.close();
  await t?.drop();
});

describe('syncrelay status', () => {
  it('prints one line per source × dataset, worst first, the ones not fresh marked', async () => {
    const r = await runCli(['status', '--integration', seed.integrationId], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(
      `Acme synthetic (${seed.integrationId}, synthetic): 1 failing · 1 deferred_by_budget · 1 never_synced · ` +
        '1 fresh; fresh within 24 h 00 min (SYNC_FRESHNESS_MAX_LAG_SECONDS)',
    );
    const header = lines.findIndex((l) => /^\s+integration\s+source\s+dataset\s+state\s+lag/.test(l));
    expect(header).toBeGreaterThan(0);
    const rows = lines.slice(header + 1).filter(Boolean);
    expect(rows.map((l) => l.split(/\s{2,}/).slice(0, 5))).toEqual([
      ['!', 'Acme synthetic', 's-failing', 'work-items', 'failing'],
      ['!', 'Acme synthetic', 's-deferred', 'work-items', 'deferred_by_budget'],
      ['!', 'Acme synthetic', 's-never', 'work-items', 'never_synced'],
      ['', 'Acme synthetic', 's-fresh', 'work-items', 'fresh'],
    ]);
    expect(rows[0]).toContain(`provider_error in run ${seed.runs.failing}`);
    expect(rows[1]).toMatch(/rate limit until \d{4}-\d\d-\d\dT[\d:.]+Z$/);
    expect(rows[3]).toMatch(/\s\d+ s\s+\d{4}-/);
  });

  it("prints the API's answer with --json", async () => {
    const r = await runCli(['status', '--integration', seed.integrationId, '--json'], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = parseJson<Record<string, unknown> & { items: Record<string, unknown>[] }>(r.stdout);
    expect(endpoints.getIntegrationFreshness.success.schema.safeParse(out).success).toBe(true);
    const row = (await getIntegration(t.db, seed.integrationId))!;
    const direct = JSON.parse(JSON.stringify(await readIntegrationFreshness(engine.ctx, row))) as typeof out;
    const stable = (o: typeof out) => ({
      ...o,
      as_of: undefined,
      items: o.items.map((i) => ({ ...i, lag_ms: undefined })),
    });
    expect(stable(out)).toEqual(stable(direct));
  });

  it('reports every integration without --integration, those of one org with --org', async () => {
    const all = await runCli(['status', '--json'], { env });
    expect(all.code).toBe(0);
    const ids = parseJson<{ integration_id: string }[]>(all.stdout).map((r) => r.integration_id);
    expect(ids.sort()).toEqual([seed.integrationId, other].sort());
    const one = await runCli(['status', '--org', 'org-status-other'], { env });
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/^Other org \(.*\): 1 never_synced;/);
    expect(one.stdout).not.toContain('Acme synthetic');
  });

  it('exits non-zero with one line for an unknown integration', async () => {
    const r = await runCli(['status', '--integration', '00000000-0000-4000-8000-000000000000'], { env });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toBe('syncrelay: no integration 00000000-0000-4000-8000-000000000000');
  });
});
