/** `syncrelay tokens …` and `syncrelay api` as real child processes against PostgreSQL and Redis. */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson, runCli, startCli, until } from '../cli/helpers.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { deleteRedisKeys } from '../helpers/redis.js';

let t: TestDatabase;
let env: Record<string, string>;
const prefix = uniquePrefix('api-cli');

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
  env = { DATABASE_URL: t.url, REDIS_URL, SYNCRELAY_QUEUE_PREFIX: prefix };
});
afterAll(async () => {
  await t?.drop();
  await deleteRedisKeys(`${prefix}:*`);
});

const oneErrorLine = (stderr: string) => {
  const lines = stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));
  expect(lines).toHaveLength(1);
  return lines[0]!;
};

describe('syncrelay tokens', () => {
  it('create prints the token once, stores its hash; list never shows it; revoke ends it', async () => {
    const created = await runCli(
      ['tokens', 'create', '--org', 'acme', '--scopes', 'read,trigger', '--name', 'ci', '--json'],
      { env },
    );
    expect(created.code, created.stderr).toBe(0);
    const out = parseJson<{ token: string; id: string; org_id: string; scopes: string[] }>(created.stdout);
    expect(out.token).toMatch(/^sr_[A-Za-z0-9_-]{43}$/);
    expect(out).toMatchObject({ org_id: 'acme', scopes: ['read', 'trigger'] });
    const { rows } = await t.db.query<{ id: string }>('SELECT id FROM syncrelay.api_tokens WHERE token_hash = $1', [
      createHash('sha256').update(out.token).digest('hex'),
    ]);
    expect(rows.map((r) => r.id)).toEqual([out.id]);

    const plain = await runCli(['tokens', 'create', '--org', 'acme', '--scopes', 'admin'], { env });
    expect(plain.code).toBe(0);
    expect(plain.stdout.trim()).toMatch(/^sr_[A-Za-z0-9_-]{43}$/);
    expect(plain.stderr).toMatch(/shown only now/);

    const listed = await runCli(['tokens', 'list', '--org', 'acme', '--json'], { env });
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(out.token);
    expect(listed.stdout).not.toContain('token_hash');
    const tokens = parseJson<{ id: string; name: string; revoked_at: string | null }[]>(listed.stdout);
    expect(tokens.map((x) => x.name)).toEqual(['ci', '']);

    const revoked = await runCli(['tokens', 'revoke', out.id], { env });
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain(`revoked token ${out.id}`);
    const again = await runCli(['tokens', 'revoke', out.id], { env });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/already revoked/);
    const table = await runCli(['tokens', 'list', '--org', 'acme'], { env });
    expect(table.stdout).toMatch(/^ID\s+NAME\s+SCOPES\s+CREATED\s+LAST USED\s+REVOKED/);
  });

  it('refuses unknown scopes, foreign orgs and unknown ids with one line', async () => {
    const bad = await runCli(['tokens', 'create', '--org', 'acme', '--scopes', 'read,root'], { env });
    expect(bad.code).not.toBe(0);
    expect(oneErrorLine(bad.stderr)).toMatch(/^syncrelay: scopes: unknown scope "root"/);
    const ghost = await runCli(['tokens', 'revoke', '00000000-0000-4000-8000-000000000000'], { env });
    expect(ghost.code).toBe(1);
    expect(oneErrorLine(ghost.stderr)).toMatch(/not found/);
    const created = parseJson<{ id: string }>(
      (await runCli(['tokens', 'create', '--org', 'acme', '--scopes', 'read', '--json'], { env })).stdout,
    );
    const other = await runCli(['tokens', 'revoke', created.id, '--org', 'globex'], { env });
    expect(other.code).toBe(1);
  });
});

describe('syncrelay api', () => {
  it('serves the API until SIGTERM, then exits 0', async () => {
    const token = parseJson<{ token: string }>(
      (await runCli(['tokens', 'create', '--org', 'acme', '--scopes', 'admin', '--json'], { env })).stdout,
    ).token;
    const proc = startCli(['api', '--port', '0'], { env });
    let url = '';
    await until(
      () => {
        const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(proc.stderr());
        if (m) url = m[1]!;
        return url !== '';
      },
      30_000,
      'api started',
    );
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const unauth = await fetch(`${url}/api/v1/integrations`);
    expect(unauth.status).toBe(401);
    const created = await fetch(`${url}/api/v1/integrations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'synthetic', name: 'cli', sources: ['a'], datasets: ['work-items'] }),
    });
    expect(created.status).toBe(201);
    expect(((await created.json()) as { org_id: string }).org_id).toBe('acme');

    proc.child.kill('SIGTERM');
    const done = await proc.exited;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toMatch(/api stopped/);
  });
});
