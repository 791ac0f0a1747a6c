/**
 * A GitHub App integration told only its owner, end to end (the API server, a worker and the
 * reconciler on real PostgreSQL and Redis, the GitHub emulator's App): created with `sources: "all"`,
 * its first backfill finds the installation from the owner and its repositories, and reads every one
 * with no failed unit; a repository given to the installation appears as a source at the next
 * trigger, and one taken from it is disabled (its row stays) at the next scheduled slot. An owner
 * without the App fails the trigger (422, and the schedule's slot) without a secret in sight;
 * "all" with a token, or an App told no owner, is refused at create.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { forgetInstallationTokens } from '../../src/providers/github/appAuth.js';
import { createGithubProvider } from '../../src/providers/github/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { incrementalRun, openApiStack, runEnded, type ApiStack } from '../helpers/apiStack.js';

const ORG = 'org-gh-app-sources';
const DAY = 86_400_000;
const DATASETS = ['repositories', 'work-items', 'work-item-comments', 'pull-requests', 'commits'];
const SCALE = {
  repos: 3,
  issues: 60,
  pulls: 9,
  maxComments: 2,
  maxReviews: 1,
  directCommits: 5,
  members: 3,
  days: 10,
};

describe('GitHub App integration with its sources found from the installation (API, worker, emulator)', () => {
  let stack: ApiStack;
  let gh: GithubEmulator;
  const started = Date.now();
  let names: string[] = [];

  beforeAll(async () => {
    forgetInstallationTokens();
    gh = await startGithubEmulator({ scale: SCALE, seed: 51, app: {} });
    names = gh.data.repos.map((r) => r.name);
    // The installation starts with the first two repositories.
    gh.removeInstallationRepository(names[2]!);
    stack = await openApiStack({
      orgId: ORG,
      tag: 'gh-app-sources',
      poolSize: 8,
      concurrency: 4,
      registry: (db) => new ProviderRegistry().register(createGithubProvider({}), normalizedSink(db)),
    });
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
    await gh?.close();
    forgetInstallationTokens();
  });

  const send = (method: string, path: string, body?: unknown) => stack.send(method, path, body);
  const full = (name: string) => `${gh.data.org.login}/${name}`;
  const app = (extra: Record<string, unknown> = {}) => ({ baseUrl: gh.url, auth: 'app', appId: gh.appId, ...extra });

  function create(name: string, sources: string[] | 'all', config: Record<string, unknown>) {
    const body = { provider: 'github', name, sources, datasets: DATASETS, config, credential: gh.appPrivateKeyPem };
    return send('POST', '/api/v1/integrations', body);
  }

  async function sources(id: string): Promise<{ key: string; enabled: boolean }[]> {
    const { rows } = await stack.t.db.query<{ key: string; enabled: boolean }>(
      `SELECT external_key AS key, enabled FROM ${stack.t.db.schema.integration_sources}
        WHERE integration_id = $1 ORDER BY external_key`,
      [id],
    );
    return rows;
  }

  async function units(runId: string) {
    const { rows } = await stack.t.db.query<{ status: string; error: string | null; source: string | null }>(
      `SELECT u.status, u.error, s.external_key AS source FROM ${stack.t.db.schema.sync_run_units} u
         LEFT JOIN ${stack.t.db.schema.integration_sources} s ON s.id = u.source_id
        WHERE u.sync_run_id = $1`,
      [runId],
    );
    return rows;
  }

  async function issuesStored(id: string): Promise<number> {
    const { rows } = await stack.t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${stack.t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [id],
    );
    return rows[0]!.n;
  }

  const issuesOf = (repos: string[]) =>
    gh.data.repos.filter((r) => repos.includes(r.name)).flatMap((r) => r.items.filter((i) => !i.pull)).length;

  async function backfill(id: string): Promise<string> {
    const since = new Date(Math.floor((started - (SCALE.days + 1) * DAY) / DAY) * DAY);
    const res = await send('POST', `/api/v1/integrations/${id}/backfill`, {
      since: since.toISOString(),
      before: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(res.status, res.text).toBe(202);
    return (res.json as { sync_run_id: string }).sync_run_id;
  }

  let id = '';

  it('created with the owner only and "all": the backfill reads every installation repository', async () => {
    const res = await create('app-found', 'all', app({ owner: gh.data.org.login }));
    expect(res.status, res.text).toBe(201);
    expect(res.json).toMatchObject({ sources: [], config: { sources: 'installation', owner: gh.data.org.login } });
    id = (res.json as { id: string }).id;
    const runId = await backfill(id);
    expect(await runEnded(stack, runId, 90_000)).toBe('success');
    const done = await units(runId);
    expect(done.filter((u) => u.status !== 'success')).toEqual([]);
    expect(new Set(done.map((u) => u.source).filter((s) => s !== null))).toEqual(new Set(names.slice(0, 2).map(full)));
    expect(await sources(id)).toEqual(names.slice(0, 2).map((n) => ({ key: full(n), enabled: true })));
    expect(await issuesStored(id)).toBe(issuesOf(names.slice(0, 2)));
    // One budget: the installation's, by the id found from the owner.
    const { rows } = await stack.t.db.query<{ credential_id: string }>(
      `SELECT DISTINCT credential_id FROM ${stack.t.db.schema.rate_budgets} WHERE org_id = $1 AND provider = 'github'`,
      [ORG],
    );
    const holder = `app-${String(gh.appId)}-installation-${String(gh.installationId)}@${new URL(gh.url).host}`;
    expect(rows.map((r) => r.credential_id)).toEqual([holder]);
  }, 120_000);

  it('a repository given to the installation is a source at the next trigger, and is read', async () => {
    expect(id).not.toBe('');
    gh.addInstallationRepository(names[2]!);
    const runId = await incrementalRun(stack, id);
    expect(await runEnded(stack, runId, 90_000)).toBe('success');
    expect(await sources(id)).toEqual(names.map((n) => ({ key: full(n), enabled: true })));
    expect((await units(runId)).some((u) => u.source === full(names[2]!))).toBe(true);
    expect(await issuesStored(id)).toBe(issuesOf(names));
  }, 120_000);

  it('one taken from it is disabled at the next scheduled slot (its row stays) and not read', async () => {
    gh.removeInstallationRepository(names[0]!);
    const made = await send('POST', '/api/v1/schedules', { integration_id: id, cron: '* * * * *' });
    expect(made.status, made.text).toBe(201);
    const tick = await stack.engine.tickScheduler(new Date(Date.now() + 120_000));
    expect(tick.failed).toEqual([]);
    expect(tick.fired).toHaveLength(1);
    expect(await runEnded(stack, tick.fired[0]!.syncRunId, 90_000)).toBe('success');
    expect(await sources(id)).toEqual(names.map((n, i) => ({ key: full(n), enabled: i !== 0 })));
    const read = new Set((await units(tick.fired[0]!.syncRunId)).map((u) => u.source));
    expect(read.has(full(names[0]!))).toBe(false);
    expect(read.has(full(names[1]!))).toBe(true);
    const scheduleId = (made.json as { id: string }).id;
    const off = await send('DELETE', `/api/v1/schedules/${scheduleId}`);
    expect(off.status, off.text).toBeLessThan(300);
  }, 120_000);

  it('an owner without the App: the trigger is a 422 and the slot fails, naming the owner, no secret', async () => {
    const res = await create('app-elsewhere', 'all', app({ owner: 'not-installed-here' }));
    expect(res.status, res.text).toBe(201);
    const other = (res.json as { id: string }).id;
    const sync = await send('POST', `/api/v1/integrations/${other}/sync`, { mode: 'incremental' });
    expect(sync.status, sync.text).toBe(422);
    expect(sync.json).toMatchObject({
      error: { code: 'source_discovery_failed', details: { category: 'auth', integration_id: other } },
    });
    const message = (sync.json as { error: { message: string } }).error.message;
    expect(message).toMatch(/^github integration "app-elsewhere": its sources could not be found: /);
    expect(message).toContain('no installation on "not-installed-here"');
    expect(sync.text).not.toMatch(/PRIVATE KEY|ghs_|eyJ/);
    const { rows } = await stack.t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${stack.t.db.schema.sync_runs} WHERE integration_id = $1`,
      [other],
    );
    expect(rows[0]!.n).toBe(0);
    const made = await send('POST', '/api/v1/schedules', { integration_id: other, cron: '* * * * *' });
    expect(made.status, made.text).toBe(201);
    const tick = await stack.engine.tickScheduler(new Date(Date.now() + 240_000));
    const failed = tick.failed.find((f) => f.integrationId === other);
    expect(failed?.reason).toContain('not-installed-here');
    expect(tick.errors).toEqual([]);
  }, 60_000);

  it('refused at create: "all" with a token; an App told neither owner nor installation', async () => {
    const cases: [string[] | 'all', Record<string, unknown>, string][] = [
      ['all', { baseUrl: gh.url }, 'sources'],
      ['all', app(), 'config.owner'],
      [[], app(), 'config.owner'],
      [[full(names[0]!), 'someone/else'], app(), 'config.owner'],
    ];
    for (const [list, config, field] of cases) {
      const res = await create('refused', list, config);
      expect(res.status, res.text).toBe(400);
      expect((res.json as { error: { details: { field: string } } }).error.details.field).toBe(field);
    }
  });

  it('listed sources and no owner: the installation is found from their owner', async () => {
    const res = await create('app-listed', [full(names[1]!)], app());
    expect(res.status, res.text).toBe(201);
    const listed = (res.json as { id: string }).id;
    const runId = await backfill(listed);
    expect(await runEnded(stack, runId, 90_000)).toBe('success');
    expect(await issuesStored(listed)).toBe(issuesOf([names[1]!]));
  }, 120_000);
});
