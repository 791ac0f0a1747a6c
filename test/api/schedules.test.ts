/**
 * The schedule endpoints against a real server (PostgreSQL, Redis): CRUD with scopes, org
 * isolation (another org's ids answer 404 and change nothing), 400s that name the field and
 * write nothing, the OpenAPI entries, and `syncrelay schedules …` as a child process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Schedule, ScheduleList } from '../../src/api/contracts/schedules.js';
import { nextSlot } from '../../src/planning/scheduleCron.js';
import { parseJson, runCli } from '../cli/helpers.js';
import { call, isErrorShape, ORG_A, openApiHarness, SYNTHETIC, tableCounts, type ApiHarness } from './helpers.js';

let h: ApiHarness;
let integrationA: string;
let integrationB: string;

beforeAll(async () => {
  h = await openApiHarness();
  integrationA = (await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body: SYNTHETIC })).body
    .id;
  integrationB = (await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.foreign, body: SYNTHETIC })).body
    .id;
});
afterAll(async () => {
  await h?.close();
});

const scheduleCount = async () =>
  (await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM syncrelay.scheduled_jobs')).rows[0]!.n;

async function create(body: Record<string, unknown>, token = h.tokens.admin) {
  return call(h.url, 'POST', '/api/v1/schedules', { token, body });
}

describe('schedule CRUD', () => {
  const crudRoundTrip =
    'POST creates (201) with next_run_at in its time zone; GET lists and reads it; PATCH and DELETE change it';
  it(crudRoundTrip, async () => {
    const before = Date.now();
    const r = await create({ integration_id: integrationA, cron: '0 9 * * *', timezone: 'europe/berlin' });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const s = Schedule.parse(r.body);
    expect(s).toMatchObject({
      org_id: ORG_A,
      integration_id: integrationA,
      cron: '0 9 * * *',
      timezone: 'Europe/Berlin',
      mode: 'incremental',
      enabled: true,
      last_run_at: null,
      last_outcome: null,
    });
    // The first 09:00 in Berlin after the request (computed on either side of it).
    const candidates = [before, Date.now()].map((ms) =>
      nextSlot('0 9 * * *', 'Europe/Berlin', new Date(ms))!.toISOString(),
    );
    expect(candidates).toContain(new Date(s.next_run_at!).toISOString());

    const one = await call(h.url, 'GET', `/api/v1/schedules/${s.id.toUpperCase()}`, { token: h.tokens.read });
    expect(one.status).toBe(200);
    expect(Schedule.parse(one.body)).toEqual(s);
    const all = await call(h.url, 'GET', '/api/v1/schedules', { token: h.tokens.read });
    expect(all.status).toBe(200);
    expect(ScheduleList.parse(all.body).items.map((x) => x.id)).toContain(s.id);

    const patched = await call(h.url, 'PATCH', `/api/v1/schedules/${s.id}`, {
      token: h.tokens.admin,
      body: { cron: '*/30 * * * *', timezone: 'UTC', mode: 'full_resync' },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const p = Schedule.parse(patched.body);
    expect(p).toMatchObject({ cron: '*/30 * * * *', timezone: 'UTC', mode: 'full_resync', enabled: true });
    expect(new Date(p.next_run_at!).getUTCMinutes() % 30).toBe(0);

    const off = await call(h.url, 'PATCH', `/api/v1/schedules/${s.id}`, {
      token: h.tokens.admin,
      body: { enabled: false },
    });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ enabled: false, next_run_at: null });
    const on = await call(h.url, 'PATCH', `/api/v1/schedules/${s.id}`, {
      token: h.tokens.admin,
      body: { enabled: true },
    });
    expect(new Date(on.body.next_run_at).getTime()).toBeGreaterThan(Date.now() - 1000);

    const deleted = await call(h.url, 'DELETE', `/api/v1/schedules/${s.id}`, { token: h.tokens.admin });
    expect(deleted.status).toBe(200);
    expect(deleted.body.id).toBe(s.id);
    expect((await call(h.url, 'GET', `/api/v1/schedules/${s.id}`, { token: h.tokens.read })).status).toBe(404);
    expect((await call(h.url, 'DELETE', `/api/v1/schedules/${s.id}`, { token: h.tokens.admin })).status).toBe(404);
  });

  it('a schedule may start verify runs: POST and PATCH take mode verify', async () => {
    const r = await create({ integration_id: integrationA, cron: '0 3 * * 0', mode: 'verify' });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const s = Schedule.parse(r.body);
    expect(s.mode).toBe('verify');
    const back = await call(h.url, 'PATCH', `/api/v1/schedules/${s.id}`, {
      token: h.tokens.admin,
      body: { mode: 'incremental' },
    });
    expect(back.body).toMatchObject({ mode: 'incremental' });
    const again = await call(h.url, 'PATCH', `/api/v1/schedules/${s.id}`, {
      token: h.tokens.admin,
      body: { mode: 'verify' },
    });
    expect(again.status).toBe(200);
    expect(Schedule.parse(again.body).mode).toBe('verify');
  });

  it('writes need admin, reads need read', async () => {
    const s = (await create({ integration_id: integrationA, cron: '@hourly' })).body;
    for (const token of [h.tokens.read, h.tokens.trigger]) {
      expect((await create({ integration_id: integrationA, cron: '@hourly' }, token)).status).toBe(403);
      expect(
        (await call(h.url, 'PATCH', `/api/v1/schedules/${s.id}`, { token, body: { enabled: false } })).status,
      ).toBe(403);
      expect((await call(h.url, 'DELETE', `/api/v1/schedules/${s.id}`, { token })).status).toBe(403);
    }
    expect((await call(h.url, 'GET', '/api/v1/schedules', { token: h.tokens.trigger })).status).toBe(403);
    expect((await call(h.url, 'GET', '/api/v1/schedules', {})).status).toBe(401);
    expect((await call(h.url, 'GET', `/api/v1/schedules/${s.id}`, { token: h.tokens.read })).body.enabled).toBe(true);
  });
});

