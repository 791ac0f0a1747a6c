/**
 * Linear and Jira webhooks over HTTP (in process, real PostgreSQL, no worker): each provider's own
 * signature header and format is the only authentication; Linear's webhookTimestamp further than
 * 60 s from the server's clock is refused and writes nothing; a delivery names its source by key, by
 * a stored team's id or by a stored work item's id; Linear `Issue` `remove` and `jira:issue_deleted`
 * tombstone the work item; Jira's delivery id is X-Atlassian-Webhook-Identifier, or, without it, made
 * of what a retry repeats; a secret the provider generated can be stored instead of a generated one.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/types.js';
import { signWebhookBody } from '../../src/secrets/webhookSecrets.js';
import { findLeaks } from '../helpers/leakScan.js';
import { ORG_A } from './helpers.js';
import { openWebhookApp, type WebhookApp } from './webhookApp.js';

let w: WebhookApp;
let db: Db;
let app: FastifyInstance;
let log: WebhookApp['log'];
const shown: string[] = [];

beforeAll(async () => {
  w = await openWebhookApp();
  ({ db, app, log } = w);
});
afterAll(async () => {
  await w?.close();
});

const api: WebhookApp['api'] = (method, url, body) => w.api(method, url, body);

async function integration(provider: 'linear' | 'jira', name: string, sources: string[]): Promise<string> {
  const datasets = ['work-items', 'work-item-comments'];
  const config = provider === 'jira' ? { siteUrl: 'https://example.atlassian.net' } : {};
  const res = await api('POST', '/api/v1/integrations', { provider, name, sources, datasets, config });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

async function newSecret(id: string, given?: string): Promise<string> {
  const res = await api('POST', `/api/v1/integrations/${id}/webhook-secret`, given ? { secret: given } : undefined);
  expect(res.status, res.text).toBe(201);
  const secret = res.body.secret as string;
  shown.push(secret);
  return secret;
}

async function post(provider: string, id: string, headers: Record<string, string>, body: string) {
  const res = await app.inject({
    method: 'POST',
    url: `/api/v1/webhooks/${provider}/${id}`,
    headers: { 'content-type': 'application/json', ...headers },
    payload: body,
  });
  return { status: res.statusCode, text: res.body, body: res.json<Record<string, unknown>>() };
}

async function count(table: string, where = 'true', values: unknown[] = []): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${db.schema.table(table)} WHERE ${where}`,
    values,
  );
  return rows[0]!.n;
}

/** The sources (keys) of run `runId`'s units and the datasets it was planned for. */
async function unitsOf(runId: unknown): Promise<{ sources: string[]; datasets: string[] }> {
  const { rows } = await db.query<{ key: string; datasets: string[] }>(
    `SELECT s.external_key AS key, r.result->'datasets' AS datasets FROM ${db.schema.sync_run_units} u
       JOIN ${db.schema.integration_sources} s ON s.id = u.source_id
       JOIN ${db.schema.sync_runs} r ON r.id = u.sync_run_id
      WHERE u.sync_run_id = $1`,
    [runId],
  );
  return {
    sources: [...new Set(rows.map((r) => r.key))].sort(),
    datasets: [...new Set(rows.flatMap((r) => r.datasets))].sort(),
  };
}

/**
 * The sources a delivery led to: those of the webhook runs armed for the integration and those
 * remembered for after a live run.
 */
async function coveredSources(id: string): Promise<string[]> {
  const { rows } = await db.query<{ key: string }>(
    `SELECT s.external_key AS key FROM ${db.schema.integration_sources} s
      WHERE s.integration_id = $1
        AND (EXISTS (SELECT 1 FROM ${db.schema.sync_run_units} u JOIN ${db.schema.sync_runs} r ON r.id = u.sync_run_id
                      WHERE u.source_id = s.id AND r.triggered_by = 'webhook')
          OR EXISTS (SELECT 1 FROM ${db.schema.webhook_pending_runs} p WHERE p.source_id = s.id))
      ORDER BY 1`,
    [id],
  );
  return rows.map((r) => r.key);
}

async function storeWorkItem(provider: string, id: string, externalId: string, container: string): Promise<void> {
  await db.query(
    `INSERT INTO ${db.schema.table('work_items')}
       (org_id, integration_id, provider, external_id, container, title, status, updated_at, last_synced_at)
     VALUES ($1, $2, $3, $4, $5, 't', 'todo', now(), now())`,
    [ORG_A, id, provider, externalId, container],
  );
}

