/**
 * GitHub webhooks over HTTP (in process, real PostgreSQL, no worker): the signature is the only
 * authentication, checked on the raw body; an unknown integration answers exactly like a bad
 * signature and writes nothing; a valid delivery is recorded and arms a run of its source in the
 * same transaction; redeliveries and deliveries within the debounce arm nothing new; one that comes
 * during a live run arms exactly one run once it ends; `issues.deleted` tombstones; the secret is
 * generated, shown once, rotated with a grace period and never logged.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keptSigners } from '../../src/api/webhookSigners.js';
import type { Db } from '../../src/db/types.js';
import { Engine } from '../../src/engine.js';
import { createWebhookSecret, signWebhookBody } from '../../src/secrets/webhookSecrets.js';
import { findLeaks } from '../helpers/leakScan.js';
import { isErrorShape, ORG_A, SYNTHETIC } from './helpers.js';
import { openWebhookApp, type WebhookApp } from './webhookApp.js';

const REPOS = ['acme/widgets', 'acme/gears'] as const;
const DATASETS = ['work-items', 'work-item-comments', 'pull-requests', 'pull-request-reviews'];

let w: WebhookApp;
let db: Db;
let engine: Engine;
let app: FastifyInstance;
let log: WebhookApp['log'];
/** Every secret the tests were shown, for the leak scan. */
const shown: string[] = [];

beforeAll(async () => {
  w = await openWebhookApp();
  ({ db, engine, app, log } = w);
});
afterAll(async () => {
  await w?.close();
});

const api: WebhookApp['api'] = (method, url, body) => w.api(method, url, body);

