/**
 * Webhook deliveries as triggers on the embedded default (PGlite, one connection): the store's
 * statements and the migration's partial unique index work there as on PostgreSQL — recorded,
 * armed, coalesced, duplicate, remembered during a live run and armed once it ends, tombstoned;
 * the secret sealed, rotated and accepted within its grace.
 */
import { afterEach, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { ManualClock } from '../../src/clock.js';
import { PgliteDb } from '../../src/db/pglite.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { readGithubDelivery } from '../../src/planning/githubWebhooks.js';
import { armRememberedRuns, receiveDeliveryInTx, recordRejectedDelivery } from '../../src/planning/webhooks.js';
import { SecretKey } from '../../src/secrets/key.js';
import {
  createWebhookSecret,
  loadAcceptedWebhookSecrets,
  signWebhookBody,
  verifyWebhookSignature,
} from '../../src/secrets/webhookSecrets.js';
import { getIntegration } from '../../src/store/integrations.js';
import { countingDb } from '../helpers/countingDb.js';
import { testSettings } from '../helpers/engine.js';

let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
});

function delivery(id: string, event: string, payload: Record<string, unknown>) {
  const body = Buffer.from(JSON.stringify(payload));
  return readGithubDelivery({ 'x-github-event': event, 'x-github-delivery': id }, body);
}

const issue = (repo: string, number: number, action = 'edited') => ({
  action,
  issue: { number },
  repository: { full_name: repo },
});

it('records, arms, coalesces, remembers and tombstones on PGlite', async () => {
  const clock = new ManualClock(new Date('2026-03-02T10:00:00Z'));
  engine = await Engine.open({
    settings: testSettings({ secretKey: SecretKey.generate() }),
    db: await PgliteDb.open(),
    broker: new InProcessBroker(),
    clock,
    logger: silentLogger(),
  });
  const e = engine;
  const db = e.db;
  const { id } = await e.createIntegration({
    orgId: 'o',
    provider: 'github',
    name: 'gh',
    sources: ['acme/a', 'acme/b'],
    datasets: ['work-items', 'pull-requests'],
    config: {},
  });
  const receive = (d: ReturnType<typeof delivery>) =>
    db.transaction((tx) => receiveDeliveryInTx(tx, e.ctx, { provider: 'github', integrationId: id }, d));
  /** A delivery received, and the statements it took (BEGIN and COMMIT aside). */
  const counted = async (d: ReturnType<typeof delivery>) => {
    const c = countingDb(db);
    const got = await c.db.transaction((tx) =>
      receiveDeliveryInTx(tx, e.ctx, { provider: 'github', integrationId: id }, d),
    );
    return { got, statements: c.statements.length };
  };

  // The secret: sealed, accepted; rotated, the old one accepted within its grace only.
  const target = { orgId: 'o', integrationId: id };
  const grace = { rotate: true, graceMs: 60_000 };
  const first = await db.transaction((tx) =>
    createWebhookSecret(tx, e.ctx.secrets, target, { rotate: false, graceMs: 0 }, clock.now()),
  );
  expect(
    await db.transaction((tx) =>
      createWebhookSecret(tx, e.ctx.secrets, target, { rotate: false, graceMs: 0 }, clock.now()),
    ),
  ).toBeNull();
  const second = await db.transaction((tx) => createWebhookSecret(tx, e.ctx.secrets, target, grace, clock.now()));
  const body = Buffer.from('{}');
  const accepted = async (secret: string) =>
    verifyWebhookSignature(
      body,
      signWebhookBody(body, secret),
      await loadAcceptedWebhookSecrets(db, e.ctx.secrets, id, clock.now()),
    );
  expect(await accepted(second!.secret)).toBe(true);
  expect(await accepted(first!.secret)).toBe(true);
  clock.set(new Date('2026-03-02T10:01:01Z'));
  expect(await accepted(first!.secret)).toBe(false);

  // Armed, then coalesced into the planned run; a redelivery is a duplicate.
  const armed = await receive(delivery('d1', 'issues', issue('acme/a', 1)));
  expect(armed).toMatchObject({ duplicate: false, outcome: 'armed' });
  // Joining takes two statements: what the route depends on, and the row with its outcome.
  expect(await counted(delivery('d2', 'issues', issue('ACME/A', 2)))).toMatchObject({
    got: { outcome: 'coalesced', syncRunId: armed!.syncRunId },
    statements: 2,
  });
  expect(await receive(delivery('d1', 'issues', issue('acme/a', 1)))).toMatchObject({ duplicate: true });
  const integration = (await getIntegration(db, id))!;
  await db.transaction((tx) =>
    recordRejectedDelivery(tx, integration, { deliveryId: null, event: 'issues', reason: 'bad' }, clock.now()),
  );

  // The same source, datasets that run does not read, while it is live: remembered; armed once the
  // source is free. Another source meanwhile has a run of its own.
  // Remembering too: the row and the remembered read are one statement.
  expect(await counted(delivery('d3', 'pull_request', { ...issue('acme/a', 4), issue: { number: 4 } }))).toMatchObject({
    got: { outcome: 'pending', syncRunId: null },
    statements: 2,
  });
  const other = await receive(delivery('d5', 'issues', issue('acme/b', 5)));
  expect(other).toMatchObject({ outcome: 'armed' });
  expect(await armRememberedRuns(db, e.ctx, 10)).toBe(0);
  await db.query(`UPDATE ${db.schema.sync_runs} SET status = 'success' WHERE id = $1`, [armed!.syncRunId]);
  expect(await armRememberedRuns(db, e.ctx, 10)).toBe(1);
  expect(await armRememberedRuns(db, e.ctx, 10)).toBe(0);

  // issues.deleted tombstones the stored issue.
  await db.query(
    `INSERT INTO ${db.schema.table('work_items')}
       (org_id, integration_id, provider, external_id, container, last_synced_at)
     VALUES ('o', $1, 'github', 'acme/b#9', 'acme/b', now())`,
    [id],
  );
  await receive(delivery('d4', 'issues', issue('acme/b', 9, 'deleted')));
  const { rows: items } = await db.query<{ deleted_at: Date | null }>(
    `SELECT deleted_at FROM ${db.schema.table('work_items')} WHERE external_id = 'acme/b#9'`,
  );
  expect(items[0]!.deleted_at).toBeInstanceOf(Date);

  const { rows } = await db.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM ${db.schema.webhook_deliveries} GROUP BY status ORDER BY status`,
  );
  expect(rows).toEqual([
    { status: 'duplicate', n: 1 },
    { status: 'received', n: 5 },
    { status: 'rejected', n: 1 },
  ]);
  const { rows: runs } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${db.schema.sync_runs} WHERE triggered_by = 'webhook'`,
  );
  expect(runs[0]!.n).toBe(3);
  const { rows: jobRuns } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${db.schema.job_runs} WHERE triggered_by = 'webhook'`,
  );
  expect(jobRuns[0]!.n).toBe(3);
});
