import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { callerTx } from '../../src/db/callerTx.js';
import { planSyncRun } from '../../src/planning/planner.js';
import { openTestEngine, type TestEngine } from '../helpers/engine.js';

describe("a run planned inside the caller's own transaction, on the caller's own connection", () => {
  let te: TestEngine | undefined;
  let client: pg.Client | undefined;
  afterEach(async () => {
    await client?.end();
    client = undefined;
    await te?.close();
    te = undefined;
  });

  it('commits and rolls back with the caller’s change; the connection needs no search_path', async () => {
    te = await openTestEngine();
    const { engine } = te;
    const integ = await engine.createIntegration({
      orgId: 'org-lib',
      provider: 'synthetic',
      name: 'lib',
      sources: ['s1'],
      datasets: ['work-items'],
    });
    client = new pg.Client({ connectionString: te.t.url });
    await client.connect();
    expect((await client.query<{ search_path: string }>('SHOW search_path')).rows[0]!.search_path).not.toContain(
      'syncrelay',
    );
    await client.query('CREATE TABLE public.accounts (id int PRIMARY KEY, sync_requested boolean NOT NULL)');
    await client.query('INSERT INTO public.accounts VALUES (1, false)');
    const args = { orgId: 'org-lib', integrationId: integ.id, mode: 'incremental' as const, triggeredBy: 'api' };
    const runs = async () =>
      (await client!.query<{ n: string }>(`SELECT count(*) AS n FROM ${engine.db.schema.sync_runs}`)).rows[0]!.n;
    const outbox = async () =>
      (await client!.query<{ n: string }>(`SELECT count(*) AS n FROM ${engine.db.schema.sync_dispatch_outbox}`))
        .rows[0]!.n;

    await client.query('BEGIN');
    await client.query('UPDATE public.accounts SET sync_requested = true WHERE id = 1');
    const planned = await planSyncRun(callerTx(client, engine.db.schema), engine.ctx, args);
    expect(planned.units).toBeGreaterThan(0);
    await client.query('ROLLBACK');
    expect([await runs(), await outbox()]).toEqual(['0', '0']);

    await client.query('BEGIN');
    await client.query('UPDATE public.accounts SET sync_requested = true WHERE id = 1');
    const { run } = await planSyncRun(callerTx(client, engine.db.schema), engine.ctx, args);
    await client.query('COMMIT');
    expect([await runs(), await outbox()]).toEqual(['1', '1']);
    const { rows } = await client.query<{ status: string }>(
      `SELECT status FROM ${engine.db.schema.sync_runs} WHERE id = $1`,
      [run.id],
    );
    expect(rows[0]!.status).toBe('planned');
  });
});