describe('org isolation', () => {
  it("another org's schedule ids and integrations answer 404 and change nothing", async () => {
    const mine = Schedule.parse((await create({ integration_id: integrationA, cron: '15 * * * *' })).body);
    const theirs = Schedule.parse(
      (await create({ integration_id: integrationB, cron: '45 * * * *' }, h.tokens.foreign)).body,
    );
    const foreign = h.tokens.foreign;
    const count = await scheduleCount();

    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { enabled: false }],
      ['DELETE', undefined],
    ] as const) {
      const r = await call(h.url, method, `/api/v1/schedules/${mine.id}`, { token: foreign, body });
      expect(r.status, `${method} ${JSON.stringify(r.body)}`).toBe(404);
      expect(isErrorShape(r.body)).toBe(true);
      expect(r.body.error.details).toMatchObject({ entity: 'schedule' });
    }
    // A schedule of org A on org B's integration: not found, not created.
    const cross = await create({ integration_id: integrationB, cron: '@daily' });
    expect(cross.status).toBe(404);
    expect(cross.body.error.details).toMatchObject({ entity: 'integration', id: integrationB });

    const listed = await call(h.url, 'GET', '/api/v1/schedules', { token: foreign });
    expect(listed.body.items.map((x: { id: string }) => x.id)).toEqual([theirs.id]);
    expect(await scheduleCount()).toBe(count);
    const again = await call(h.url, 'GET', `/api/v1/schedules/${mine.id}`, { token: h.tokens.read });
    expect(Schedule.parse(again.body)).toEqual(mine);
  });
});

