/**
 * The fuzzed server: the API in process (`app.inject`, no sockets) with the dashboard and
 * `/metrics`, over one cloned database, and a write counter that tells whether a request changed
 * any row of any table in that database.
 */
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../../src/api/server.js';
import { createApiToken } from '../../../src/api/tokens.js';
import { systemClock } from '../../../src/clock.js';
import { dashboardPlugin } from '../../../src/dashboard/index.js';
import type { Db } from '../../../src/db/types.js';
import { quoteIdent } from '../../../src/db/schema.js';
import { revokeApiToken } from '../../../src/store/apiTokens.js';
import { recordRateBudget } from '../../../src/store/rateBudgets.js';
import { budgetKeyOf } from '../../../src/domain/rateBudgetKeys.js';
import { SecretKey } from '../../../src/secrets/key.js';
import { openTestEngine, type TestEngine } from '../../helpers/engine.js';
import { ORG_A, ORG_B } from '../helpers.js';

export interface FuzzTokens {
  admin: string;
  trigger: string;
  read: string;
  /** Admin of the other org. */
  foreign: string;
  /** Revoked: every request with it is a 401. */
  revoked: string;
  /** The bearer token `/metrics` takes. */
  metrics: string;
}

export interface FuzzServer {
  app: FastifyInstance;
  db: Db;
  tokens: FuzzTokens;
  /** A GitHub integration of org A (one repository, work items) for the webhook routes. */
  github: string;
  /** Org A's Linear (team ENG) and Jira (project PROJ) integrations, for theirs. */
  linear: string;
  jira: string;
  /** Keys of a rate budget of org A and one of org B, for the budget history route. */
  budgets: { own: string; foreign: string };
  /** Rows changed so far (inserted, updated, deleted, truncated) in any table, by committed writes. */
  writes(): Promise<number>;
  /** One reconciler pass (outbox relayed, passes recorded): what the answers report changes. */
  reconcile(): Promise<void>;
  close(): Promise<void>;
}

const AUDIT = 'fuzz_audit';

/**
 * Counts every committed row change in every table of the database (ours excepted): a row trigger
 * on each bumps one counter in the writing transaction, so a rolled-back write counts nothing. An
 * update of a token's `last_used_at` alone is authentication bookkeeping, not an effect of the
 * request, and is not counted.
 */
async function installWriteCounter(db: Db): Promise<void> {
  await db.query(`CREATE SCHEMA ${AUDIT}`);
  await db.query(`CREATE TABLE ${AUDIT}.writes (n bigint NOT NULL)`);
  await db.query(`INSERT INTO ${AUDIT}.writes (n) VALUES (0)`);
  await db.query(`CREATE FUNCTION ${AUDIT}.count_write() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'UPDATE' AND to_jsonb(OLD) - TG_ARGV::text[] = to_jsonb(NEW) - TG_ARGV::text[] THEN
        RETURN NULL;
      END IF;
      UPDATE ${AUDIT}.writes SET n = n + 1;
      RETURN NULL;
    END $$`);
  const { rows } = await db.query<{ schema: string; name: string }>(
    `SELECT n.nspname AS schema, c.relname AS name
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND n.nspname NOT IN ('pg_catalog', 'information_schema', $1) AND n.nspname NOT LIKE 'pg_toast%'`,
    [AUDIT],
  );
  if (rows.length < 10) throw new Error(`expected the install's tables, found ${rows.length}`);
  for (const t of rows) {
    const table = `${quoteIdent(t.schema)}.${quoteIdent(t.name)}`;
    const ignored = t.name === 'api_tokens' ? "'last_used_at'" : '';
    await db.query(`CREATE TRIGGER fuzz_count_rows AFTER INSERT OR UPDATE OR DELETE ON ${table}
                    FOR EACH ROW EXECUTE FUNCTION ${AUDIT}.count_write(${ignored})`);
    await db.query(`CREATE TRIGGER fuzz_count_truncate AFTER TRUNCATE ON ${table}
                    FOR EACH STATEMENT EXECUTE FUNCTION ${AUDIT}.count_write()`);
  }
}

export async function openFuzzServer(): Promise<FuzzServer> {
  // Small runs, so successful triggers stay cheap and larger ones meet the cap (422).
  const te: TestEngine = await openTestEngine({ settings: { runMaxUnits: 6, secretKey: SecretKey.generate() } });
  const db = te.t.db;
  try {
    await installWriteCounter(db);
    const metricsToken = 'fuzz-metrics-secret';
    const app = await buildServer({
      engine: te.engine,
      // Counted in process (the budgets' code runs) but never reached.
      rateLimit: { max: 1_000_000_000, timeWindowMs: 60_000, redisUrl: null },
      // The machine may be loaded: a slow probe must not turn /readyz into a 503.
      readinessTimeoutMs: 120_000,
      metricsToken,
      plugins: [dashboardPlugin()],
    });
    await app.ready();
    const token = async (orgId: string, scopes: string[]) =>
      (await createApiToken(db, systemClock, { orgId, scopes, name: scopes.join('+') })).token;
    const revoked = await createApiToken(db, systemClock, { orgId: ORG_A, scopes: ['admin'], name: 'revoked' });
    await revokeApiToken(db, revoked.row.id, systemClock.now());
    const tokens: FuzzTokens = {
      admin: await token(ORG_A, ['admin']),
      trigger: await token(ORG_A, ['trigger']),
      read: await token(ORG_A, ['read']),
      foreign: await token(ORG_B, ['admin']),
      revoked: revoked.token,
      metrics: metricsToken,
    };
    const create = async (spec: Record<string, unknown> & { provider: string }): Promise<string> => {
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/integrations',
        headers: { authorization: `Bearer ${tokens.admin}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'webhooks', ...spec }),
      });
      if (created.statusCode !== 201)
        throw new Error(`could not create the ${spec.provider} integration: ${created.body}`);
      return created.json<{ id: string }>().id;
    };
    const workItems = ['work-items', 'work-item-comments'];
    const github = await create({
      provider: 'github',
      sources: ['acme/widgets'],
      datasets: ['work-items', 'pull-requests'],
      config: {},
    });
    const linear = await create({ provider: 'linear', sources: ['ENG'], datasets: workItems, config: {} });
    const jira = await create({
      provider: 'jira',
      sources: ['PROJ'],
      datasets: workItems,
      config: { siteUrl: 'https://example.atlassian.net' },
    });
    const budget = async (orgId: string, credentialId: string) => {
      const observedAt = systemClock.now();
      const resetAt = new Date(observedAt.getTime() + 3_600_000);
      const o = { remaining: 0, limit: 5000, resetAt, limitedUntil: null, observedAt };
      await recordRateBudget(db, { orgId, provider: 'github', credentialId }, o, '-');
      return budgetKeyOf('github', credentialId);
    };
    const budgets = { own: await budget(ORG_A, 'fuzz-a.v1'), foreign: await budget(ORG_B, 'fuzz-b.v1') };
    return {
      app,
      db,
      tokens,
      github,
      linear,
      jira,
      budgets,
      async writes() {
        const { rows } = await db.query<{ n: string }>(`SELECT n FROM ${AUDIT}.writes`);
        return Number(rows[0]!.n);
      },
      async reconcile() {
        await te.engine.reconcileOnce();
      },
      async close() {
        await app.close();
        await te.close();
      },
    };
  } catch (err) {
    await te.close();
    throw err;
  }
}