async function githubIntegration(name: string): Promise<string> {
  const res = await api('POST', '/api/v1/integrations', {
    provider: 'github',
    name,
    sources: REPOS,
    datasets: DATASETS,
    config: {},
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

async function newSecret(id: string, rotate?: boolean): Promise<string> {
  const res = await api(
    'POST',
    `/api/v1/integrations/${id}/webhook-secret`,
    rotate === undefined ? undefined : { rotate },
  );
  expect(res.status, res.text).toBe(201);
  const secret = res.body.secret as string;
  expect(secret).toMatch(/^[0-9a-f]{64}$/);
  shown.push(secret);
  return secret;
}

let seq = 0;
function issuesPayload(repo: string, number: number, action = 'edited'): Record<string, unknown> {
  const [owner] = repo.split('/');
  return {
    action,
    issue: { id: 1000 + number, number, title: `Issue ${number}`, state: 'open', updated_at: new Date().toISOString() },
    repository: { id: 42, name: repo.split('/')[1], full_name: repo, owner: { login: owner } },
    sender: { login: 'octocat', id: 1 },
  };
}

interface Delivery {
  secret?: string | null;
  event?: string | null;
  deliveryId?: string | null;
  body?: string;
  signature?: string;
  contentType?: string;
}

async function deliver(id: string, d: Delivery) {
  const body = d.body ?? JSON.stringify(issuesPayload(REPOS[0], 1));
  const headers: Record<string, string> = { 'content-type': d.contentType ?? 'application/json' };
  if (d.signature !== undefined) headers['x-hub-signature-256'] = d.signature;
  else if (d.secret) headers['x-hub-signature-256'] = signWebhookBody(body, d.secret);
  if (d.event !== null) headers['x-github-event'] = d.event ?? 'issues';
  if (d.deliveryId !== null) headers['x-github-delivery'] = d.deliveryId ?? `delivery-${++seq}-${Date.now()}`;
  const res = await app.inject({ method: 'POST', url: `/api/v1/webhooks/github/${id}`, headers, payload: body });
  return { status: res.statusCode, text: res.body, body: res.json<Record<string, unknown>>() };
}

async function count(table: string, where = 'true', values: unknown[] = []): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${db.schema.table(table)} WHERE ${where}`,
    values,
  );
  return rows[0]!.n;
}

async function webhookRuns(id: string): Promise<{ id: string; status: string; result: Record<string, unknown> }[]> {
  const { rows } = await db.query<{ id: string; status: string; result: Record<string, unknown> }>(
    `SELECT id, status, result FROM ${db.schema.sync_runs} WHERE integration_id = $1 AND triggered_by = 'webhook'
      ORDER BY created_at`,
    [id],
  );
  return rows;
}

async function sourceId(integrationId: string, key: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM ${db.schema.integration_sources} WHERE integration_id = $1 AND external_key = $2`,
    [integrationId, key],
  );
  return rows[0]!.id;
}

/** Every row of every table, counted: what a refused delivery must not change. */
async function everything(): Promise<string> {
  const tables = ['webhook_deliveries', 'webhook_pending_runs', 'sync_runs', 'sync_dispatch_outbox', 'job_runs'];
  return (await Promise.all(tables.map((name) => count(name)))).join(',');
}

describe('signature', () => {
  let id = '';
  let secret = '';
  beforeAll(async () => {
    id = await githubIntegration('signatures');
    secret = await newSecret(id);
  });

  it('a missing, malformed or wrong signature is a 401 and writes nothing', async () => {
    const before = await everything();
    const cases: Delivery[] = [
      {},
      { signature: 'sha256=' },
      { signature: `sha1=${'0'.repeat(40)}` },
      { signature: `sha256=${'0'.repeat(64)}` },
      { secret: 'another-secret' },
      { signature: signWebhookBody('{"other":"body"}', secret) },
    ];
    for (const c of cases) {
      const res = await deliver(id, c);
      expect(res.status, res.text).toBe(401);
      expect(isErrorShape(res.body)).toBe(true);
      expect((res.body.error as { code: string }).code).toBe('invalid_signature');
    }
    expect(await everything()).toBe(before);
  });

  it('an unknown, non-GitHub or secretless integration answers exactly like a bad signature', async () => {
    const bad = await deliver(id, { secret: 'wrong' });
    const synthetic = await api('POST', '/api/v1/integrations', SYNTHETIC);
    const noSecret = await githubIntegration('no secret');
    const before = await everything();
    for (const target of [
      '00000000-0000-4000-8000-000000000000',
      'not-a-uuid',
      synthetic.body.id as string,
      noSecret,
    ]) {
      const res = await deliver(target, { secret });
      expect(res.status).toBe(bad.status);
      expect(res.text).toBe(bad.text);
    }
    expect(await everything()).toBe(before);
  });

  it('a valid signature is accepted (202) and the delivery recorded', async () => {
    const res = await deliver(id, { secret });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ status: 'accepted', duplicate: false });
    expect(await count('webhook_deliveries', 'id = $1 AND status = $2', [res.body.id, 'received'])).toBe(1);
  });

  it('a body over 1 MiB is a 413', async () => {
    const body = JSON.stringify({ action: 'edited', pad: 'x'.repeat(1024 * 1024) });
    const before = await everything();
    const res = await deliver(id, { secret, body });
    expect(res.status).toBe(413);
    expect(isErrorShape(res.body)).toBe(true);
    expect(await everything()).toBe(before);
  });

  it('a signed delivery without event or id, or not a JSON object, is a 400 recorded rejected', async () => {
    const cases: Delivery[] = [
      { secret, event: null },
      { secret, deliveryId: null },
      { secret, body: '{"action": "edited",' },
      { secret, body: '[1, 2]' },
    ];
    for (const c of cases) {
      const before = await count('webhook_deliveries', 'integration_id = $1 AND status = $2', [id, 'rejected']);
      const res = await deliver(id, c);
      expect(res.status, res.text).toBe(400);
      expect(isErrorShape(res.body)).toBe(true);
      expect(await count('webhook_deliveries', 'integration_id = $1 AND status = $2', [id, 'rejected'])).toBe(
        before + 1,
      );
    }
    expect(
      await count('webhook_deliveries', 'integration_id = $1 AND status = $2 AND sync_run_id IS NOT NULL', [
        id,
        'rejected',
      ]),
    ).toBe(0);
  });

  it('another content type is refused before anything is read', async () => {
    const res = await deliver(id, { secret, contentType: 'text/plain' });
    expect(res.status).toBe(415);
  });
});

