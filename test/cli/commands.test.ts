/**
 * The one-shot commands against a cloned PostgreSQL database and a Redis queue of their own:
 * create → trigger → reconcile --once → runs show, bad input that writes nothing, and a worker
 * plus a reconciler process that finish a run and stop on SIGTERM.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { deleteRedisKeys } from '../helpers/redis.js';
import { parseJson, runCli, startCli, until } from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TABLES = [
  'integrations',
  'integration_sources',
  'integration_datasets',
  'sync_runs',
  'sync_run_units',
  'job_runs',
  'sync_dispatch_outbox',
];

let t: TestDatabase;
let prefix: string;
let env: Record<string, string>;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
  prefix = uniquePrefix('cli');
  env = { DATABASE_URL: t.url, REDIS_URL, SYNCRELAY_QUEUE_PREFIX: prefix, SYNC_RECONCILE_INTERVAL_SECONDS: '1' };
});

afterAll(async () => {
  await t?.drop();
  if (prefix) await deleteRedisKeys(`${prefix}:*`);
});

async function counts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of TABLES) {
    const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.db.schema.table(table)}`);
    out[table] = rows[0]!.n;
  }
  return out;
}

async function createIntegration(org: string, extra: string[] = []): Promise<{ id: string; org_id: string }> {
  const r = await runCli(
    [
      'integrations',
      'create',
      '--org',
      org,
      '--provider',
      'synthetic',
      '--name',
      `${org} linear`,
      '--sources',
      's1,s2',
      '--datasets',
      'teams,work-items',
      '--config',
      '{"itemsPerDay":1,"latencyMs":1}',
      '--json',
      ...extra,
    ],
    { env },
  );
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return parseJson(r.stdout);
}

describe('migrate', () => {
  it('reports an up-to-date schema', async () => {
    const r = await runCli(['migrate', '--json'], { env });
    expect(r.code).toBe(0);
    const out = parseJson<{ applied: string[]; version: number }>(r.stdout);
    expect(out.applied).toEqual([]);
    expect(out.version).toBeGreaterThanOrEqual(1);
  });
});

describe('create → trigger → reconcile --once → runs show', () => {
  it('prints ids and counts that match the tables', async () => {
    const integ = await createIntegration('acme');
    expect(integ.id).toMatch(UUID);
    expect(integ.org_id).toBe('acme');
    const { rows: ir } = await t.db.query<{ name: string }>('SELECT name FROM syncrelay.integrations WHERE id = $1', [
      integ.id,
    ]);
    expect(ir[0]!.name).toBe('acme linear');

    const listed = await runCli(['integrations', 'list', '--org', 'acme', '--json'], { env });
    const list = parseJson<{ id: string; sources: string[]; datasets: string[] }[]>(listed.stdout);
    expect(list.map((i) => i.id)).toEqual([integ.id]);
    expect(list[0]!.sources).toEqual(['s1', 's2']);

    // No --org: the integration's own org is used.
    const trig = await runCli(
      [
        'trigger',
        '--integration',
        integ.id,
        '--mode',
        'backfill',
        '--since',
        '2026-01-01T00:00:00Z',
        '--before',
        '2026-01-15T00:00:00Z',
        '--json',
      ],
      { env },
    );
    expect(trig.stderr).toBe('');
    expect(trig.code).toBe(0);
    const ids = parseJson<{ job_run_id: string; sync_run_id: string; units: number }>(trig.stdout);
    expect(ids.job_run_id).toMatch(UUID);
    expect(ids.sync_run_id).toMatch(UUID);
    // 1 reference unit (teams) + 2 sources × work-items × two 7-day windows
    expect(ids.units).toBe(5);
    const { rows: jr } = await t.db.query<{ id: string; org_id: string; status: string; sync_run_id: string }>(
      "SELECT id, org_id, status, result ->> 'sync_run_id' AS sync_run_id FROM syncrelay.job_runs WHERE id = $1",
      [ids.job_run_id],
    );
    expect(jr[0]).toMatchObject({ org_id: 'acme', status: 'pending', sync_run_id: ids.sync_run_id });

    const rec = await runCli(['reconcile', '--once', '--json'], { env });
    expect(rec.code).toBe(0);
    const counters = parseJson<Record<string, number>>(rec.stdout);
    expect(counters.relayed_dispatch).toBe(1);
    expect(counters.publish_failures).toBe(0);
    const { rows: ob } = await t.db.query<{ status: string }>(
      "SELECT status FROM syncrelay.sync_dispatch_outbox WHERE sync_run_id = $1 AND kind = 'dispatch_sync_run'",
      [ids.sync_run_id],
    );
    expect(ob[0]!.status).toBe('dispatched');

    const show = await runCli(['runs', 'show', ids.sync_run_id, '--json'], { env });
    expect(show.code).toBe(0);
    const view = parseJson<{
      run: { id: string; status: string; org_id: string };
      units: Record<string, number>;
      job_run: { id: string };
    }>(show.stdout);
    expect(view.run).toMatchObject({ id: ids.sync_run_id, status: 'planned', org_id: 'acme' });
    expect(view.units).toEqual({ planned: 5 });
    expect(view.job_run.id).toBe(ids.job_run_id);

    const text = await runCli(['runs', 'show', ids.sync_run_id], { env });
    expect(text.stdout).toMatch(/status\s+planned/);

    const runs = await runCli(['runs', 'list', '--org', 'acme', '--json'], { env });
    expect(parseJson<{ id: string }[]>(runs.stdout).map((r) => r.id)).toEqual([ids.sync_run_id]);

    // Nobody works on it: --wait runs out with its own exit status and one line.
    const wait = await runCli(['runs', 'show', ids.sync_run_id, '--wait', '0.5'], { env });
    expect(wait.code).toBe(3);
    expect(wait.stderr.trim()).toMatch(/^syncrelay: run \S+ is still planned after 0.5 s$/);

    // A second trigger of the same mode conflicts unless forced.
    const again = await runCli(
      ['trigger', '--integration', integ.id, '--mode', 'backfill', '--since', '2026-01-01', '--before', '2026-01-15'],
      { env },
    );
    expect(again.code).not.toBe(0);
    expect(again.stderr.trim()).toBe(
      `syncrelay: a backfill run is already in progress: ${ids.sync_run_id} (wait for it, cancel it, or add --force)`,
    );

    const cancel = await runCli(['cancel', ids.sync_run_id, '--json'], { env });
    expect(parseJson(cancel.stdout)).toEqual({
      sync_run_id: ids.sync_run_id,
      outcome: 'cancelled',
      status: 'cancelled',
    });
    const done = await runCli(['runs', 'show', ids.sync_run_id, '--wait', '5', '--json'], { env });
    expect(done.code).toBe(0);
    expect(parseJson<{ units: Record<string, number> }>(done.stdout).units).toEqual({ cancelled: 5 });
  }, 120_000); // eleven CLI processes, each starting node and tsx: slow on a loaded machine
});

describe('bad input exits non-zero with one line and writes nothing', () => {
  let integId: string;
  beforeAll(async () => {
    integId = (await createIntegration('bad-input')).id;
  });

  const base = ['--org', 'x', '--provider', 'synthetic', '--name', 'n', '--sources', 's1'];
  const cases: [string, () => string[], RegExp][] = [
    [
      'unknown dataset',
      () => ['integrations', 'create', ...base, '--datasets', 'work-items,nope'],
      /^syncrelay: datasets: unknown dataset "nope" for synthetic$/,
    ],
    [
      'bad --config JSON',
      () => ['integrations', 'create', ...base, '--datasets', 'teams', '--config', '{"itemsPerDay": 5'],
      /^syncrelay: option '--config <json>' argument .* is invalid\. Not valid JSON/,
    ],
    [
      '--config not an object',
      () => ['integrations', 'create', ...base, '--datasets', 'teams', '--config', '[1]'],
      /Expected a JSON object/,
    ],
    [
      'unknown config key',
      () => ['integrations', 'create', ...base, '--datasets', 'teams', '--config', '{"speed":1}'],
      /^syncrelay: config\.speed: unknown setting/,
    ],
    [
      'unknown provider',
      () => [
        'integrations',
        'create',
        '--org',
        'x',
        '--provider',
        'asana',
        '--name',
        'n',
        '--sources',
        's',
        '--datasets',
        'teams',
      ],
      /^syncrelay: provider: unknown provider "asana"/,
    ],
    [
      'since ≥ before',
      () => [
        'trigger',
        '--integration',
        integId,
        '--mode',
        'backfill',
        '--since',
        '2026-02-01',
        '--before',
        '2026-01-01',
      ],
      /^syncrelay: since: must be earlier than before$/,
    ],
    [
      'backfill without a window',
      () => ['trigger', '--integration', integId, '--mode', 'backfill'],
      /^syncrelay: since: is required for a backfill/,
    ],
    [
      'unknown mode',
      () => ['trigger', '--integration', integId, '--mode', 'sideways'],
      new RegExp(
        "^syncrelay: option '--mode <mode>' argument 'sideways' is invalid\\. " +
          'Allowed choices are incremental, backfill, full_resync, verify\\.$',
      ),
    ],
    [
      'verify of a provider that verifies none of its datasets',
      () => ['trigger', '--integration', integId, '--mode', 'verify'],
      /^syncrelay: mode: provider "synthetic" cannot verify any enabled dataset of this integration/,
    ],
    [
      'dataset not enabled',
      () => ['trigger', '--integration', integId, '--mode', 'full_resync', '--datasets', 'members'],
      /^syncrelay: datasets: dataset "members" is not enabled on this integration$/,
    ],
    [
      'bad time',
      () => [
        'trigger',
        '--integration',
        integId,
        '--mode',
        'backfill',
        '--since',
        'yesterday',
        '--before',
        '2026-01-01',
      ],
      /--since <iso>.*Expected an ISO 8601 time/,
    ],
    [
      'unknown integration',
      () => ['trigger', '--integration', '00000000-0000-4000-8000-000000000000', '--mode', 'incremental'],
      /^syncrelay: integration 00000000-0000-4000-8000-000000000000 not found$/,
    ],
    [
      'integration of another org',
      () => ['trigger', '--integration', integId, '--mode', 'incremental', '--org', 'someone-else'],
      /^syncrelay: integration \S+ not found$/,
    ],
    [
      'unknown run',
      () => ['cancel', '00000000-0000-4000-8000-000000000000'],
      /^syncrelay: sync run 00000000-0000-4000-8000-000000000000 not found$/,
    ],
  ];

  it.each(cases)('%s', async (_, args, reason) => {
    const before = await counts();
    const r = await runCli(args(), { env });
    expect(r.code).not.toBe(0);
    const lines = r.stderr.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(reason);
    expect(r.stdout).toBe('');
    expect(await counts()).toEqual(before);
  });
});

describe('worker and reconciler processes', () => {
  it('finish a run and stop with exit 0 on SIGTERM', async () => {
    const integ = await createIntegration('procs');
    const worker = startCli(['worker', '--concurrency', '2'], { env });
    const reconciler = startCli(['reconciler', '--id', 'cli-test'], { env });
    try {
      await until(
        () => worker.stderr().includes('"worker started"') && reconciler.stderr().includes('"reconciler started"'),
        30_000,
        'services started',
      );
      const trig = await runCli(['trigger', '--integration', integ.id, '--mode', 'full_resync', '--json'], { env });
      const { sync_run_id: runId } = parseJson<{ sync_run_id: string }>(trig.stdout);
      const shown = await runCli(['runs', 'show', runId, '--wait', '30', '--json'], { env, timeoutMs: 40_000 });
      expect(shown.code).toBe(0);
      const view = parseJson<{
        run: { status: string; total_units: number };
        units: Record<string, number>;
        job_run: { status: string };
      }>(shown.stdout);
      expect(view.run.status).toBe('success');
      // teams + 2 sources × work-items (one full_resync window each)
      expect(view.units).toEqual({ success: 3 });
      expect(view.job_run.status).toBe('success');
    } finally {
      worker.child.kill('SIGTERM');
      reconciler.child.kill('SIGTERM');
    }
    const [w, r] = await Promise.all([worker.exited, reconciler.exited]);
    expect(w.code).toBe(0);
    expect(r.code).toBe(0);
    expect(w.stderr).toContain('"worker stopped"');
    expect(r.stderr).toContain('"reconciler stopped"');
    const { rows } = await t.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM syncrelay.reconciler_passes WHERE reconciler = 'cli-test'",
    );
    expect(rows[0]!.n).toBeGreaterThan(0);
  });
});
