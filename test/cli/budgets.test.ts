/**
 * `syncrelay budgets`: the shared rate-limit budgets per credential as a table (a limited budget
 * reads LIMITED), or as JSON with --json; --org and --provider narrow it; no credential secret is
 * printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretKey } from '../../src/secrets/key.js';
import { recordRateBudget } from '../../src/store/rateBudgets.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { seedCredentialedIntegration, seedLimitedUnits, type SeededCredential } from '../helpers/rateBudgets.js';
import { parseJson, runCli } from './helpers.js';

const MIN = 60_000;
const KEY = SecretKey.generate();
let t: TestDatabase;
let env: Record<string, string>;
let acme: SeededCredential;
let other: SeededCredential;
const now = new Date();
const limitedUntil = new Date(now.getTime() + 30 * MIN);

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
  env = {
    DATABASE_URL: t.url,
    REDIS_URL,
    SYNCRELAY_QUEUE_PREFIX: uniquePrefix('cli-budgets'),
    SYNCRELAY_SECRET_KEY: KEY.toBase64(),
  };
  acme = await seedCredentialedIntegration(t.db, 'org-cli', 'Acme GitHub', { keyId: KEY.id });
  other = await seedCredentialedIntegration(t.db, 'org-two', 'Two Linear', { provider: 'linear', keyId: KEY.id });
  const resetAt = new Date(now.getTime() + 60 * MIN);
  await recordRateBudget(
    t.db,
    { orgId: 'org-cli', provider: 'github', credentialId: acme.holder },
    { remaining: 0, limit: 5000, resetAt, limitedUntil, observedAt: now },
    'u1',
  );
  await recordRateBudget(
    t.db,
    { orgId: 'org-two', provider: 'linear', credentialId: other.holder },
    { remaining: 1400, limit: 1500, resetAt, limitedUntil: null, observedAt: now },
    'u2',
  );
  await seedLimitedUnits(t.db, { orgId: 'org-cli', integrationId: acme.integrationId }, [
    { deferrals: 2, firstSeenAt: now, dueAt: limitedUntil },
  ]);
});
afterAll(async () => {
  await t?.drop();
});

describe('budgets', () => {
  it('prints every org’s budgets as a table, a limited one marked LIMITED', async () => {
    const r = await runCli(['budgets'], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^org\s+provider\s+credential\s+state\s+remaining\s+resets\s+limited until\s+/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^org-cli\s+github\s+Acme GitHub \(token\)\s+LIMITED\s+0\/5000\s/);
    expect(lines[1]).toContain(limitedUntil.toISOString());
    expect(lines[1]).toMatch(/\s1\/1\s+2\/2\s+1\s+\S+Z$/);
    expect(lines[2]).toMatch(/^org-two\s+linear\s+Two Linear \(token\)\s+ok\s+1400\/1500\s/);
  });

  it('prints JSON with --json, narrowed by --org and --provider', async () => {
    const r = await runCli(['budgets', '--org', 'org-cli', '--json'], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = parseJson<{ items: Record<string, unknown>[] }>(r.stdout);
    expect(out.items).toHaveLength(1);
    expect(out.items[0]).toMatchObject({
      org_id: 'org-cli',
      provider: 'github',
      credential: { holder: acme.holder, kind: 'token', integrations: [{ name: 'Acme GitHub' }] },
      state: 'limited',
      limit_responses: { last_hour: 1, last_day: 1 },
      deferrals: { last_hour: 2, last_day: 2 },
      waiting: { units: 1, next_due_at: limitedUntil.toISOString() },
    });
    expect(r.stdout).not.toMatch(/ciphertext|nonce|auth_tag/);
    const none = await runCli(['budgets', '--org', 'org-two', '--provider', 'github', '--json'], { env });
    expect(parseJson<{ items: unknown[] }>(none.stdout).items).toEqual([]);
    const empty = await runCli(['budgets', '--org', 'nobody'], { env });
    expect(empty.stdout.trim()).toBe('(none)');
  });
});
