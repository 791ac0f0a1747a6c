/**
 * `syncrelay integrations create --sources all` for a GitHub App integration told only its owner,
 * then `syncrelay trigger`: the trigger finds the installation's repositories (the GitHub emulator's
 * App) before it plans, and they are the integration's sources. "all" with a token is refused,
 * naming `sources`, writing nothing.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { SecretKey } from '../../src/secrets/key.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { deleteRedisKeys } from '../helpers/redis.js';
import { parseJson, removeDir, runCli as run, tempDir, type CliOptions, type CliResult } from './helpers.js';

/** A shared machine starts `node + tsx` slowly: a generous limit per command. */
function runCli(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  return run(args, { timeoutMs: 120_000, ...opts });
}

let t: TestDatabase;
let gh: GithubEmulator;
let dir: string;
let keyFile: string;
let prefix: string;
let env: Record<string, string>;

beforeAll(async () => {
  t = await createTestDatabase({ poolSize: 2 });
  gh = await startGithubEmulator({
    seed: 61,
    scale: { repos: 3, issues: 6, pulls: 0, directCommits: 1, members: 2, days: 3 },
    app: {},
  });
  dir = await tempDir('gh-app-sources');
  keyFile = join(dir, 'app-key.pem');
  await writeFile(keyFile, gh.appPrivateKeyPem!, { mode: 0o600 });
  prefix = uniquePrefix('cli-gh-app');
  env = {
    DATABASE_URL: t.url,
    REDIS_URL,
    SYNCRELAY_QUEUE_PREFIX: prefix,
    SYNCRELAY_SECRET_KEY: SecretKey.generate().toBase64(),
    SYNCRELAY_ALLOW_INSECURE_PROVIDER_URLS: '1',
  };
});

afterAll(async () => {
  await gh?.close();
  await t?.drop();
  if (dir) await removeDir(dir);
  if (prefix) await deleteRedisKeys(`${prefix}:*`);
});

const create = (config: Record<string, unknown>) => [
  'integrations',
  'create',
  '--org',
  'acme',
  '--provider',
  'github',
  '--name',
  'gh-app',
  '--sources',
  'all',
  '--datasets',
  'work-items',
  '--credential-file',
  keyFile,
  '--config',
  JSON.stringify({ baseUrl: gh.url, ...config }),
];

it('create --sources all, then trigger: the installation repositories are the sources', async () => {
  const made = await runCli(create({ auth: 'app', appId: gh.appId, owner: gh.data.org.login }), { env });
  expect(made.code, made.stderr).toBe(0);
  expect(made.stdout).toContain('sources:  all (found by the provider before each run is planned)');
  const id = /created integration ([0-9a-f-]{36})/.exec(made.stdout)![1]!;
  const triggered = await runCli(['trigger', '--integration', id, '--mode', 'incremental', '--json'], { env });
  expect(triggered.code, triggered.stderr).toBe(0);
  expect(parseJson<{ units: number }>(triggered.stdout).units).toBe(3);
  const { rows } = await t.db.query<{ key: string }>(
    `SELECT external_key AS key FROM ${t.db.schema.integration_sources} WHERE integration_id = $1 AND enabled
      ORDER BY external_key`,
    [id],
  );
  expect(rows.map((r) => r.key)).toEqual(gh.data.repos.map((r) => `${gh.data.org.login}/${r.name}`).sort());
  expect(`${made.stdout}${triggered.stdout}${triggered.stderr}`).not.toContain('PRIVATE KEY');
}, 300_000);

it('--sources all with a token is refused, naming sources, writing nothing', async () => {
  const before = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.db.schema.integrations}`);
  const r = await runCli(create({}), { env });
  expect(r.code).toBe(1);
  expect(r.stderr).toContain('sources: "all"');
  const after = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.db.schema.integrations}`);
  expect(after.rows[0]!.n).toBe(before.rows[0]!.n);
}, 120_000);
