/**
 * The dashboard's Budgets page, in Debian's chromium driven by playwright-core, against a real
 * install (API + dashboard, a worker and the reconciler on a cloned PostgreSQL database, the GitHub
 * emulator on 127.0.0.1): a backfill's first request meets a primary rate limit (403, none
 * remaining, reset in 30 min), so the credential's budget is LIMITED and the units that start
 * after it wait, deferred. The page shows the budget's state in words, its figures, limit
 * responses, deferrals and the units waiting — each equal to the API's answer and to the database —
 * and the remaining-over-time element with the budget's samples. Saves a screenshot
 * (docs/screenshots/dashboard-budgets.png with SYNCRELAY_UPDATE_SCREENSHOTS=1).
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type RunningApiServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { BullMqBroker } from '../../src/broker/bullmq.js';
import { systemClock } from '../../src/clock.js';
import { dashboardPlugin } from '../../src/dashboard/index.js';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { createGithubProvider } from '../../src/providers/github/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { SecretKey } from '../../src/secrets/key.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, REDIS_URL, uniquePrefix, type TestDatabase } from '../helpers/pg.js';
import { chromiumMissing, launchChromium, signIn, type Chromium } from '../helpers/browser.js';

const ORG = 'org-budgets-ui';
const DAY = 86_400_000;
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const SHOTS =
  process.env.SYNCRELAY_UPDATE_SCREENSHOTS === '1'
    ? join(ROOT, 'docs/screenshots')
    : join(ROOT, 'test-output/screenshots');

interface Budget {
  key: string;
  provider: string;
  state: string;
  remaining: number | null;
  limit: number | null;
  limited_until: string | null;
  credential: { holder: string; integrations: { id: string; name: string }[] };
  limit_responses: { last_hour: number; last_day: number };
  deferrals: { last_hour: number; last_day: number };
  waiting: { units: number; next_due_at: string | null };
}

let t: TestDatabase;
let emu: GithubEmulator;
let engine: Engine | undefined;
let broker: BullMqBroker | undefined;
let server: RunningApiServer | undefined;
let url = '';
let admin = '';
let read = '';
let integrationId = '';

async function api<T>(path: string, token: string, body?: unknown): Promise<{ status: number; json: T }> {
  const res = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as T };
}

/** Units of the run no longer planned, dispatching or running: the rest done or waiting on the limit. */
async function settled(): Promise<{ waiting: number; open: number } | null> {
  const { rows } = await t.db.query<{ waiting: number; open: number }>(
    `SELECT count(*) FILTER (WHERE status = 'retrying' AND last_retry_reason = 'rate_limit')::int AS waiting,
            count(*) FILTER (WHERE status IN ('planned', 'dispatching', 'running'))::int AS open
       FROM ${t.db.schema.sync_run_units} WHERE integration_id = $1`,
    [integrationId],
  );
  const r = rows[0]!;
  return r.open === 0 && r.waiting > 0 ? r : null;
}

beforeAll(async () => {
  emu = await startGithubEmulator({
    scale: { repos: 3, issues: 40, pulls: 6, maxComments: 1, maxReviews: 1, directCommits: 4, members: 2, days: 20 },
    seed: 31,
    rateLimit: { limit: 5000, windowSeconds: 3600 },
    // The first request meets a primary limit: none remaining, the window resets in 30 minutes.
    faults: [{ kind: 'primary-limit', count: 1, resetSeconds: 1800 }],
  });
  t = await createTestDatabase({ poolSize: 6 });
  const prefix = uniquePrefix('budgets-ui');
  broker = new BullMqBroker({ redisUrl: REDIS_URL, prefix });
  engine = await Engine.open({
    settings: testSettings({ secretKey: SecretKey.generate(), queuePrefix: prefix, redisUrl: REDIS_URL }),
    db: t.db,
    broker,
    logger: silentLogger(),
    registry: new ProviderRegistry().register(createGithubProvider({ maxPages: 1 }), normalizedSink(t.db)),
    migrate: false,
  });
  server = await startApiServer({ engine, host: '127.0.0.1', port: 0, plugins: [dashboardPlugin()] });
  url = server.url;
  admin = (await createApiToken(t.db, systemClock, { orgId: ORG, scopes: ['admin'], name: 'admin' })).token;
  read = (await createApiToken(t.db, systemClock, { orgId: ORG, scopes: ['read'], name: 'read' })).token;
  engine.startWorker({ concurrency: 2 });
  await engine.startReconciler({ scheduler: false });

  const created = await api<{ id: string }>('/api/v1/integrations', admin, {
    provider: 'github',
    name: 'Acme GitHub',
    sources: emu.data.repos.map((r) => `${emu.data.org.login}/${r.name}`),
    datasets: ['work-items', 'pull-requests', 'commits'],
    config: { baseUrl: emu.url },
    credential: emu.token,
  });
  expect(created.status).toBe(201);
  integrationId = created.json.id;
  const now = Date.now();
  const run = await api<{ sync_run_id: string }>(`/api/v1/integrations/${integrationId}/backfill`, admin, {
    since: new Date(Math.floor((now - 21 * DAY) / DAY) * DAY).toISOString(),
    before: new Date(now + 60_000).toISOString(),
  });
  expect(run.status).toBe(202);
  await waitFor(settled, 120_000, 200);
}, 240_000);

