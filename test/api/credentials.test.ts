/**
 * The write-only credential over HTTP: set on create, replaced with PUT, removed with DELETE,
 * shown only as {set, updated_at}; Idempotency-Key records that hold no secret; bad input that
 * names the field without echoing it; a server without SYNCRELAY_SECRET_KEY refusing to store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Integration } from '../../src/api/contracts/resources.js';
import { SecretKey } from '../../src/secrets/key.js';
import { getCredential } from '../../src/store/credentials.js';
import { call, isErrorShape, openApiHarness, SYNTHETIC, tableCounts, type ApiHarness } from './helpers.js';

const SECRET = 'ghp_ApiCredential_5a0c3e99d1';
let h: ApiHarness;
let bare: ApiHarness;

beforeAll(async () => {
  h = await openApiHarness({ settings: { secretKey: SecretKey.generate() } });
  bare = await openApiHarness();
});
afterAll(async () => {
  await h?.close();
  await bare?.close();
});

async function create(harness: ApiHarness, credential?: string, headers?: Record<string, string>) {
  const body = credential === undefined ? SYNTHETIC : { ...SYNTHETIC, credential };
  return call(harness.url, 'POST', '/api/v1/integrations', { token: harness.tokens.admin, body, headers });
}

function put(id: string, body: unknown, opts: { token?: string; headers?: Record<string, string> } = {}) {
  return call(h.url, 'PUT', `/api/v1/integrations/${id}/credential`, {
    token: opts.token ?? h.tokens.admin,
    body,
    headers: opts.headers,
  });
}

function expectNoSecret(value: unknown, secret = SECRET): void {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  expect(text).not.toContain(secret);
}

describe('credential on integrations', () => {
  it('POST with a credential answers {set: true, updated_at}; GET and list show the same, not the value', async () => {
    const r = await create(h, SECRET);
    expect(r.status).toBe(201);
    expect(Integration.parse(r.body)).toBeTruthy();
    expect(r.body.credential).toEqual({ set: true, updated_at: expect.any(String) });
    expectNoSecret(r.body);
    const one = await call(h.url, 'GET', `/api/v1/integrations/${r.body.id}`, { token: h.tokens.read });
    expect(one.body.credential).toEqual(r.body.credential);
    const list = await call(h.url, 'GET', '/api/v1/integrations', { token: h.tokens.read });
    expectNoSecret(list.body);
    const stored = await getCredential(h.db, r.body.id);
    expect(stored?.key_id).toBe(h.engine.ctx.settings.secretKey!.id);
  });

  it('POST without one answers {set: false}', async () => {
    const r = await create(h);
    expect(r.status).toBe(201);
    expect(r.body.credential).toEqual({ set: false });
  });

  it('PUT sets and replaces it (version up), DELETE removes it, twice is fine', async () => {
    const id = (await create(h)).body.id as string;
    const first = await put(id, { credential: SECRET });
    expect(first.status).toBe(200);
    expect(Integration.parse(first.body).credential).toEqual({ set: true, updated_at: expect.any(String) });
    expectNoSecret(first.body);
    const second = await put(id, { credential: `${SECRET}-2` });
    expect(second.status).toBe(200);
    expect((await getCredential(h.db, id))?.version).toBe(2);
    for (let n = 0; n < 2; n++) {
      const del = await call(h.url, 'DELETE', `/api/v1/integrations/${id}/credential`, { token: h.tokens.admin });
      expect(del.status).toBe(200);
      expect(del.body.credential).toEqual({ set: false });
    }
    expect(await getCredential(h.db, id)).toBeNull();
  });

  it('needs the admin scope and the org of the integration', async () => {
    const id = (await create(h)).body.id as string;
    for (const token of [h.tokens.read, h.tokens.trigger]) {
      expect((await put(id, { credential: SECRET }, { token })).status).toBe(403);
      const del = await call(h.url, 'DELETE', `/api/v1/integrations/${id}/credential`, { token });
      expect(del.status).toBe(403);
    }
    const foreign = await put(id, { credential: SECRET }, { token: h.tokens.foreign });
    expect(foreign.status).toBe(404);
    expect((await put('0b6c4c5e-7e43-4d0a-9c1e-4e1f1f6f2a10', { credential: SECRET })).status).toBe(404);
    expect(await getCredential(h.db, id)).toBeNull();
  });

  it('refuses bad credentials naming the field, never quoting the value, writing nothing', async () => {
    const id = (await create(h)).body.id as string;
    const bad: unknown[] = [
      '',
      '   ',
      `${SECRET}\n`,
      `${SECRET}\u0000x`,
      `${SECRET}\u001b[2J`,
      SECRET.repeat(1000),
      42,
      null,
      [SECRET],
      { value: SECRET },
    ];
    const before = await tableCounts(h.db);
    for (const credential of bad) {
      for (const r of [await put(id, { credential }), await create(h, credential as string)]) {
        expect(r.status).toBe(400);
        expect(isErrorShape(r.body)).toBe(true);
        expect(r.body.error.details.field).toBe('credential');
        expectNoSecret(r.body);
      }
    }
    expect((await put(id, {})).body.error.details.field).toBe('credential');
    const extra = await put(id, { credential: SECRET, other: SECRET });
    expect(extra.status).toBe(400);
    expectNoSecret(extra.body);
    // Malformed JSON around a secret: the parser's message (which quotes input) is not answered.
    const raw = await call(h.url, 'PUT', `/api/v1/integrations/${id}/credential`, {
      token: h.tokens.admin,
      raw: `{"credential": ${SECRET}}`,
    });
    expect(raw.status).toBe(400);
    expectNoSecret(raw.body);
    expect(await tableCounts(h.db)).toEqual(before);
  });
});

describe('Idempotency-Key', () => {
  it('replays a PUT without storing the credential; the same key with another credential is a 422', async () => {
    const id = (await create(h)).body.id as string;
    const headers = { 'idempotency-key': `put-${id}` };
    const first = await put(id, { credential: SECRET }, { headers });
    expect(first.status).toBe(200);
    const again = await put(id, { credential: SECRET }, { headers });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await getCredential(h.db, id))?.version).toBe(1);
    const other = await put(id, { credential: `${SECRET}-other` }, { headers });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');

    const created = await create(h, SECRET, { 'idempotency-key': 'create-with-credential' });
    const replay = await create(h, SECRET, { 'idempotency-key': 'create-with-credential' });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(created.body);

    const { rows } = await h.db.query<{ dump: string }>(
      `SELECT row_to_json(k)::text AS dump FROM ${h.db.schema.idempotency_keys} k`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const r of rows) {
      expectNoSecret(r.dump);
      expectNoSecret(r.dump, Buffer.from(SECRET).toString('base64'));
      expectNoSecret(r.dump, Buffer.from(SECRET).toString('hex'));
    }
  });
});

describe('a server without SYNCRELAY_SECRET_KEY', () => {
  it('answers 422 secret_key_missing naming the setting, and writes nothing', async () => {
    const before = await tableCounts(bare.db);
    const r = await create(bare, SECRET);
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('secret_key_missing');
    expect(r.body.error.message).toContain('SYNCRELAY_SECRET_KEY');
    expect(await tableCounts(bare.db)).toEqual(before);
    const id = (await create(bare)).body.id as string;
    const p = await call(bare.url, 'PUT', `/api/v1/integrations/${id}/credential`, {
      token: bare.tokens.admin,
      body: { credential: SECRET },
    });
    expect(p.status).toBe(422);
    expect(p.body.error.code).toBe('secret_key_missing');
    expect(await getCredential(bare.db, id)).toBeNull();
  });
});

describe('OpenAPI', () => {
  it('documents PUT and DELETE of the credential (admin), the field write-only and without an example', async () => {
    const doc = (await call(h.url, 'GET', '/openapi.json')).body;
    const path = doc.paths['/api/v1/integrations/{id}/credential'];
    expect(Object.keys(path).sort()).toEqual(['delete', 'put']);
    expect(path.put['x-required-scope']).toBe('admin');
    expect(path.delete['x-required-scope']).toBe('admin');
    const field = doc.components.schemas.NewIntegration.properties.credential;
    expect(field.writeOnly).toBe(true);
    expect(field.example).toBeUndefined();
    expect(field.examples).toBeUndefined();
    expect(doc.components.schemas.Integration.required).toContain('credential');
    expect(JSON.stringify(doc)).not.toMatch(/ghp_|lin_api_/);
  });
});
