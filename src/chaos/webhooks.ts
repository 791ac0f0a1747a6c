/**
 * `syncrelay chaos --provider github|linear|jira --webhooks`: an API server of the chaos run (in this
 * process, on connections named as the run's engine connections, so pg-terminate cuts them too,
 * through the run's PgBouncer if any) and a producer posting signed deliveries of the run's provider
 * at it (GitHub `issues`, Linear `Issue`, Jira `jira:issue_updated`, each naming an issue of the
 * emulator) for the run's integration while the faults happen, a share of them redeliveries of an
 * earlier id. An answer other than 202 (a fault reached the API) leaves the delivery
 * unacknowledged: the provider sends it again, and so does the producer, after the faults too,
 * until each one has had its 202. The producer keeps what the API answered: the invariant
 * (./checkWebhooks.ts) holds the rows to it.
 */
import { InProcessBroker } from '../broker/inprocess.js';
import { loadSettings } from '../config.js';
import { openDb } from '../db/open.js';
import type { Db } from '../db/types.js';
import { Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import { silentLogger } from '../logger.js';
import { createWebhookSecret } from '../secrets/webhookSecrets.js';
import { engineDbSettings } from './database.js';
import { CHILD_SETTINGS } from './options.js';
import type { Rng } from './random.js';
import type { Resources } from './setup.js';
import type { ChaosTarget } from './targets/index.js';
import { deliveryBuilder } from './webhookDeliveries.js';
import { issueCatalog } from './webhookIssues.js';
import { WebhookProducer } from './webhooksProducer.js';

/** The debounce the chaos API arms runs with (SYNC_WEBHOOK_DEBOUNCE_SECONDS). */
export const CHAOS_WEBHOOK_DEBOUNCE_MS = 1000;
/** New deliveries per second while the faults run. */
export const CHAOS_WEBHOOKS_PER_SECOND = 6;
/** The share of posts that send an earlier delivery again. */
export const CHAOS_REDELIVERY_SHARE = 0.1;
/** How long after the faults unacknowledged deliveries are sent again. */
const REDELIVER_FOR_MS = 60_000;

/** An HTTP API server on 127.0.0.1 over `engine` (the chaos command hands in the API's own). */
export type ApiServerStarter = (engine: Engine) => Promise<{ url: string; close(): Promise<void> }>;

export interface WebhookChaos {
  integrationId: string;
  producer: WebhookProducer;
  /** Stops the producer and sends every unacknowledged delivery again until it is acknowledged. */
  finish(signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** Starts the API server and makes the integration's webhook secret; the producer waits for `start()`. */
export async function startWebhookChaos(
  r: Resources,
  integration: { id: string; sources: readonly string[] },
  orgId: string,
  rng: Rng,
  startApiServer: ApiServerStarter,
): Promise<WebhookChaos> {
  if (!r.target) throw new ValidationError('--webhooks', 'needs --provider (github, linear or jira)');
  const target: Pick<ChaosTarget, 'provider' | 'integration'> = {
    provider: r.target.provider,
    integration: { ...r.target.integration, sources: [...integration.sources] },
  };
  // Before the faults: the emulator lists each source's issues while it is quiet.
  const issues = await issueCatalog(target);
  // Through the run's PgBouncer, if any, as the engine processes are.
  const route = { server: r.serverUrl, pooler: r.pooler?.clientUrl() ?? null };
  const settings = loadSettings({
    ...CHILD_SETTINGS,
    ...r.settings,
    ...engineDbSettings(route, r.names.database, `${r.names.enginePrefix}api`),
    SYNC_WEBHOOK_DEBOUNCE_SECONDS: String(CHAOS_WEBHOOK_DEBOUNCE_MS / 1000),
  });
  const db = await openDb(settings, { poolSize: 6 });
  let engine: Engine | null = null;
  let server: Awaited<ReturnType<ApiServerStarter>> | null = null;
  const close = async () => {
    await server?.close().catch(() => undefined);
    await engine?.close().catch(() => undefined);
    await db.close().catch(() => undefined);
  };
  try {
    // The API only writes rows and outbox rows; the run's reconcilers relay them.
    engine = await Engine.open({ settings, db, broker: new InProcessBroker(), logger: silentLogger(), migrate: false });
    server = await startApiServer(engine);
    const secret = await makeSecret(engine, orgId, integration.id);
    const producer = new WebhookProducer({
      url: `${server.url}/api/v1/webhooks/${target.provider}/${integration.id}`,
      builder: deliveryBuilder(target.provider, secret),
      issues,
      rng,
      perSecond: CHAOS_WEBHOOKS_PER_SECOND,
      redeliveryShare: CHAOS_REDELIVERY_SHARE,
    });
    return {
      integrationId: integration.id,
      producer,
      async finish(signal) {
        await producer.stop();
        await producer.redeliverUnacknowledged(Date.now() + REDELIVER_FOR_MS, signal);
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

async function makeSecret(engine: Engine, orgId: string, integrationId: string): Promise<string> {
  const made = await engine.db.transaction((tx) =>
    createWebhookSecret(tx, engine.ctx.secrets, { orgId, integrationId }, { rotate: false, graceMs: 0 }, new Date()),
  );
  if (!made) throw new Error(`integration ${integrationId} has a webhook secret already`);
  return made.secret;
}

/**
 * Waits until nothing a delivery asked for is still to come: no remembered run left and no run of
 * the org planned or dispatching, in one snapshot (arming takes the remembered rows and plans the
 * run in one transaction). Returns whether that was reached before `deadline`.
 */
export async function settleWebhooks(
  db: Db,
  orgId: string,
  integrationId: string,
  deadline: number,
  signal: AbortSignal,
): Promise<boolean> {
  while (Date.now() < deadline && !signal.aborted) {
    const { rows } = await db.query<{ pending: number; open: number }>(
      `SELECT (SELECT count(*)::int FROM ${db.schema.webhook_pending_runs} WHERE integration_id = $2) AS pending,
              (SELECT count(*)::int FROM ${db.schema.sync_runs}
                WHERE org_id = $1 AND status IN ('planned', 'dispatching')) AS open`,
      [orgId, integrationId],
    );
    if (rows[0]!.pending === 0 && rows[0]!.open === 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}