describe('bad input', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['a bad cron', { cron: '61 * * * *' }, 'cron'],
    ['six fields', { cron: '* * * * * *' }, 'cron'],
    ['a one-off date', { cron: '2026-05-01T00:00:00' }, 'cron'],
    ['a cron that never fires', { cron: '0 0 30 2 *' }, 'cron'],
    ['an empty cron', { cron: '' }, 'cron'],
    ['a number as cron', { cron: 5 }, 'cron'],
    ['an unknown zone', { timezone: 'Mars/Olympus' }, 'timezone'],
    ['an offset as zone', { timezone: '+02:00' }, 'timezone'],
    ['a backfill', { mode: 'backfill' }, 'mode'],
    ['an unknown mode', { mode: 'weekly' }, 'mode'],
    ['a string as enabled', { enabled: 'yes' }, 'enabled'],
    ['an unknown field', { since: '2026-01-01T00:00:00Z' }, 'since'],
    ['a malformed integration id', { integration_id: 'abc' }, 'integration_id'],
  ];

  it.each(cases)('POST with %s is a 400 naming the field; nothing is written', async (_, over, field) => {
    const before = { ...(await tableCounts(h.db)), schedules: await scheduleCount() };
    const r = await create({ integration_id: integrationA, cron: '0 * * * *', ...over });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(isErrorShape(r.body)).toBe(true);
    expect(r.body.error.details.field).toBe(field);
    expect({ ...(await tableCounts(h.db)), schedules: await scheduleCount() }).toEqual(before);
  });

  it('a backfill is refused with the reason', async () => {
    const r = await create({ integration_id: integrationA, cron: '0 * * * *', mode: 'backfill' });
    expect(r.body.error.message).toMatch(/window/);
  });

  it('PATCH with bad values, no fields or a malformed id is a 400 and changes nothing', async () => {
    const s = Schedule.parse((await create({ integration_id: integrationA, cron: '5 * * * *' })).body);
    for (const [body, field] of [
      [{ cron: 'every hour' }, 'cron'],
      [{ timezone: 'Nowhere/Else' }, 'timezone'],
      [{ mode: 'backfill' }, 'mode'],
      [{ integration_id: integrationB }, 'integration_id'],
      [{}, 'body'],
    ] as const) {
      const r = await call(h.url, 'PATCH', `/api/v1/schedules/${s.id}`, { token: h.tokens.admin, body });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error.details.field).toBe(field);
    }
    // Bad input is a 400 even for an id that does not exist (checked before the lookup).
    const missing = await call(h.url, 'PATCH', '/api/v1/schedules/00000000-0000-4000-8000-000000000000', {
      token: h.tokens.admin,
      body: { timezone: 'Nowhere/Else' },
    });
    expect(missing.status).toBe(400);
    expect(
      (await call(h.url, 'GET', '/api/v1/schedules/not-a-uuid', { token: h.tokens.read })).body.error.details.field,
    ).toBe('id');
    const again = await call(h.url, 'GET', `/api/v1/schedules/${s.id}`, { token: h.tokens.read });
    expect(Schedule.parse(again.body)).toEqual(s);
  });
});

describe('OpenAPI', () => {
  it('documents the schedule endpoints with their scopes', async () => {
    const doc = (await call(h.url, 'GET', '/openapi.json')).body;
    const list = doc.paths['/api/v1/schedules'];
    const one = doc.paths['/api/v1/schedules/{id}'];
    expect(Object.keys(list).sort()).toEqual(['get', 'post']);
    expect(Object.keys(one).sort()).toEqual(['delete', 'get', 'patch']);
    expect(list.post['x-required-scope']).toBe('admin');
    expect(one.patch['x-required-scope']).toBe('admin');
    expect(one.get['x-required-scope']).toBe('read');
    expect(doc.components.schemas.NewSchedule.additionalProperties).toBe(false);
    expect(doc.components.schemas.Schedule.properties).toHaveProperty('next_run_at');
  });
});

