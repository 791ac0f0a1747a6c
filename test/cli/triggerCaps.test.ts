/**
 * `syncrelay trigger` refused by the caps: one line on stderr naming the count, the cap and the
 * flags that narrow the request, a non-zero exit, and nothing written.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { deleteRedisKeys } from '../helpers/redis.js';
import { parseJson, runCli } from './helpers.js';

let t: TestDatabase;
let prefix: string;
let env: Record<string, string>;
let integration: string;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
  prefix = uniquePrefix('cli-caps');
  env = {
    DATABASE_URL: t.url,
    REDIS_URL,
    SYNCRELAY_QUEUE_PREFIX: prefix,
    SYNC_RUN_MAX_UNITS: '5',
    SYNC_INTEGRATION_MAX_LIVE_RUNS: '1',
  };
  const r = await runCli(
    [
      'integrations',
      'create',
      '--org',
      'caps',
      '--provider',
      'synthetic',
      '--name',
      'caps',
      '--sources',
      's1,s2',
      '--datasets',
      'teams,work-items',
      '--json',
    ],
    { env },
  );
  expect(r.code, r.stderr).toBe(0);
  integration = parseJson<{ id: string }>(r.stdout).id;
});

afterAll(async () => {
  await t?.drop();
  if (prefix) await deleteRedisKeys(`${prefix}:*`);
});

async function written(): Promise<number[]> {
  const s = t.db.schema;
  const { rows } = await t.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${s.job_runs}
     UNION ALL SELECT count(*)::int FROM ${s.sync_runs}
     UNION ALL SELECT count(*)::int FROM ${s.sync_run_units}
     UNION ALL SELECT count(*)::int FROM ${s.sync_dispatch_outbox}`,
  );
  return rows.map((r) => r.n);
}

async function refused(args: string[], line: string): Promise<void> {
  const before = await written();
  const r = await runCli(['trigger', '--integration', integration, ...args], { env });
  expect(r.code).not.toBe(0);
  expect(r.stdout).toBe('');
  expect(r.stderr.split('\n').filter(Boolean)).toEqual([line]);
  expect(await written()).toEqual(before);
}

it('a run over SYNC_RUN_MAX_UNITS exits non-zero with one line and writes nothing', async () => {
  await refused(
    ['--mode', 'backfill', '--since', '2026-01-01', '--before', '2026-03-02', '--force'],
    'syncrelay: this run would plan 19 units, over the cap of 5 (SYNC_RUN_MAX_UNITS); narrow it: fewer datasets, ' +
      'a shorter window (since/before) or fewer enabled sources (--datasets, --since/--before)',
  );
});

it('an integration at SYNC_INTEGRATION_MAX_LIVE_RUNS refuses even --force with one line', async () => {
  const ok = await runCli(['trigger', '--integration', integration, '--mode', 'incremental', '--json'], { env });
  expect(ok.code, ok.stderr).toBe(0);
  expect(parseJson<{ units: number }>(ok.stdout).units).toBe(3);
  await refused(
    ['--mode', 'full_resync', '--force'],
    `syncrelay: integration ${integration} has 1 unfinished run, the cap is 1 (SYNC_INTEGRATION_MAX_LIVE_RUNS); ` +
      'wait for one to finish or cancel one (syncrelay runs list, syncrelay cancel RUN_ID)',
  );
});