async function deletedOf(id: string, externalId: string): Promise<boolean> {
  const { rows } = await db.query<{ deleted_at: Date | null }>(
    `SELECT deleted_at FROM ${db.schema.table('work_items')} WHERE integration_id = $1 AND external_id = $2`,
    [id, externalId],
  );
  return rows[0]!.deleted_at !== null;
}

let seq = 0;

describe('Linear', () => {
  let id = '';
  let secret = '';
  beforeAll(async () => {
    id = await integration('linear', 'linear hooks', ['ENG', 'OPS', 'DES']);
    secret = await newSecret(id, 'lin_wh_0123456789abcdefGHIJ');
    expect(secret).toBe('lin_wh_0123456789abcdefGHIJ');
  });

  function issue(action: string, data: Record<string, unknown>, sentAt = Date.now()) {
    return {
      action,
      type: 'Issue',
      data,
      url: 'https://linear.app/x',
      organizationId: 'org',
      webhookTimestamp: sentAt,
    };
  }

  function send(payload: Record<string, unknown>, opts: { signature?: string; deliveryId?: string | null } = {}) {
    const body = JSON.stringify(payload);
    const headers: Record<string, string> = {
      'linear-event': typeof payload.type === 'string' ? payload.type : 'Issue',
      'linear-signature': opts.signature ?? signWebhookBody(body, secret, ''),
    };
    if (opts.deliveryId !== null) headers['linear-delivery'] = opts.deliveryId ?? `lin-${++seq}`;
    return post('linear', id, headers, body);
  }

  it('Linear-Signature is the bare hex digest: a prefixed or wrong one is a 401 and writes nothing', async () => {
    const payload = issue('update', { id: 'i-1', team: { id: 't-eng', key: 'ENG' } });
    const body = JSON.stringify(payload);
    const before = await count('webhook_deliveries');
    for (const signature of [signWebhookBody(body, secret), signWebhookBody(body, 'another-secret-value', '')]) {
      const res = await send(payload, { signature });
      expect(res.status, res.text).toBe(401);
      expect((res.body.error as { code: string }).code).toBe('invalid_signature');
    }
    // A Linear integration's id on the GitHub route answers the same 401.
    const github = await post('github', id, { 'x-hub-signature-256': signWebhookBody(body, secret) }, body);
    expect(github.status).toBe(401);
    expect(await count('webhook_deliveries')).toBe(before);
  });

  it('a webhookTimestamp more than 60 s away is refused (401 stale_delivery) and writes nothing', async () => {
    const before = await count('webhook_deliveries');
    for (const sentAt of [Date.now() - 61_000, Date.now() + 61_000]) {
      const res = await send(issue('update', { id: 'i-1', team: { key: 'ENG' } }, sentAt));
      expect(res.status, res.text).toBe(401);
      expect((res.body.error as { code: string }).code).toBe('stale_delivery');
    }
    const fresh = await send(issue('update', { id: 'i-1', team: { key: 'ENG' } }, Date.now() - 50_000));
    expect(fresh.status, fresh.text).toBe(202);
    expect(await count('webhook_deliveries')).toBe(before + 1);
  });

  it('without Linear-Delivery or webhookTimestamp a signed delivery is a 400 recorded rejected', async () => {
    const rejected = () => count('webhook_deliveries', 'integration_id = $1 AND status = $2', [id, 'rejected']);
    const before = await rejected();
    const noId = await send(issue('update', { id: 'i-2', team: { key: 'ENG' } }), { deliveryId: null });
    const noTime = await send({ action: 'update', type: 'Issue', data: { id: 'i-2' } });
    for (const [res, field] of [
      [noId, 'Linear-Delivery'],
      [noTime, 'webhookTimestamp'],
    ] as const) {
      expect(res.status, res.text).toBe(400);
      expect((res.body.error as { details: { field: string } }).details.field).toBe(field);
    }
    expect(await rejected()).toBe(before + 2);
  });

  it('an Issue arms a run of its team; teamId finds the stored team; a comment its issue’s', async () => {
    const other = await integration('linear', 'linear sources', ['ENG', 'OPS', 'DES']);
    const as = secret;
    secret = await newSecret(other);
    const send2 = (payload: Record<string, unknown>) => {
      const body = JSON.stringify(payload);
      const headers = { 'linear-delivery': `lin-${++seq}`, 'linear-signature': signWebhookBody(body, secret, '') };
      return post('linear', other, headers, body);
    };
    try {
      const armed = await send2(issue('create', { id: 'i-3', identifier: 'OPS-3', team: { id: 't-ops', key: 'OPS' } }));
      expect(armed.status, armed.text).toBe(202);
      expect(armed.body.outcome).toBe('armed');
      expect(await unitsOf(armed.body.sync_run_id)).toEqual({ sources: ['OPS'], datasets: ['work-items'] });
      expect(await coveredSources(other)).toEqual(['OPS']);

      await db.query(
        `INSERT INTO ${db.schema.table('teams')} (org_id, integration_id, provider, external_id, key, last_synced_at)
         VALUES ($1, $2, 'linear', 't-des', 'DES', now())`,
        [ORG_A, other],
      );
      // The OPS run is live (planned) and reads OPS only: another team gets a run of its own.
      const byTeamId = await send2(issue('update', { id: 'i-4', teamId: 't-des' }));
      expect(byTeamId.body.outcome).toBe('armed');
      expect(await unitsOf(byTeamId.body.sync_run_id)).toEqual({ sources: ['DES'], datasets: ['work-items'] });

      await storeWorkItem('linear', other, 'i-5', 'ENG');
      const comment = await send2({
        action: 'create',
        type: 'Comment',
        data: { id: 'c-1', body: 'hi', issueId: 'i-5', issue: { id: 'i-5', title: 't' } },
        webhookTimestamp: Date.now(),
      });
      expect(comment.body.outcome).toBe('armed');
      expect(await unitsOf(comment.body.sync_run_id)).toEqual({
        sources: ['ENG'],
        datasets: ['work-item-comments', 'work-items'],
      });
      expect(await coveredSources(other)).toEqual(['DES', 'ENG', 'OPS']);
      // A comment on an OPS issue: OPS is read by a planned run without comments: remembered.
      await storeWorkItem('linear', other, 'i-9', 'OPS');
      const onOps = await send2({
        action: 'update',
        type: 'Comment',
        data: { id: 'c-3', body: 'edited', issueId: 'i-9' },
        webhookTimestamp: Date.now(),
      });
      expect(onOps.body).toMatchObject({ outcome: 'pending', sync_run_id: null });
      const { rows } = await db.query<{ datasets: string[] }>(
        `SELECT p.datasets FROM ${db.schema.webhook_pending_runs} p
           JOIN ${db.schema.integration_sources} s ON s.id = p.source_id
          WHERE s.external_key = 'OPS' AND p.integration_id = $1`,
        [other],
      );
      expect([...rows[0]!.datasets].sort()).toEqual(['work-item-comments', 'work-items']);

      // A team never synced, or an issue the store does not have, names no source: recorded, nothing armed.
      for (const payload of [
        issue('update', { id: 'i-6', teamId: 't-unknown' }),
        { action: 'create', type: 'Comment', data: { id: 'c-2', issueId: 'i-unknown' }, webhookTimestamp: Date.now() },
      ]) {
        const res = await send2(payload);
        expect(res.body).toMatchObject({ outcome: 'ignored', sync_run_id: null });
      }
    } finally {
      secret = as;
    }
  });

  it('Issue remove tombstones the issue; an archive (update) does not', async () => {
    await storeWorkItem('linear', id, 'i-7', 'ENG');
    await storeWorkItem('linear', id, 'i-8', 'ENG');
    await send(issue('update', { id: 'i-8', team: { key: 'ENG' }, archivedAt: new Date().toISOString() }));
    const res = await send(issue('remove', { id: 'i-7', team: { key: 'ENG' } }));
    expect(res.status, res.text).toBe(202);
    expect(await deletedOf(id, 'i-7')).toBe(true);
    expect(await deletedOf(id, 'i-8')).toBe(false);
  });
});

