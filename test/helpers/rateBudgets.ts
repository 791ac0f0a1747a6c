/**
 * Hand-made budgets for the tests of the operator's budget view (store, API, CLI): an integration
 * with a credential row (sealed bytes never opened here), its budget's holder, and units deferred by
 * a rate limit, written straight into the tables with known times.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../../src/db/types.js';
import { insertIntegration } from '../../src/store/integrations.js';
import { seedRun, seedUnits } from '../store/seed.js';

export interface SeededCredential {
  integrationId: string;
  /** The budget holder units of this integration record: `<credential row id>.v<version>`. */
  holder: string;
}

/**
 * An integration of `orgId` named `name` with a credential row at `version`, sealed (it says) under
 * the key of id `keyId` (a process starting on the database checks that it holds that key).
 */
export async function seedCredentialedIntegration(
  db: Db,
  orgId: string,
  name: string,
  opts: { provider?: string; version?: number; keyId?: string } = {},
): Promise<SeededCredential> {
  const { provider = 'github', version = 1, keyId = '0123456789abcdef' } = opts;
  const integration = await insertIntegration(db, { orgId, provider, name, config: {} }, new Date());
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO ${db.schema.integration_credentials}
       (org_id, integration_id, version, key_id, nonce, ciphertext, auth_tag)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
    [orgId, integration.id, version, keyId, randomBytes(12), randomBytes(20), randomBytes(16)],
  );
  return { integrationId: integration.id, holder: `${rows[0]!.id}.v${version}` };
}

/** A GitHub integration signing as App `appId` (installation `installationId` when given). */
export async function seedAppIntegration(
  db: Db,
  orgId: string,
  name: string,
  appId: number,
  installationId: number | null,
): Promise<string> {
  const config = { auth: 'app', appId, ...(installationId === null ? { owner: 'acme' } : { installationId }) };
  return (await insertIntegration(db, { orgId, provider: 'github', name, config }, new Date())).id;
}

export interface LimitedUnit {
  deferrals: number;
  firstSeenAt: Date;
  /** Waiting now (retrying for a rate limit) and due then; else it ran on (succeeded). */
  dueAt: Date | null;
}

/** Units of the integration's run deferred by rate limits. Returns their ids in order. */
export async function seedLimitedUnits(
  db: Db,
  i: { orgId: string; integrationId: string },
  units: readonly LimitedUnit[],
): Promise<string[]> {
  const runId = await seedRun(db, i);
  return seedUnits(
    db,
    i,
    runId,
    units.map((u) => ({
      provider: 'github',
      set: {
        status: u.dueAt ? 'retrying' : 'success',
        last_retry_reason: 'rate_limit',
        rate_limit_deferrals: u.deferrals,
        rate_limit_first_seen_at: u.firstSeenAt,
        available_at: u.dueAt,
      },
    })),
  );
}
