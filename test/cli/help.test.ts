/** Every subcommand answers --help; usage and settings errors end with one `syncrelay:` line. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, runCli, tempDir } from './helpers.js';

const COMMANDS = [
  [],
  ['demo'],
  ['migrate'],
  ['start'],
  ['worker'],
  ['reconciler'],
  ['reconcile'],
  ['integrations'],
  ['integrations', 'create'],
  ['integrations', 'list'],
  ['integrations', 'delete'],
  ['trigger'],
  ['runs'],
  ['runs', 'list'],
  ['runs', 'show'],
  ['cancel'],
];

let dir: string;
beforeAll(async () => {
  dir = await tempDir('help');
});
afterAll(async () => {
  await removeDir(dir);
});

/** Settings that keep a command that gets past validation away from the repository. */
const env = () => ({ SYNCRELAY_DATA_DIR: `${dir}/data` });

describe('syncrelay --help', () => {
  it.each(COMMANDS.map((c) => [c.join(' ') || '(top level)', c] as const))(
    '%s --help exits 0 with usage',
    async (_, cmd) => {
      const r = await runCli([...cmd, '--help'], { env: env() });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`Usage: syncrelay${cmd.length ? ` ${cmd.join(' ')}` : ''}`);
      expect(r.stderr).toBe('');
    },
  );

  it('says that start runs the worker, the reconciler and the HTTP API', async () => {
    const r = await runCli(['start', '--help']);
    expect(r.stdout).toMatch(/runs the worker and the reconciler, and serves the HTTP API/);
    expect(r.stdout).not.toMatch(/TODO/i);
  });
});

describe('errors are one line on stderr with a non-zero exit', () => {
  const oneLine = (stderr: string) => {
    const lines = stderr.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^syncrelay: /);
    return lines[0]!;
  };

  it('a bad setting names the setting and stops before anything opens', async () => {
    const r = await runCli(['integrations', 'list'], { env: { ...env(), SYNC_UNIT_RUNNING_LEASE_SECONDS: 'soon' } });
    expect(r.code).not.toBe(0);
    expect(oneLine(r.stderr)).toMatch(/^syncrelay: SYNC_UNIT_RUNNING_LEASE_SECONDS: must be /);
    expect(r.stdout).toBe('');
  });

  it('a bad URL setting too', async () => {
    const r = await runCli(['migrate'], { env: { ...env(), DATABASE_URL: 'mysql://x' } });
    expect(r.code).not.toBe(0);
    expect(oneLine(r.stderr)).toMatch(/^syncrelay: DATABASE_URL: /);
  });

  it('a bad log level', async () => {
    const r = await runCli(['runs', 'list'], { env: { ...env(), SYNCRELAY_LOG_LEVEL: 'loud' } });
    expect(r.code).not.toBe(0);
    expect(oneLine(r.stderr)).toMatch(/^syncrelay: SYNCRELAY_LOG_LEVEL: /);
  });

  it('an unknown command', async () => {
    const r = await runCli(['bogus']);
    expect(r.code).not.toBe(0);
    expect(oneLine(r.stderr)).toMatch(/unknown command 'bogus'/);
  });

  it('a missing required option', async () => {
    const r = await runCli(['integrations', 'create', '--org', 'a'], { env: env() });
    expect(r.code).not.toBe(0);
    expect(oneLine(r.stderr)).toMatch(/required option '--provider <provider>' not specified/);
  });

  it('a worker or reconciler of its own needs Redis and PostgreSQL', async () => {
    for (const cmd of ['worker', 'reconciler']) {
      const r = await runCli([cmd], { env: env() });
      expect(r.code).not.toBe(0);
      expect(oneLine(r.stderr)).toMatch(/^syncrelay: REDIS_URL: is required: .*syncrelay start/);
    }
  });

  it('reconcile needs --once', async () => {
    const r = await runCli(['reconcile'], { env: env() });
    expect(r.code).not.toBe(0);
    expect(oneLine(r.stderr)).toMatch(/^syncrelay: --once: is required/);
  });

  it('a malformed id', async () => {
    const r = await runCli(['runs', 'show', 'not-a-uuid'], { env: env() });
    expect(r.code).not.toBe(0);
    expect(oneLine(r.stderr)).toMatch(/Expected a UUID/);
  });
});