describe('triggers', () => {
  it('arms a run of the named source only, with the event’s datasets, in the delivery’s transaction', async () => {
    const id = await githubIntegration('arming');
    const secret = await newSecret(id);
    const res = await deliver(id, { secret, body: JSON.stringify(issuesPayload('Acme/Widgets', 3)) });
    expect(res.status, res.text).toBe(202);
    expect(res.body.outcome).toBe('armed');
    const runs = await webhookRuns(id);
    expect(runs.map((r) => r.id)).toEqual([res.body.sync_run_id]);
    const { rows: units } = await db.query<{ source_id: string | null; dataset_key: string }>(
      `SELECT source_id, dataset_key FROM ${db.schema.sync_run_units} WHERE sync_run_id = $1`,
      [res.body.sync_run_id],
    );
    expect(units.length).toBeGreaterThan(0);
    expect(new Set(units.map((u) => u.source_id))).toEqual(new Set([await sourceId(id, 'acme/widgets')]));
    expect(units.map((u) => u.dataset_key)).toEqual(['work-items']);
    // The dispatch waits for the debounce.
    const { rows } = await db.query<{ available_at: Date }>(
      `SELECT available_at FROM ${db.schema.sync_dispatch_outbox} WHERE sync_run_id = $1`,
      [res.body.sync_run_id],
    );
    expect(rows[0]!.available_at.getTime()).toBeGreaterThan(Date.now() + 2000);
  });

  it('an event it does not map, or a repository it does not sync, is recorded and arms nothing', async () => {
    const id = await githubIntegration('ignored');
    const secret = await newSecret(id);
    const ping = await deliver(id, {
      secret,
      event: 'ping',
      body: JSON.stringify({ zen: 'Keep it simple.', hook_id: 1 }),
    });
    const other = await deliver(id, { secret, body: JSON.stringify(issuesPayload('someone/else', 1)) });
    for (const res of [ping, other]) {
      expect(res.status, res.text).toBe(202);
      expect(res.body).toMatchObject({ outcome: 'ignored', sync_run_id: null });
    }
    expect(await webhookRuns(id)).toEqual([]);
    expect(await count('webhook_deliveries', 'integration_id = $1 AND status = $2', [id, 'received'])).toBe(2);
  });

  it('a redelivered id arms nothing new and is recorded duplicate', async () => {
    const id = await githubIntegration('duplicates');
    const secret = await newSecret(id);
    const first = await deliver(id, { secret, deliveryId: 'dup-1' });
    const again = await deliver(id, { secret, deliveryId: 'dup-1' });
    expect(first.body).toMatchObject({ duplicate: false, outcome: 'armed' });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ duplicate: true, outcome: null, sync_run_id: null });
    expect(await webhookRuns(id)).toHaveLength(1);
    expect(await count('webhook_deliveries', 'integration_id = $1 AND status = $2', [id, 'duplicate'])).toBe(1);
  });

  it('deliveries for one source within the debounce coalesce into one run', async () => {
    const id = await githubIntegration('debounce');
    const secret = await newSecret(id);
    const a = await deliver(id, { secret, body: JSON.stringify(issuesPayload(REPOS[0], 1)) });
    const b = await deliver(id, { secret, body: JSON.stringify(issuesPayload(REPOS[0], 2)) });
    const c = await deliver(id, {
      secret,
      event: 'issues',
      body: JSON.stringify(issuesPayload(REPOS[0], 3, 'labeled')),
    });
    expect(a.body.outcome).toBe('armed');
    expect(b.body).toMatchObject({ outcome: 'coalesced', sync_run_id: a.body.sync_run_id });
    expect(c.body).toMatchObject({ outcome: 'coalesced', sync_run_id: a.body.sync_run_id });
    expect(await webhookRuns(id)).toHaveLength(1);
  });

  it('many deliveries at once over several repositories: every one 202, one run armed per repository', async () => {
    const repos = Array.from({ length: 8 }, (_, i) => `acme/many-${i}`);
    const res = await api('POST', '/api/v1/integrations', {
      provider: 'github',
      name: 'concurrent',
      sources: repos,
      datasets: DATASETS,
      config: {},
    });
    expect(res.status, res.text).toBe(201);
    const id = res.body.id as string;
    const secret = await newSecret(id);
    const answers = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        deliver(id, { secret, body: JSON.stringify(issuesPayload(repos[i % repos.length]!, 1 + i)) }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 202));
    const outcomes = answers.map((a) => a.body.outcome as string);
    expect(outcomes.filter((o) => !['armed', 'coalesced', 'pending'].includes(o))).toEqual([]);
    // Each repository: one run armed (the cap of live runs leaves the rest remembered).
    const armed = answers.filter((a) => a.body.outcome === 'armed').map((a) => a.body.sync_run_id);
    expect(new Set(armed).size).toBe(armed.length);
    expect(armed.length).toBeGreaterThan(0);
    expect(armed.length).toBeLessThanOrEqual(engine.ctx.settings.integrationMaxLiveRuns);
    expect(await count('webhook_deliveries', 'integration_id = $1 AND status = $2', [id, 'received'])).toBe(80);
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(DISTINCT s.external_key)::int AS n FROM ${db.schema.sync_run_units} u
         JOIN ${db.schema.integration_sources} s ON s.id = u.source_id
         JOIN ${db.schema.sync_runs} r ON r.id = u.sync_run_id
        WHERE r.integration_id = $1`,
      [id],
    );
    const remembered = await count('webhook_pending_runs', 'integration_id = $1', [id]);
    expect(rows[0]!.n + remembered).toBe(repos.length);
  });

  it('a delivery during a live run is remembered and arms exactly one run once that run ends', async () => {
    const id = await githubIntegration('live run');
    const secret = await newSecret(id);
    const live = await api('POST', `/api/v1/integrations/${id}/sync`, { mode: 'incremental' });
    expect(live.status, live.text).toBe(202);
    const one = await deliver(id, { secret, body: JSON.stringify(issuesPayload(REPOS[1], 1)) });
    const two = await deliver(id, {
      secret,
      event: 'pull_request',
      body: JSON.stringify({ ...issuesPayload(REPOS[1], 2, 'opened'), issue: undefined, pull_request: { number: 2 } }),
    });
    for (const res of [one, two]) expect(res.body).toMatchObject({ outcome: 'pending', sync_run_id: null });
    expect(await count('webhook_pending_runs', 'integration_id = $1', [id])).toBe(1);

    // While the run is live, a pass arms nothing.
    await engine.reconcileOnce();
    expect(await webhookRuns(id)).toEqual([]);

    await engine.cancel(live.body.sync_run_id as string);
    await engine.reconcileOnce();
    await engine.reconcileOnce();
    const runs = await webhookRuns(id);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.result).toMatchObject({
      sources: [await sourceId(id, REPOS[1])],
      datasets: ['pull-requests', 'work-items'],
    });
    expect(await count('webhook_pending_runs', 'integration_id = $1', [id])).toBe(0);
    expect(
      await count('webhook_deliveries', 'integration_id = $1 AND outcome = $2 AND sync_run_id = $3', [
        id,
        'armed',
        runs[0]!.id,
      ]),
    ).toBe(2);
  });

  it('issues.deleted marks the stored issue deleted in the delivery’s transaction', async () => {
    const id = await githubIntegration('deletions');
    const secret = await newSecret(id);
    for (const n of [7, 8]) {
      await db.query(
        `INSERT INTO ${db.schema.table('work_items')}
           (org_id, integration_id, provider, external_id, container, number, title, type, status, created_at,
            updated_at, last_synced_at, raw)
         VALUES ($1, $2, 'github', $3, $4, $5, 't', 'issue', 'todo', now(), now(), now(), '{}')`,
        [ORG_A, id, `${REPOS[0]}#${n}`, REPOS[0], String(n)],
      );
    }
    const res = await deliver(id, { secret, body: JSON.stringify(issuesPayload(REPOS[0], 7, 'deleted')) });
    expect(res.status, res.text).toBe(202);
    const { rows } = await db.query<{ external_id: string; deleted_at: Date | null }>(
      `SELECT external_id, deleted_at FROM ${db.schema.table('work_items')}
        WHERE integration_id = $1 ORDER BY external_id`,
      [id],
    );
    expect(rows.map((r) => [r.external_id, r.deleted_at !== null])).toEqual([
      [`${REPOS[0]}#7`, true],
      [`${REPOS[0]}#8`, false],
    ]);
  });
});