afterAll(async () => {
  await server?.close();
  await engine?.close();
  await broker?.close();
  await t?.drop();
  await emu?.close();
});

const missing = chromiumMissing('the budgets page browser test');

describe.skipIf(missing !== null)('the Budgets page in chromium', () => {
  let browser: Chromium | undefined;
  let page: Page;
  let problems: string[];

  beforeAll(async () => {
    browser = await launchChromium();
    ({ page, problems } = browser);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('shows the limited budget as the API and the database have it, and its samples', async () => {
    await signIn(page, url, read);
    await page.getByRole('link', { name: 'Budgets' }).click();
    await page.getByRole('heading', { name: 'Budgets', level: 1 }).waitFor();

    const { json } = await api<{ items: Budget[] }>('/api/v1/rate-budgets', read);
    expect(json.items).toHaveLength(1);
    const b = json.items[0]!;
    expect(b).toMatchObject({ provider: 'github', state: 'limited', remaining: 0 });
    expect(b.credential.integrations).toEqual([{ id: integrationId, name: 'Acme GitHub' }]);
    expect(b.limit_responses.last_hour).toBeGreaterThanOrEqual(1);

    // The database agrees with the API.
    const { rows } = await t.db.query<{ remaining: number; request_limit: number; limited_until: Date }>(
      `SELECT remaining, request_limit, limited_until FROM ${t.db.schema.rate_budgets} WHERE org_id = $1`,
      [ORG],
    );
    expect(rows).toHaveLength(1);
    expect(b.remaining).toBe(rows[0]!.remaining);
    expect(b.limit).toBe(rows[0]!.request_limit);
    expect(b.limited_until).toBe(rows[0]!.limited_until.toISOString());
    const waiting = (await settled())!.waiting;
    expect(b.waiting.units).toBe(waiting);
    const { rows: deferred } = await t.db.query<{ n: number }>(
      `SELECT COALESCE(sum(rate_limit_deferrals), 0)::int AS n FROM ${t.db.schema.sync_run_units}
        WHERE integration_id = $1`,
      [integrationId],
    );
    expect(b.deferrals.last_hour).toBe(deferred[0]!.n);
    const { rows: limits } = await t.db.query<{ n: number }>(
      `SELECT COALESCE(sum(limit_responses), 0)::int AS n FROM ${t.db.schema.table('rate_budget_samples')}
        WHERE org_id = $1`,
      [ORG],
    );
    expect(b.limit_responses.last_day).toBe(limits[0]!.n);
    // Every limit response the emulator sent was recorded as one.
    expect(b.limit_responses.last_day).toBe(emu.log.filter((l) => l.status === 403 || l.status === 429).length);

    // The page shows the same, the state in words.
    const row = page.locator(`tr[data-budget-key="${b.key}"]`);
    await row.waitFor();
    const cell = (field: string) => row.locator(`[data-field="${field}"]`).first();
    expect(await cell('state').locator('.badge').textContent()).toBe('LIMITED');
    expect(await row.getAttribute('class')).toContain('budget-alert');
    expect(await cell('provider').textContent()).toBe('github');
    expect(await cell('credential').textContent()).toContain('Acme GitHub');
    expect(await cell('remaining').textContent()).toBe(`${String(b.remaining)} / ${String(b.limit)}`);
    expect(await cell('limited-until').locator('time').getAttribute('datetime')).toBe(b.limited_until);
    const pair = (w: { last_hour: number; last_day: number }) => `${w.last_hour} / ${w.last_day}`;
    expect(await cell('limit-responses').textContent()).toBe(pair(b.limit_responses));
    expect(await cell('deferrals').textContent()).toBe(pair(b.deferrals));
    expect(await row.locator('[data-field="waiting-units"]').textContent()).toBe(String(waiting));
    expect(await cell('waiting').locator('time').first().getAttribute('datetime')).toBe(b.waiting.next_due_at);
    expect(await page.content()).not.toContain(emu.token);

    // Remaining over time: the chart element carries the API's samples.
    const history = await api<{ samples: { minute: string; remaining: number | null; limit: number | null }[] }>(
      `/api/v1/rate-budgets/${b.key}/history?hours=24`,
      read,
    );
    expect(history.json.samples.length).toBeGreaterThan(0);
    const chart = page.locator('[data-chart="budget-remaining"]');
    await expect.poll(() => chart.getAttribute('data-samples')).not.toBeNull();
    expect(JSON.parse((await chart.getAttribute('data-samples'))!)).toEqual(
      history.json.samples.map((s) => [s.minute, s.remaining, s.limit]),
    );
    await expect.poll(() => chart.locator('figure, p.empty').count()).toBeGreaterThan(0);
    expect(await page.locator('table[data-samples-of] tbody tr').count()).toBe(history.json.samples.length);

    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, 'dashboard-budgets.png'), fullPage: true });
    expect(problems).toEqual([]);
  }, 120_000);
});
