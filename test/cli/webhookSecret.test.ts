/**
 * `syncrelay webhooks secret`: a Linear or Jira integration's secret is generated and printed once;
 * `--secret-stdin` stores the secret the provider made (read from standard input, never the command
 * line) and the stored one verifies that provider's signature; a malformed one, a second secret
 * without --rotate and a provider that sends no webhooks are refused with one line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretKey } from '../../src/secrets/key.js';
import { Keyring } from '../../src/secrets/keyring.js';
import {
  loadAcceptedWebhookSecrets,
  signWebhookBody,
  verifyWebhookSignature,
} from '../../src/secrets/webhookSecrets.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { seedIntegration } from '../helpers/webhookDeliveries.js';
import { runCli } from './helpers.js';

const KEY = SecretKey.generate();
let t: TestDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
  env = { DATABASE_URL: t.url, SYNCRELAY_SECRET_KEY: KEY.toBase64() };
});
afterAll(async () => {
  await t?.drop();
});

describe('webhooks secret', () => {
  it('generates a Jira integration’s secret, printed once; a second one needs --rotate', async () => {
    const id = await seedIntegration(t.db, 'org-cli', 'jira', 'Jira');
    const first = await runCli(['webhooks', 'secret', '--integration', id], { env });
    expect(first.stderr).toBe('');
    expect(first.stdout.trim()).toMatch(/^[0-9a-f]{64}$/);
    const again = await runCli(['webhooks', 'secret', '--integration', id], { env });
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/--rotate/);
  });

  it('stores the secret Linear made, read from stdin, and it verifies a Linear signature', async () => {
    const id = await seedIntegration(t.db, 'org-cli', 'linear', 'Linear');
    const given = 'lin_wh_AbCdEf0123456789xyz';
    const bad = await runCli(['webhooks', 'secret', '--integration', id, '--secret-stdin'], { env, input: 'short\n' });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/16 to 256 printable/);
    const r = await runCli(['webhooks', 'secret', '--integration', id, '--secret-stdin'], { env, input: `${given}\n` });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(given);
    const keyring = new Keyring({ key: KEY });
    const secrets = await loadAcceptedWebhookSecrets(t.db, keyring, id, new Date());
    const body = Buffer.from('{"type":"Issue"}');
    expect(verifyWebhookSignature(body, signWebhookBody(body, given, ''), secrets, '')).toBe(true);
  });

  it('refuses an integration whose provider sends no webhooks syncrelay reads', async () => {
    const id = await seedIntegration(t.db, 'org-cli', 'synthetic', 'Synthetic');
    const r = await runCli(['webhooks', 'secret', '--integration', id], { env });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/webhooks are received for github, linear, jira/);
  });
});
