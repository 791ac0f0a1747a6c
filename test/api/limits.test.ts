/**
 * Every text the API stores has a maximum length and no control characters; provider names (and
 * the names a provider makes its units carry) follow one pattern. A value past a limit is a 400
 * naming the field that writes nothing — never a 201 whose later triggers answer 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, isErrorShape, openApiHarness, SYNTHETIC, tableCounts, type ApiHarness, type Reply } from './helpers.js';

let h: ApiHarness;
let integrationId: string;
beforeAll(async () => {
  h = await openApiHarness();
  const r = await call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body: SYNTHETIC });
  integrationId = r.body.id;
});
afterAll(async () => {
  await h?.close();
});

async function rejects(field: string, send: () => Promise<Reply>): Promise<void> {
  const before = await tableCounts(h.db);
  const r = await send();
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(isErrorShape(r.body)).toBe(true);
  expect(r.body.error.details.field).toBe(field);
  expect(await tableCounts(h.db)).toEqual(before);
}

const createIntegration = (body: unknown) => () =>
  call(h.url, 'POST', '/api/v1/integrations', { token: h.tokens.admin, body });
const trigger = (id: string, what: 'sync' | 'backfill', body: unknown) =>
  call(h.url, 'POST', `/api/v1/integrations/${id}/${what}`, { token: h.tokens.admin, body });

/** 64 characters: the longest provider name. */
const LONGEST_PROVIDER_NAME = `p${'x'.repeat(62)}9`;
/** 100 emoji: 200 UTF-16 code units, 400 bytes of UTF-8. */
const WIDE_200 = '😀'.repeat(100);

describe('provider names', () => {
  it.each([
    ['upper case', 'Synthetic'],
    ['a leading digit', '1synthetic'],
    ['a space', 'syn thetic'],
    ['65 characters', `${LONGEST_PROVIDER_NAME}x`],
    ['3000 characters', 's'.repeat(3000)],
    ['a control character', 'synthetic\u001b'],
  ])('provider with %s is a 400', async (_, provider) => {
    await rejects('provider', createIntegration({ ...SYNTHETIC, provider }));
  });

  it.each([
    ['65 characters', `${LONGEST_PROVIDER_NAME}x`],
    ['3000 characters (whose units would not fit the bucket index)', 'l'.repeat(3000)],
    ['upper case', 'Linear'],
    ['a newline', 'linear\n'],
    ['an empty string', ''],
  ])('an impersonated provider name with %s is a 400', async (_, impersonate) => {
    await rejects('config.impersonate', createIntegration({ ...SYNTHETIC, config: { impersonate } }));
  });

  it('an integration impersonating the longest provider name is created and triggered (202, never 500)', async () => {
    const created = await createIntegration({ ...SYNTHETIC, config: { impersonate: LONGEST_PROVIDER_NAME } })();
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const sync = await trigger(created.body.id, 'sync', { mode: 'incremental' });
    expect(sync.status, JSON.stringify(sync.body)).toBe(202);
    const backfill = await trigger(created.body.id, 'backfill', {
      since: '2026-01-01T00:00:00Z',
      before: '2026-02-01T00:00:00Z',
    });
    expect(backfill.status, JSON.stringify(backfill.body)).toBe(202);
    const { rows } = await h.db.query<{ provider: string }>(
      `SELECT DISTINCT provider FROM ${h.db.schema.table('sync_run_units')} WHERE integration_id = $1`,
      [created.body.id],
    );
    expect(rows).toEqual([{ provider: LONGEST_PROVIDER_NAME }]);
  });
});

describe('lengths', () => {
  it.each([
    ['a name of 201 characters', 'name', { ...SYNTHETIC, name: 'n'.repeat(201) }],
    ['a source key of 201 characters', 'sources.1', { ...SYNTHETIC, sources: ['a', 's'.repeat(201)] }],
    ['501 sources', 'sources', { ...SYNTHETIC, sources: Array.from({ length: 501 }, (_, i) => `s${i}`) }],
    ['a dataset key of 101 characters', 'datasets.0', { ...SYNTHETIC, datasets: ['d'.repeat(101)] }],
  ])('%s is a 400', async (_, field, body) => {
    await rejects(field, createIntegration(body));
  });

  it('names and source keys of the maximum length, in 4-byte characters, are stored and triggered', async () => {
    const sources = [WIDE_200, `${'é'.repeat(199)}x`];
    const created = await createIntegration({ ...SYNTHETIC, name: WIDE_200, sources })();
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.name).toBe(WIDE_200);
    const sync = await trigger(created.body.id, 'sync', { mode: 'full_resync' });
    expect(sync.status, JSON.stringify(sync.body)).toBe(202);
  });

  it('schedule expressions and time zones are bounded', async () => {
    const post = (body: unknown) => () => call(h.url, 'POST', '/api/v1/schedules', { token: h.tokens.admin, body });
    await rejects('cron', post({ integration_id: integrationId, cron: `0 * * * *${' '.repeat(200)}` }));
    await rejects('timezone', post({ integration_id: integrationId, cron: '0 * * * *', timezone: 'E'.repeat(101) }));
  });
});

describe('control characters', () => {
  const controls: [string, string][] = [
    ['ESC (an ANSI sequence)', '\u001b[2J'],
    ['a newline', '\n'],
    ['a tab', '\t'],
    ['DEL', '\u007f'],
    ['a C1 control (NEL)', '\u0085'],
    ['a C1 control (CSI)', '\u009b'],
  ];

  it.each(controls)('a name with %s is a 400', async (_, c) => {
    await rejects('name', createIntegration({ ...SYNTHETIC, name: `Acme${c}Linear` }));
  });

  it.each(controls)('a source key with %s is a 400', async (_, c) => {
    await rejects('sources.0', createIntegration({ ...SYNTHETIC, sources: [`team${c}a`] }));
  });

  it.each(controls)('a cron expression with %s is a 400', async (_, c) => {
    await rejects('cron', () =>
      call(h.url, 'POST', '/api/v1/schedules', {
        token: h.tokens.admin,
        body: { integration_id: integrationId, cron: `0 * * * *${c}` },
      }),
    );
  });

  it('printable Unicode is fine', async () => {
    const r = await createIntegration({ ...SYNTHETIC, name: 'Acme — Linear (Zürich) 日本', sources: ['équipe-α'] })();
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  });
});