describe('Jira', () => {
  let id = '';
  let secret = '';
  beforeAll(async () => {
    id = await integration('jira', 'jira hooks', ['PROJ', 'OPS']);
    secret = await newSecret(id);
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
  });

  function event(webhookEvent: string, issue: Record<string, unknown>, extra: Record<string, unknown> = {}) {
    return { timestamp: Date.now(), webhookEvent, issue_event_type_name: 'issue_generic', issue, ...extra };
  }

  function send(payload: unknown, opts: { identifier?: string | null; signature?: string } = {}) {
    const body = JSON.stringify(payload);
    const headers: Record<string, string> = {
      'x-hub-signature': opts.signature ?? signWebhookBody(body, secret),
      'x-atlassian-webhook-flow': 'Primary',
    };
    if (opts.identifier !== null) headers['x-atlassian-webhook-identifier'] = opts.identifier ?? `jira-${++seq}`;
    return post('jira', id, headers, body);
  }

  const proj = (n: number) => ({ id: String(10_000 + n), key: `PROJ-${n}`, fields: { project: { key: 'PROJ' } } });

  it('X-Hub-Signature (sha256=) is checked; GitHub’s header name is not read', async () => {
    const payload = event('jira:issue_updated', proj(1));
    const body = JSON.stringify(payload);
    const before = await count('webhook_deliveries');
    const wrong = await send(payload, { signature: signWebhookBody(body, 'not-the-secret') });
    const bare = await send(payload, { signature: signWebhookBody(body, secret, '') });
    const githubHeader = await post('jira', id, { 'x-hub-signature-256': signWebhookBody(body, secret) }, body);
    for (const res of [wrong, bare, githubHeader]) expect(res.status, res.text).toBe(401);
    expect(await count('webhook_deliveries')).toBe(before);
  });

  it('an issue event arms a run of its project; a retry with the same identifier is a duplicate', async () => {
    const first = await send(event('jira:issue_updated', proj(2)), { identifier: 'wh-77' });
    expect(first.status, first.text).toBe(202);
    expect(first.body).toMatchObject({ duplicate: false, outcome: 'armed' });
    expect(await unitsOf(first.body.sync_run_id)).toEqual({ sources: ['PROJ'], datasets: ['work-items'] });
    const retry = await send(event('jira:issue_updated', proj(2)), { identifier: 'wh-77' });
    expect(retry.body).toMatchObject({ duplicate: true, outcome: null });
  });

  it('without the identifier header a retry (the same body) is still recognised', async () => {
    const payload = event('jira:issue_created', { id: '20001', key: 'OPS-1', fields: { project: { key: 'OPS' } } });
    const first = await send(payload, { identifier: null });
    const again = await send(payload, { identifier: null });
    expect(first.body).toMatchObject({ duplicate: false });
    expect(again.body).toMatchObject({ duplicate: true });
  });

  it('a comment event names its project by the issue key when the fields are trimmed', async () => {
    const res = await send(
      event('comment_created', { id: '10003', key: 'OPS-3' }, { comment: { id: '501', body: 'x' } }),
    );
    // The PROJ run armed above is live: this one is remembered for after it, for OPS.
    expect(res.body.outcome).toBe('pending');
    expect(await coveredSources(id)).toEqual(['OPS', 'PROJ']);
  });

  it('jira:issue_deleted tombstones the issue; a signed body without webhookEvent is a 400 rejected', async () => {
    await storeWorkItem('jira', id, '10009', 'PROJ');
    await storeWorkItem('jira', id, '10010', 'PROJ');
    const res = await send(event('jira:issue_deleted', proj(9)));
    expect(res.status, res.text).toBe(202);
    expect(await deletedOf(id, '10009')).toBe(true);
    expect(await deletedOf(id, '10010')).toBe(false);
    const bad = await send({ timestamp: Date.now(), issue: proj(10) });
    expect(bad.status, bad.text).toBe(400);
    expect((bad.body.error as { details: { field: string } }).details.field).toBe('webhookEvent');
    expect(await deletedOf(id, '10010')).toBe(false);
  });
});