describe('webhook secret', () => {
  it('is shown once: a second request without rotate is a 409; a synthetic integration a 422; others 404', async () => {
    const id = await githubIntegration('secret once');
    await newSecret(id);
    const again = await api('POST', `/api/v1/integrations/${id}/webhook-secret`, {});
    expect(again.status).toBe(409);
    expect((again.body.error as { code: string }).code).toBe('webhook_secret_exists');
    const synthetic = await api('POST', '/api/v1/integrations', SYNTHETIC);
    const refused = await api('POST', `/api/v1/integrations/${synthetic.body.id as string}/webhook-secret`);
    expect(refused.status).toBe(422);
    const missing = await api('POST', '/api/v1/integrations/00000000-0000-4000-8000-000000000000/webhook-secret');
    expect(missing.status).toBe(404);
    const view = await api('GET', `/api/v1/integrations/${id}`);
    for (const secret of shown) expect(view.text).not.toContain(secret);
  });

  it('after a rotation the previous secret is accepted within the grace period only', async () => {
    const id = await githubIntegration('rotation');
    const old = await newSecret(id);
    const fresh = await newSecret(id, true);
    expect(fresh).not.toBe(old);
    expect((await deliver(id, { secret: fresh })).status).toBe(202);
    expect((await deliver(id, { secret: old })).status).toBe(202);
    await db.query(
      `UPDATE ${db.schema.webhook_secrets} SET previous_expires_at = now() - interval '1 second'
        WHERE integration_id = $1`,
      [id],
    );
    // The grace was ended behind the process's back: what it keeps of the secrets goes too (a grace
    // that ends with time is honoured within SIGNERS_TTL_MS).
    keptSigners.forget(id);
    expect((await deliver(id, { secret: old })).status).toBe(401);
    expect((await deliver(id, { secret: fresh })).status).toBe(202);
    // A second rotation drops the first secret for good.
    const third = await newSecret(id, true);
    expect((await deliver(id, { secret: fresh })).status).toBe(202);
    expect((await deliver(id, { secret: third })).status).toBe(202);
    expect((await deliver(id, { secret: old })).status).toBe(401);
  });

  it('a secret rotated outside this server (the CLI) is accepted at once, though the old one was kept', async () => {
    const id = await githubIntegration('rotated elsewhere');
    const old = await newSecret(id);
    expect((await deliver(id, { secret: old })).status).toBe(202);
    const made = await db.transaction((tx) =>
      createWebhookSecret(
        tx,
        engine.ctx.secrets,
        { orgId: ORG_A, integrationId: id },
        { rotate: true, graceMs: 0 },
        new Date(),
      ),
    );
    shown.push(made!.secret);
    expect((await deliver(id, { secret: made!.secret })).status).toBe(202);
  });

  it('no secret appears in the logs, in the database in the clear, or in another answer', async () => {
    expect(shown.length).toBeGreaterThan(3);
    const { rows } = await db.query<{ dump: string }>(
      `SELECT json_agg(row_to_json(t))::text AS dump FROM ${db.schema.webhook_secrets} t`,
    );
    const sources = { logs: log.text(), 'db:webhook_secrets': rows[0]!.dump };
    expect(log.lines()).toBeGreaterThan(10);
    for (const secret of shown) expect(findLeaks(secret, sources)).toEqual([]);
  });
});