describe('syncrelay schedules', () => {
  const env = () => ({ DATABASE_URL: h.t.url });

  it('create, list, disable, enable and delete', async () => {
    const created = await runCli(
      [
        'schedules',
        'create',
        '--org',
        ORG_A,
        '--integration',
        integrationA,
        '--cron',
        '0 6 * * 1-5',
        '--timezone',
        'America/New_York',
        '--json',
      ],
      { env: env() },
    );
    expect(created.code, created.stderr).toBe(0);
    const s = Schedule.parse(parseJson(created.stdout));
    expect(s).toMatchObject({ org_id: ORG_A, timezone: 'America/New_York', mode: 'incremental', enabled: true });

    const listed = await runCli(['schedules', 'list', '--org', ORG_A, '--json'], { env: env() });
    expect(listed.code, listed.stderr).toBe(0);
    expect(parseJson<{ id: string }[]>(listed.stdout).map((x) => x.id)).toContain(s.id);
    const table = await runCli(['schedules', 'list'], { env: env() });
    expect(table.stdout).toMatch(/^ID\s+ORG\s+INTEGRATION\s+CRON\s+TIMEZONE\s+MODE\s+ENABLED\s+NEXT RUN\s+LAST/);

    const disabled = await runCli(['schedules', 'disable', s.id, '--json'], { env: env() });
    expect(parseJson<{ enabled: boolean; next_run_at: null }>(disabled.stdout)).toMatchObject({
      enabled: false,
      next_run_at: null,
    });
    const enabled = await runCli(['schedules', 'enable', s.id], { env: env() });
    expect(enabled.stdout).toMatch(/^enabled schedule .* next run \d{4}-/);

    const wrongOrg = await runCli(['schedules', 'delete', s.id, '--org', 'org-b'], { env: env() });
    expect(wrongOrg.code).not.toBe(0);
    expect(wrongOrg.stderr.trim()).toBe(`syncrelay: schedule ${s.id} not found`);
    const deleted = await runCli(['schedules', 'delete', s.id], { env: env() });
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout.trim()).toBe(`deleted schedule ${s.id}`);
  });

  it('tick fires what is due now, once', async () => {
    const integration = (await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body: SYNTHETIC }))
      .body.id;
    const s = Schedule.parse((await create({ integration_id: integration, cron: '@hourly' })).body);
    await h.db.query("UPDATE syncrelay.scheduled_jobs SET next_run_at = now() - interval '3 hours' WHERE id = $1", [
      s.id,
    ]);
    const r = await runCli(['schedules', 'tick', '--json'], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    // Other tests' schedules may fall due meanwhile (an hour boundary): judge this one only.
    const tick = parseJson<{ fired: { scheduleId: string; jobRunId: string }[] }>(r.stdout);
    expect(tick.fired.filter((f) => f.scheduleId === s.id)).toHaveLength(1);
    const again = await runCli(['schedules', 'tick', '--json'], { env: env() });
    expect(again.code, again.stderr).toBe(0);
    const second = parseJson<{ fired: { scheduleId: string }[] }>(again.stdout);
    expect(second.fired.filter((f) => f.scheduleId === s.id)).toEqual([]);
    const { rows } = await h.db.query<{ triggered_by: string }>(
      'SELECT triggered_by FROM syncrelay.job_runs WHERE job_id = $1',
      [s.id],
    );
    expect(rows).toEqual([{ triggered_by: 'schedule' }]);
  });

  it('refuses a bad cron, zone or mode with one line naming it, writing nothing', async () => {
    const count = await scheduleCount();
    for (const [flag, value, field] of [
      ['--cron', 'soon', 'cron'],
      ['--timezone', 'Mars/Olympus', 'timezone'],
      ['--mode', 'backfill', 'mode'],
    ] as const) {
      const args = [
        'schedules',
        'create',
        '--org',
        ORG_A,
        '--integration',
        integrationA,
        '--cron',
        '0 * * * *',
        flag,
        value,
      ];
      const r = await runCli(args, { env: env() });
      expect(r.code).not.toBe(0);
      const lines = r.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^syncrelay: ${field}: `));
    }
    expect(await scheduleCount()).toBe(count);
  });
});
