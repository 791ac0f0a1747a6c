/**
 * Stored credentials on real PostgreSQL: encrypted rows bound to their integration, key rotation
 * (all or nothing, repeatable), the start-up key check, and what a unit sees.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { createSyntheticProvider, syntheticSink } from '../../src/providers/synthetic.js';
import type { UnitContext } from '../../src/sdk/types.js';
import {
  checkCredentialKeys,
  loadUnitCredential,
  revealCredential,
  rotateCredentialKeys,
  storeCredential,
} from '../../src/secrets/credentials.js';
import { SecretError } from '../../src/secrets/errors.js';
import { createWebhookSecret, loadAcceptedWebhookSecrets } from '../../src/secrets/webhookSecrets.js';
import { SecretKey } from '../../src/secrets/key.js';
import { Keyring } from '../../src/secrets/keyring.js';
import { getCredential, type CredentialRow } from '../../src/store/credentials.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const SECRET = 'lin_api_StoredSecret_93be1c07';
const ORG = 'org-cred';
let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 4 });
});
afterAll(async () => {
  await t?.drop();
});

async function engineWith(keys: { key?: SecretKey; previous?: SecretKey }, registry?: ProviderRegistry) {
  return Engine.open({
    settings: testSettings({ secretKey: keys.key, secretKeyPrevious: keys.previous }),
    db: t.db,
    broker: new InProcessBroker(),
    logger: silentLogger(),
    registry,
    migrate: false,
  });
}

async function newIntegration(engine: Engine, credential?: string): Promise<string> {
  const created = await engine.createIntegration({
    orgId: ORG,
    provider: 'synthetic',
    name: 'cred test',
    sources: ['s1'],
    datasets: ['teams'],
    config: { itemsPerDay: 1 },
    credential,
  });
  return created.id;
}

async function row(integrationId: string): Promise<CredentialRow> {
  return (await getCredential(t.db, integrationId))!;
}

async function clearCredentials(): Promise<void> {
  await t.db.query(`DELETE FROM ${t.db.schema.integration_credentials}`);
}

function codeOf(err: unknown): string | undefined {
  return err instanceof SecretError ? err.code : undefined;
}

describe('storing', () => {
  it('stores the credential encrypted, bound to its integration, and replaces it in place', async () => {
    await clearCredentials();
    const key = SecretKey.generate();
    const engine = await engineWith({ key });
    try {
      const id = await newIntegration(engine, SECRET);
      const first = await row(id);
      expect(first.key_id).toBe(key.id);
      expect(first.version).toBe(1);
      expect(Buffer.from(first.ciphertext).toString('latin1')).not.toContain(SECRET);
      expect(revealCredential(engine.ctx.secrets, first)).toBe(SECRET);

      // A row copied onto another integration does not decrypt there.
      const other = await newIntegration(engine);
      await t.db.query(
        `INSERT INTO ${t.db.schema.integration_credentials}
           (org_id, integration_id, key_id, nonce, ciphertext, auth_tag)
         SELECT org_id, $2, key_id, nonce, ciphertext, auth_tag FROM ${t.db.schema.integration_credentials}
          WHERE integration_id = $1`,
        [id, other],
      );
      expect(() => revealCredential(engine.ctx.secrets, first)).not.toThrow();
      const copied = await row(other);
      let err: unknown;
      try {
        revealCredential(engine.ctx.secrets, copied);
      } catch (e) {
        err = e;
      }
      expect(codeOf(err)).toBe('secret_decrypt_failed');

      await t.db.transaction((tx) =>
        storeCredential(tx, engine.ctx.secrets, { orgId: ORG, integrationId: id, secret: `${SECRET}-2` }, new Date()),
      );
      const second = await row(id);
      expect(second.id).toBe(first.id);
      expect(second.version).toBe(2);
      expect(revealCredential(engine.ctx.secrets, second)).toBe(`${SECRET}-2`);
    } finally {
      await engine.close();
    }
  });

  it('without SYNCRELAY_SECRET_KEY (not embedded) refuses a credential, writing nothing', async () => {
    await clearCredentials();
    const engine = await engineWith({});
    try {
      const before = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.db.schema.integrations}`);
      const err = await newIntegration(engine, SECRET).catch((e: unknown) => e);
      expect(codeOf(err)).toBe('secret_key_missing');
      expect((err as Error).message).toContain('SYNCRELAY_SECRET_KEY');
      const after = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.db.schema.integrations}`);
      expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
      // Without a credential, creating and starting are fine.
      await newIntegration(engine);
    } finally {
      await engine.close();
    }
  });
});

describe('the start-up key check', () => {
  it('passes with no stored credential and no key; names SYNCRELAY_SECRET_KEY when they do not match', async () => {
    await clearCredentials();
    await checkCredentialKeys(t.db, new Keyring());
    const key = SecretKey.generate();
    const engine = await engineWith({ key });
    await newIntegration(engine, SECRET);
    await engine.close();

    const missing = await engineWith({}).catch((e: unknown) => e);
    expect(codeOf(missing)).toBe('secret_key_missing');
    expect((missing as Error).message).toContain('SYNCRELAY_SECRET_KEY');

    const other = SecretKey.generate();
    const wrong = await engineWith({ key: other }).catch((e: unknown) => e);
    expect(codeOf(wrong)).toBe('secret_key_unknown');
    expect((wrong as Error).message).toContain('SYNCRELAY_SECRET_KEY');
    expect((wrong as Error).message).toContain(key.id);
    expect((wrong as Error).message).not.toContain(key.toBase64());
    expect((wrong as Error).message).not.toContain(other.toBase64());

    // The old key as the previous one is enough to start (and to rotate).
    const rotating = await engineWith({ key: other, previous: key });
    await rotating.close();
  });

  it('after a lost key, a credential set again under the new key lets processes start', async () => {
    await clearCredentials();
    const lost = SecretKey.generate();
    const engine = await engineWith({ key: lost });
    const id = await newIntegration(engine, SECRET);
    await engine.close();
    const fresh = SecretKey.generate();
    expect(codeOf(await engineWith({ key: fresh }).catch((e: unknown) => e))).toBe('secret_key_unknown');
    const recovery = await Engine.open({
      settings: testSettings({ secretKey: fresh }),
      db: t.db,
      broker: new InProcessBroker(),
      logger: silentLogger(),
      migrate: false,
      checkSecretKeys: false,
    });
    await t.db.transaction((tx) =>
      storeCredential(tx, recovery.ctx.secrets, { orgId: ORG, integrationId: id, secret: SECRET }, new Date()),
    );
    await recovery.close();
    const started = await engineWith({ key: fresh });
    await started.close();
  });
});

describe('credentials rotate-key', () => {
  it('re-encrypts every credential under the new key in one transaction, and again does nothing', async () => {
    await clearCredentials();
    const oldKey = SecretKey.generate();
    const newKey = SecretKey.generate();
    const engine = await engineWith({ key: oldKey });
    const ids = [await newIntegration(engine, `${SECRET}-a`), await newIntegration(engine, `${SECRET}-b`)];
    await engine.close();

    // Without the old key nothing can be re-encrypted, and nothing is.
    const stuck = await rotateCredentialKeys(t.db, new Keyring({ key: newKey })).catch((e: unknown) => e);
    expect(codeOf(stuck)).toBe('secret_key_unknown');
    for (const id of ids) expect((await row(id)).key_id).toBe(oldKey.id);

    const ring = new Keyring({ key: newKey, previous: oldKey });
    expect(await rotateCredentialKeys(t.db, ring)).toEqual({
      keyId: newKey.id,
      reencrypted: 2,
      reencryptedWebhookSecrets: 0,
    });
    const onlyNew = new Keyring({ key: newKey });
    for (const [n, id] of ids.entries()) {
      const suffix = n === 0 ? 'a' : 'b';
      const r = await row(id);
      expect(r.key_id).toBe(newKey.id);
      expect(r.version).toBe(1);
      expect(revealCredential(onlyNew, r)).toBe(`${SECRET}-${suffix}`);
    }
    expect(await rotateCredentialKeys(t.db, ring)).toEqual({
      keyId: newKey.id,
      reencrypted: 0,
      reencryptedWebhookSecrets: 0,
    });
    expect(await rotateCredentialKeys(t.db, onlyNew)).toEqual({
      keyId: newKey.id,
      reencrypted: 0,
      reencryptedWebhookSecrets: 0,
    });
  });

  it('finishes a rotation cut short: rows already under the new key are skipped', async () => {
    await clearCredentials();
    const oldKey = SecretKey.generate();
    const newKey = SecretKey.generate();
    const engine = await engineWith({ key: oldKey });
    const a = await newIntegration(engine, `${SECRET}-a`);
    await engine.close();
    const later = await engineWith({ key: newKey, previous: oldKey });
    const b = await newIntegration(later, `${SECRET}-b`);
    await later.close();
    const ring = new Keyring({ key: newKey, previous: oldKey });
    expect(await rotateCredentialKeys(t.db, ring)).toEqual({
      keyId: newKey.id,
      reencrypted: 1,
      reencryptedWebhookSecrets: 0,
    });
    expect(revealCredential(new Keyring({ key: newKey }), await row(a))).toBe(`${SECRET}-a`);
    expect(revealCredential(new Keyring({ key: newKey }), await row(b))).toBe(`${SECRET}-b`);
  });
});

describe('what a unit sees', () => {
  it('ctx.credential: a non-secret id that changes on replacement, reveal() decrypting lazily', async () => {
    await clearCredentials();
    const key = SecretKey.generate();
    const seen: { id: string; value: string; bindings: string }[] = [];
    const synthetic = createSyntheticProvider();
    const registry = new ProviderRegistry().register(
      {
        ...synthetic,
        runUnit: async (ctx: UnitContext) => {
          if (ctx.credential) {
            seen.push({
              id: ctx.credential.id,
              value: ctx.credential.reveal(),
              bindings: JSON.stringify(ctx.logger.bindings()),
            });
          }
          return synthetic.runUnit(ctx);
        },
      },
      syntheticSink(t.db),
    );
    const engine = await engineWith({ key }, registry);
    try {
      const none = await newIntegration(engine);
      expect(await loadUnitCredential(t.db, engine.ctx.secrets, none)).toBeNull();
      const id = await newIntegration(engine, SECRET);
      const credential = (await loadUnitCredential(t.db, engine.ctx.secrets, id))!;
      expect(JSON.stringify(credential)).not.toContain(SECRET);
      expect(credential.reveal()).toBe(SECRET);

      engine.startWorker();
      await engine.startReconciler({ scheduler: false });
      const run = async () => {
        const r = await engine.trigger({ integrationId: id, orgId: ORG, mode: 'incremental', triggeredBy: 'manual' });
        await waitFor(async () => {
          const { rows } = await t.db.query<{ status: string }>(
            `SELECT status FROM ${t.db.schema.sync_runs} WHERE id = $1`,
            [r.syncRunId],
          );
          return rows[0]?.status === 'success';
        });
      };
      await run();
      expect(seen.length).toBeGreaterThan(0);
      const firstId = seen[0]!.id;
      expect(firstId).toMatch(/^[0-9a-f-]{36}\.v1$/);
      for (const s of seen) {
        expect(s.value).toBe(SECRET);
        expect(s.bindings).not.toContain(SECRET);
      }
      await t.db.transaction((tx) =>
        storeCredential(tx, engine.ctx.secrets, { orgId: ORG, integrationId: id, secret: `${SECRET}-new` }, new Date()),
      );
      seen.length = 0;
      await run();
      expect(seen.length).toBeGreaterThan(0);
      for (const s of seen) {
        expect(s.id).not.toBe(firstId);
        expect(s.id).toMatch(/\.v2$/);
        expect(s.value).toBe(`${SECRET}-new`);
      }
    } finally {
      await engine.close();
    }
  });

  it('a credential that cannot be decrypted fails reveal() with category auth, never quoting it', async () => {
    await clearCredentials();
    const key = SecretKey.generate();
    const engine = await engineWith({ key });
    try {
      const id = await newIntegration(engine, SECRET);
      await t.db.query(
        `UPDATE ${t.db.schema.integration_credentials} SET auth_tag = decode(repeat('00', 16), 'hex')
          WHERE integration_id = $1`,
        [id],
      );
      const credential = (await loadUnitCredential(t.db, engine.ctx.secrets, id))!;
      let err: unknown;
      try {
        credential.reveal();
      } catch (e) {
        err = e;
      }
      expect((err as { category?: string }).category).toBe('auth');
      expect((err as Error).message).toContain('secret_decrypt_failed');
      expect((err as Error).message).not.toContain(SECRET);
      expect(codeOf((err as Error).cause)).toBe('secret_decrypt_failed');
    } finally {
      await engine.close();
    }
  });
});

describe('credentials rotate-key and webhook secrets', () => {
  it('re-encrypts webhook secrets too: the current one, a previous one in grace; one past it is dropped', async () => {
    await clearCredentials();
    const oldKey = SecretKey.generate();
    const newKey = SecretKey.generate();
    const engine = await engineWith({ key: oldKey });
    const [inGrace, pastGrace] = [await newIntegration(engine), await newIntegration(engine)];
    await engine.close();
    const oldRing = new Keyring({ key: oldKey });
    const now = new Date();
    const make = (id: string, graceMs: number) =>
      t.db.transaction(async (tx) => {
        const target = { orgId: ORG, integrationId: id };
        const first = await createWebhookSecret(tx, oldRing, target, { rotate: false, graceMs }, now);
        const second = await createWebhookSecret(tx, oldRing, target, { rotate: true, graceMs }, now);
        return [second!.secret, first!.secret];
      });
    const kept = await make(inGrace, 3_600_000);
    const [current] = await make(pastGrace, 0);
    try {
      const ring = new Keyring({ key: newKey, previous: oldKey });
      const result = await rotateCredentialKeys(t.db, ring, new Date(now.getTime() + 1));
      expect(result).toEqual({ keyId: newKey.id, reencrypted: 0, reencryptedWebhookSecrets: 2 });
      const onlyNew = new Keyring({ key: newKey });
      const at = new Date(now.getTime() + 1);
      expect(await loadAcceptedWebhookSecrets(t.db, onlyNew, inGrace, at)).toEqual(kept);
      expect(await loadAcceptedWebhookSecrets(t.db, onlyNew, pastGrace, at)).toEqual([current]);
      expect(await rotateCredentialKeys(t.db, ring, at)).toMatchObject({ reencryptedWebhookSecrets: 0 });
      // Every stored secret is under the new key: the old one alone matches none of them.
      const stuck = await checkCredentialKeys(t.db, oldRing).catch((e: unknown) => e);
      expect(codeOf(stuck)).toBe('secret_key_unknown');
    } finally {
      await t.db.query(`DELETE FROM ${t.db.schema.webhook_secrets}`);
    }
  });
});
