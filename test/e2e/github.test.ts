/**
 * The GitHub provider end to end: the API server, a worker and the reconciler on real PostgreSQL
 * and Redis, the GitHub emulator on 127.0.0.1. An integration created with the emulator's token
 * backfills its repositories into the normalized tables (each record once, the metrics handler's
 * figures equal to the emulator's own counts), an incremental run after changes reads on from
 * where the last one stopped, a wrong token fails `auth` without showing it, many units on a
 * small budget meet at most one limit response per window, and nothing of any of it holds a token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGithubProvider } from '../../src/providers/github/index.js';
import { countsPerDay, startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { normalizedSink, workItemMetricsHandler } from '../../src/sinks/normalized/index.js';
import { incrementalRun, openApiStack, runEnded, type ApiStack } from '../helpers/apiStack.js';
import { waitFor } from '../helpers/engine.js';
import { dumpDatabase, dumpRedis, findLeaks, processCommandLine } from '../helpers/leakScan.js';
import { REDIS_URL, type TestDatabase } from '../helpers/pg.js';
import { expectedRows, expectedStarts, SURFACES, type Surface } from './githubExpected.js';

const ORG = 'org-gh-e2e';
const DAY = 86_400_000;
const DATASETS = ['work-items', 'work-item-comments', 'pull-requests', 'pull-request-reviews', 'commits'];
const SCALE = {
  repos: 2,
  issues: 260,
  pulls: 24,
  maxComments: 2,
  maxReviews: 2,
  directCommits: 12,
  members: 4,
  days: 12,
};
const WRONG_TOKEN = 'ghp_WrongTokenForTheEndToEndTest00000000';

describe('GitHub end to end (API, worker, reconciler, emulator)', () => {
  let stack: ApiStack;
  let t: TestDatabase;
  let emu: GithubEmulator;
  let limited: GithubEmulator;
  const started = Date.now();

  beforeAll(async () => {
    emu = await startGithubEmulator({ scale: SCALE, seed: 21 });
    limited = await startGithubEmulator({
      scale: { ...SCALE, repos: 3, issues: 60, pulls: 6 },
      seed: 22,
      rateLimit: { limit: 30, windowSeconds: 2 },
    });
    // One page per incremental unit of an ascending list, so a run can stop part-way.
    stack = await openApiStack({
      orgId: ORG,
      tag: 'gh-e2e',
      poolSize: 8,
      concurrency: 4,
      registry: (db) =>
        new ProviderRegistry().register(
          createGithubProvider({ postSyncHandlers: [workItemMetricsHandler], maxPages: 1 }),
          normalizedSink(db),
        ),
    });
    t = stack.t;
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
    await emu?.close();
    await limited?.close();
  });

  const send = (method: string, path: string, body?: unknown) => stack.send(method, path, body);

  async function createIntegration(
    name: string,
    on: GithubEmulator,
    credential: string,
    datasets = DATASETS,
  ): Promise<string> {
    const res = await send('POST', '/api/v1/integrations', {
      provider: 'github',
      name,
      sources: on.data.repos.map((r) => `${on.data.org.login}/${r.name}`),
      datasets,
      config: { baseUrl: on.url },
      credential,
    });
    expect(res.status, res.text).toBe(201);
    return (res.json as { id: string }).id;
  }

  const finished = (runId: string, timeoutMs = 60_000) => runEnded(stack, runId, timeoutMs);

  /** The backfill's start: midnight before the emulator's first day. */
  function windowStart(on: GithubEmulator): Date {
    return new Date(Math.floor((started - (on.scale.days + 1) * DAY) / DAY) * DAY);
  }

  async function backfill(id: string, on: GithubEmulator, datasets?: string[]): Promise<string> {
    const now = Date.now();
    const since = windowStart(on);
    const res = await send('POST', `/api/v1/integrations/${id}/backfill`, {
      since: since.toISOString(),
      before: new Date(now + 60_000).toISOString(),
      ...(datasets ? { datasets, force: true } : {}),
    });
    expect(res.status, res.text).toBe(202);
    return (res.json as { sync_run_id: string }).sync_run_id;
  }

  const incremental = (id: string) => incrementalRun(stack, id);

  /** Every key of `surface` for the integration, with how many rows it has. */
  async function stored(id: string, surface: Surface): Promise<{ keys: string[]; rows: number }> {
    const { rows } = await t.db.query<{ external_id: string }>(
      `SELECT external_id FROM ${t.db.schema.table(surface)} WHERE integration_id = $1 ORDER BY external_id`,
      [id],
    );
    return { keys: [...new Set(rows.map((r) => r.external_id))], rows: rows.length };
  }

  async function expectStoredEqualsEmulator(id: string, on: GithubEmulator): Promise<void> {
    const expected = expectedRows(on.data, windowStart(on).getTime());
    for (const surface of SURFACES) {
      const got = await stored(id, surface);
      expect(got.rows, `${surface}: one row per key`).toBe(got.keys.length);
      expect(got.keys, surface).toEqual([...expected[surface].keys()].sort());
    }
  }

  let integrationId = '';

  it('(a) backfills every issue, PR, comment, review and commit once; the metrics match the emulator', async () => {
    integrationId = await createIntegration('acme', emu, emu.token);
    const runId = await backfill(integrationId, emu);
    expect(await finished(runId)).toBe('success');
    await expectStoredEqualsEmulator(integrationId, emu);

    // The latest generation of each day against the emulator's own counts.
    type Day = { day: string; items_created: number; items_completed: number; prs_merged: number };
    const days = await waitFor(async () => {
      const { rows } = await t.db.query<Day>(
        `SELECT DISTINCT ON (day) to_char(day, 'YYYY-MM-DD') AS day, items_created, items_completed, prs_merged
           FROM ${t.db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1
          ORDER BY day, computed_at DESC`,
        [integrationId],
      );
      return rows.length > 0 ? rows : null;
    });
    const counts = countsPerDay(emu.data);
    const expected = days.map((d) => {
      const c = counts.get(d.day);
      return {
        day: d.day,
        items_created: c?.issuesOpened ?? 0,
        items_completed: c?.issuesClosed ?? 0,
        prs_merged: c?.pullsMerged ?? 0,
      };
    });
    expect(days).toEqual(expected);
    const covered = new Set(days.map((d) => d.day));
    expect([...counts.keys()].every((d) => covered.has(d))).toBe(true);
    expect(days.reduce((n, d) => n + d.items_created, 0)).toBe(
      emu.data.repos.flatMap((r) => r.items.filter((i) => !i.pull)).length,
    );
  }, 120_000);

  it('(b) incremental after changes: no gap, no duplicate, the watermark only as far as was read', async () => {
    expect(integrationId).not.toBe('');
    emu.mutate();
    const first = await incremental(integrationId);
    expect(await finished(first)).toBe('success');

    // One page of 100 issues and pulls per repository, updated ascending: the watermark is the
    // last one read, not the run's time.
    const { rows: marks } = await t.db.query<{ key: string; at: Date }>(
      `SELECT s.external_key AS key, w.watermark_at AS at
         FROM ${t.db.schema.sync_watermarks} w JOIN ${t.db.schema.integration_sources} s ON s.id = w.source_id
        WHERE w.integration_id = $1 AND w.dataset_key = 'work-items'`,
      [integrationId],
    );
    expect(marks).toHaveLength(emu.data.repos.length);
    for (const mark of marks) {
      const repo = emu.data.repos.find((r) => mark.key.endsWith(`/${r.name}`))!;
      const updated = repo.items.map((i) => i.updatedAt).sort((a, b) => a - b);
      expect(updated.length).toBeGreaterThan(100);
      expect(mark.at.getTime(), mark.key).toBeLessThan(updated.at(-1)!);
      expect(updated).toContain(mark.at.getTime());
    }

    // The next runs read on from there until everything changed is stored.
    for (let n = 0; n < 3; n++) expect(await finished(await incremental(integrationId))).toBe('success');
    await expectStoredEqualsEmulator(integrationId, emu);
    const { rows } = await t.db.query<{ external_id: string; title: string; status: string; updated_at: Date }>(
      `SELECT external_id, title, status, updated_at FROM ${t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [integrationId],
    );
    const issues = expectedRows(emu.data).work_items;
    for (const row of rows) {
      const issue = issues.get(row.external_id)!;
      expect(
        { title: row.title, at: row.updated_at.getTime(), closed: row.status === 'done' },
        row.external_id,
      ).toEqual({ title: issue.title, at: issue.updatedAt, closed: issue.closedAt !== null });
    }
  }, 120_000);

  /** Every stored issue's started_at (epoch ms or null), by key. */
  async function storedStarts(id: string): Promise<Map<string, number | null>> {
    const { rows } = await t.db.query<{ external_id: string; started_at: Date | null }>(
      `SELECT external_id, started_at FROM ${t.db.schema.table('work_items')} WHERE integration_id = $1`,
      [id],
    );
    return new Map(rows.map((r) => [r.external_id, r.started_at?.getTime() ?? null]));
  }

  it('(c) started_at is the first "in progress" labeled event, issues or events read first', async () => {
    const want = expectedStarts(emu.data);
    expect([...want.values()].filter((v) => v !== null).length).toBeGreaterThan(want.size / 4);
    const sorted = (m: Map<string, number | null>) => [...m].sort(([a], [b]) => a.localeCompare(b));
    for (const first of ['work-items', 'work-item-history']) {
      const second = first === 'work-items' ? 'work-item-history' : 'work-items';
      const id = await createIntegration(`starts-${first}`, emu, emu.token, ['work-items', 'work-item-history']);
      expect(await finished(await backfill(id, emu, [first]))).toBe('success');
      expect(await finished(await backfill(id, emu, [second]))).toBe('success');
      expect(sorted(await storedStarts(id)), `${first} first`).toEqual(sorted(want));
      // Both again, side by side, and once more: nothing moves.
      expect(await finished(await backfill(id, emu))).toBe('success');
      expect(await finished(await backfill(id, emu, [first]))).toBe('success');
      expect(sorted(await storedStarts(id)), `${first} first, re-synced`).toEqual(sorted(want));
    }
  }, 180_000);

  it('(d) a wrong token: units fail auth, naming the integration, never showing the token', async () => {
    const id = await createIntegration('wrong-token', emu, WRONG_TOKEN);
    const runId = await incremental(id);
    expect(await finished(runId)).toBe('failed');
    const { rows } = await t.db.query<{ status: string; error: string | null; result: unknown }>(
      `SELECT status, error, result FROM ${t.db.schema.sync_run_units} WHERE sync_run_id = $1`,
      [runId],
    );
    // pull-requests and pull-request-reviews ride the work-items units (one read of the issues list).
    const { rows: carried } = await t.db.query<{ carried_datasets: string[] }>(
      `SELECT DISTINCT carried_datasets FROM ${t.db.schema.sync_run_units} WHERE sync_run_id = $1 AND dataset_key = $2`,
      [runId, 'work-items'],
    );
    expect(carried).toEqual([{ carried_datasets: ['pull-requests', 'pull-request-reviews'] }]);
    expect(rows.length).toBe(emu.data.repos.length * (DATASETS.length - 2));
    for (const unit of rows) {
      expect(unit.status).toBe('failed');
      expect(unit.result).toMatchObject({ error_category: 'auth' });
      expect(unit.error).toContain('"wrong-token"');
      expect(JSON.stringify(unit)).not.toContain(WRONG_TOKEN);
    }
    // A 401 carries the figures of an unauthenticated caller (60 an hour): no budget takes them.
    expect(emu.log.some((l) => l.status === 401 && l.rate.limit === 60)).toBe(true);
    const { rows: budgets } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${t.db.schema.rate_budgets} WHERE request_limit = 60`,
    );
    expect(budgets[0]!.n).toBe(0);
  }, 60_000);

  it('(e) many units on one token with a small budget: at most one limit response per window', async () => {
    const id = await createIntegration('budgeted', limited, limited.token);
    const runId = await backfill(id, limited);
    expect(await finished(runId, 90_000)).toBe('success');
    await expectStoredEqualsEmulator(id, limited);
    const perWindow = new Map<string, number>();
    for (const entry of limited.log) {
      if (entry.status !== 403 && entry.status !== 429) continue;
      const window = `${entry.tokenId ?? '-'} ${String(entry.rate.reset)}`;
      perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
    }
    expect(Math.max(0, ...perWindow.values())).toBeLessThanOrEqual(1);
    // The budget really was the constraint: more requests than two windows allow (pull requests are
    // read through the issues list, so the run needs about three windows of requests, not more).
    expect(limited.log.filter((l) => l.status === 200).length).toBeGreaterThan(limited.rateLimit.limit * 2);
  }, 120_000);

  it('(f) the token is nowhere: logs at trace, answers, /metrics, Redis, rows, the command line', async () => {
    await send('GET', `/api/v1/integrations/${integrationId}`);
    await send('GET', '/api/v1/integrations');
    await send('GET', '/api/v1/job-runs');
    const metrics = await stack.responses.call(`${stack.server.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(stack.log.logger.level).toBe('trace');
    expect(stack.log.text()).toMatch(/"level":20/);
    const sources: Record<string, string> = {
      logs: stack.log.text(),
      ...stack.responses.sources(),
      ...(await dumpRedis(REDIS_URL, `${stack.prefix}*`)),
      ...(await dumpDatabase(t.db)),
      ...processCommandLine(),
    };
    expect(Object.keys(sources).some((k) => k.startsWith('redis:'))).toBe(true);
    // The emulator did receive the tokens, so they were in use.
    expect(emu.log.some((l) => l.tokenId === 'demo')).toBe(true);
    for (const secret of [emu.token, limited.token, WRONG_TOKEN]) expect(findLeaks(secret, sources)).toEqual([]);
  }, 60_000);
});