describe('webhook secret', () => {
  it('a provided secret must be 16–256 printable characters; a second one needs rotate', async () => {
    const id = await integration('jira', 'provided', ['PROJ']);
    for (const secret of ['short', 'has spaces in it here', 'x'.repeat(257)]) {
      const res = await api('POST', `/api/v1/integrations/${id}/webhook-secret`, { secret });
      expect(res.status, res.text).toBe(400);
    }
    await newSecret(id, 'provided-secret-0001');
    const again = await api('POST', `/api/v1/integrations/${id}/webhook-secret`, { secret: 'provided-secret-0002' });
    expect(again.status).toBe(409);
    const rotated = await api('POST', `/api/v1/integrations/${id}/webhook-secret`, {
      secret: 'provided-secret-0002',
      rotate: true,
    });
    expect(rotated.status, rotated.text).toBe(201);
    shown.push('provided-secret-0002');
  });

  it('no secret, generated or provided, appears in the logs or in the database in the clear', async () => {
    expect(shown.length).toBeGreaterThan(3);
    const { rows } = await db.query<{ dump: string }>(
      `SELECT json_agg(row_to_json(t))::text AS dump FROM ${db.schema.webhook_secrets} t`,
    );
    const sources = { logs: log.text(), 'db:webhook_secrets': rows[0]!.dump };
    expect(log.lines()).toBeGreaterThan(10);
    for (const secret of shown) expect(findLeaks(secret, sources)).toEqual([]);
  });
});
