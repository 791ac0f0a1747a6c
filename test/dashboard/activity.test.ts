/**
 * The dashboard's Activity page in Debian's chromium (playwright-core) against a real server (API +
 * dashboard) on a cloned PostgreSQL database seeded by a real run: a provider writing work items
 * through the normalized sink (one source deferred once by a rate limit, one failing for good), a
 * worker and the reconciler in this process, the work-item-metrics handler delivered by post_sync.
 * Every chart draws a canvas with a size, its text alternative holds exactly the numbers the API
 * answered the page (which match the database), the reconciler chart is an admin's only, and the page
 * raises no Content-Security-Policy violation. Saves the page as dashboard-activity.png (to
 * docs/screenshots/ with SYNCRELAY_UPDATE_SCREENSHOTS=1).
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type RunningApiServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { systemClock } from '../../src/clock.js';
import { dashboardPlugin } from '../../src/dashboard/index.js';
import { Engine } from '../../src/engine.js';
import { NonRetryableError, RateLimitError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import type { Provider, UnitContext } from '../../src/sdk/types.js';
import { normalizedSink, workItemMetricsHandler } from '../../src/sinks/normalized/index.js';
import { runTerminal, testSettings, waitFor } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { chromiumMissing, launchChromium, SCREENSHOTS, signIn, type Chromium } from '../helpers/browser.js';

const ORG = 'acme';
const DAY = 86_400_000;
const HOUR = 3_600_000;
/** The charts every token sees, and the admin's one more. */
const CHARTS = ['runs', 'units', 'drain', 'deferrals', 'outbox', 'lateness', 'items', 'times'];

/** Sources whose first attempt was deferred by a rate limit. */
const deferred = new Set<string>();

/**
 * Per day of the unit's window two items: one done (created 02:00, completed 20:00: 18 h cycle
 * time), one still in progress. `acme/slow` is rate-limited on its first attempt; `acme/broken` fails.
 */
async function writeItems(ctx: UnitContext): Promise<{ items: number }> {
  const source = ctx.unit.sourceKey ?? '-';
  if (source === 'acme/broken') throw new NonRetryableError('the repository is gone');
  if (source === 'acme/slow' && !deferred.has(ctx.unit.id)) {
    deferred.add(ctx.unit.id);
    throw new RateLimitError(50, 'rate limited', { spreadMs: 0 });
  }
  const rows = [];
  for (let t = ctx.unit.since!.getTime(); t < ctx.unit.before!.getTime(); t += DAY) {
    const day = new Date(t).toISOString().slice(0, 10);
    const item = (n: string, status: string, completedAt: Date | null) => ({
      org_id: ctx.unit.orgId,
      integration_id: ctx.unit.integrationId,
      provider: 'github',
      external_id: `${source}#${day}-${n}`,
      status,
      created_at: new Date(t + 2 * HOUR),
      completed_at: completedAt,
      last_synced_at: ctx.clock.now(),
      raw: { day },
    });
    rows.push(item('done', 'done', new Date(t + 20 * HOUR)), item('open', 'in_progress', null));
  }
  return { items: await ctx.sink.write(ctx.lease, 'work_items', rows) };
}

const provider: Provider = {
  name: 'github',
  windowDays: 7,
  datasets: [
    { key: 'work-items', tier: 'work_item', costClass: 'core', keepsWatermark: true, surfaces: ['work_items'] },
  ],
  runUnit: writeItems,
  postSyncHandlers: [workItemMetricsHandler],
};

interface ChartTable {
  headers: string[];
  rows: string[][];
}

/** A chart's text alternative: its table's column headers and rows (first cell the time). */
async function chartTable(page: Page, key: string): Promise<ChartTable> {
  const table = page.locator(`figure[data-chart="${key}"] table.chart-numbers`);
  const headers = await table.locator('thead th').allTextContents();
  const rows = await table
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent ?? '')));
  return { headers, rows };
}

/** A chart's column `header` as numbers ('—' → null). */
function column(t: ChartTable, header: string): (number | null)[] {
  const i = t.headers.indexOf(header);
  if (i < 0) throw new Error(`no column ${header} in ${JSON.stringify(t.headers)}`);
  return t.rows.map((r) => (r[i] === '—' ? null : Number(r[i])));
}

const missing = chromiumMissing('the activity page browser test');

describe.skipIf(missing !== null)('the Activity page in chromium', () => {
  let t: TestDatabase;
  let broker: InProcessBroker;
  let engine: Engine;
  let server: RunningApiServer;
  let browser: Chromium | undefined;
  let page: Page;
  let adminToken: string;
  let readToken: string;
  let problems: string[];

  beforeAll(async () => {
    t = await createTestDatabase();
    broker = new InProcessBroker();
    engine = await Engine.open({
      settings: testSettings(),
      db: t.db,
      broker,
      registry: new ProviderRegistry().register(provider, normalizedSink(t.db)),
      logger: silentLogger(),
      migrate: false,
    });
    engine.startWorker({ concurrency: 3 });
    await engine.startReconciler({ id: 'activity-test', scheduler: false });
    server = await startApiServer({
      engine,
      host: '127.0.0.1',
      port: 0,
      rateLimit: false,
      plugins: [dashboardPlugin()],
    });
    const integration = await engine.createIntegration({
      orgId: ORG,
      provider: 'github',
      name: 'Acme GitHub',
      sources: ['acme/app', 'acme/slow', 'acme/broken'],
      datasets: ['work-items'],
    });
    const today = Math.floor(Date.now() / DAY) * DAY;
    const { syncRunId } = await engine.trigger({
      orgId: ORG,
      integrationId: integration.id,
      mode: 'backfill',
      triggeredBy: 'backfill',
      since: new Date(today - 6 * DAY),
      before: new Date(today),
    });
    expect(await runTerminal(t.db, syncRunId, 90_000)).toBe('partial_failed');
    // post_sync delivered the metrics handler: its generation is written.
    await waitFor(async () => {
      const { rows } = await t.db.query(
        `SELECT 1 FROM ${t.db.schema.table('work_item_metrics_daily')} WHERE integration_id = $1 LIMIT 1`,
        [integration.id],
      );
      return rows.length > 0;
    }, 90_000);
    adminToken = (await createApiToken(t.db, systemClock, { orgId: ORG, scopes: ['admin'], name: 'admin' })).token;
    readToken = (await createApiToken(t.db, systemClock, { orgId: ORG, scopes: ['read'], name: 'read' })).token;

    browser = await launchChromium({ height: 900 });
    ({ page, problems } = browser);
    page.setDefaultTimeout(30_000);
    // Injected by the browser's protocol, not by the page: the page's own policy still applies to it.
    await page.addInitScript({
      content:
        'window.cspViolations = []; document.addEventListener("securitypolicyviolation", (e) => ' +
        'window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));',
    });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await engine?.close();
    await broker?.close();
    await t?.drop();
  });

  /** Signs in with `token`, turns auto-refresh off, opens the Activity page; returns the answer it drew. */
  async function openActivity(token: string): Promise<Record<string, unknown>> {
    await signIn(page, server.url, token);
    await page.getByLabel('Auto-refresh').uncheck();
    const answer = page.waitForResponse((r) => r.url().includes('/api/v1/activity') && r.status() === 200);
    await page.getByRole('link', { name: 'Activity' }).click();
    const body = (await (await answer).json()) as Record<string, unknown>;
    await page.getByRole('heading', { name: 'Activity' }).waitFor();
    await page.locator('figure[data-chart="times"] table.chart-numbers').waitFor({ state: 'attached' });
    return body;
  }

  it('draws every chart with the numbers the API answered, which match the database', async () => {
    const a = await openActivity(adminToken);
    type Hour = {
      runs: Record<string, number>;
      units: Record<string, number>;
      rate_limit_deferrals: number;
      units_per_minute: number;
      outbox: { pending_max: number; due_max: number; oldest_due_age_seconds_max: number | null } | null;
      reconciler: { passes: number; errors: number };
    };
    const hours = a.hours as Hour[];
    expect(hours).toHaveLength(24);

    for (const key of [...CHARTS, 'reconciler']) {
      const figure = page.locator(`figure[data-chart="${key}"]`);
      expect(await figure.isVisible(), key).toBe(true);
      const box = await figure.locator('canvas').boundingBox();
      expect(box?.width, key).toBeGreaterThan(100);
      expect(box?.height, key).toBeGreaterThan(50);
      expect((await figure.locator('.chart-summary').textContent())?.length, key).toBeGreaterThan(20);
      expect(await chartTable(page, key).then((c) => c.rows.length), key).toBe(
        key === 'items' || key === 'times' ? 14 : 24,
      );
    }

    // The text alternatives hold the API's numbers.
    const runs = await chartTable(page, 'runs');
    for (const status of Object.keys(hours[0]!.runs))
      expect(column(runs, status.replace(/_/g, ' ')), status).toEqual(hours.map((h) => h.runs[status]));
    const units = await chartTable(page, 'units');
    for (const status of Object.keys(hours[0]!.units))
      expect(column(units, status), status).toEqual(hours.map((h) => h.units[status]));
    expect(column(await chartTable(page, 'deferrals'), 'deferrals')).toEqual(hours.map((h) => h.rate_limit_deferrals));
    expect(column(await chartTable(page, 'drain'), 'units ended per minute')).toEqual(
      hours.map((h) => h.units_per_minute),
    );
    const outbox = await chartTable(page, 'outbox');
    expect(column(outbox, 'pending')).toEqual(hours.map((h) => h.outbox?.pending_max ?? null));
    expect(column(outbox, 'due')).toEqual(hours.map((h) => h.outbox?.due_max ?? null));
    expect(hours.at(-1)!.outbox).not.toBeNull(); // the reconciler sampled this hour
    expect(column(await chartTable(page, 'reconciler'), 'passes')).toEqual(hours.map((h) => h.reconciler.passes));

    // … which are the database's: one partial_failed run; two units done, one failed; one deferral.
    const sum = (f: (h: Hour) => number) => hours.reduce((n, h) => n + f(h), 0);
    const { rows: dbRuns } = await t.db.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM ${t.db.schema.sync_runs} WHERE org_id = $1 GROUP BY status`,
      [ORG],
    );
    expect(dbRuns).toEqual([{ status: 'partial_failed', n: 1 }]);
    expect(sum((h) => h.runs.partial_failed!)).toBe(1);
    const { rows: dbUnits } = await t.db.query<{ status: string; n: number; deferrals: number }>(
      `SELECT status, count(*)::int AS n, sum(rate_limit_deferrals)::int AS deferrals
         FROM ${t.db.schema.sync_run_units} WHERE org_id = $1 GROUP BY status ORDER BY status`,
      [ORG],
    );
    expect(dbUnits).toEqual([
      { status: 'failed', n: 1, deferrals: 0 },
      { status: 'success', n: 2, deferrals: 1 },
    ]);
    expect(sum((h) => h.units.success!)).toBe(2);
    expect(sum((h) => h.units.failed!)).toBe(1);
    expect(sum((h) => h.rate_limit_deferrals)).toBe(1);

    // Daily metrics: the handler's latest generation per day, summed over the one integration.
    const { rows: dbDays } = await t.db.query<{ day: string; created: number; completed: number; wip: number }>(
      `SELECT DISTINCT ON (day) day::text AS day, items_created AS created, items_completed AS completed, wip
         FROM ${t.db.schema.table('work_item_metrics_daily')} WHERE org_id = $1 ORDER BY day, computed_at DESC`,
      [ORG],
    );
    expect(dbDays.length).toBeGreaterThanOrEqual(6);
    const items = await chartTable(page, 'items');
    const byDay = new Map(items.rows.map((r) => [r[0]!, r]));
    for (const d of dbDays.filter((d) => byDay.has(d.day))) {
      expect(column({ headers: items.headers, rows: [byDay.get(d.day)!] }, 'created')).toEqual([d.created]);
      expect(column({ headers: items.headers, rows: [byDay.get(d.day)!] }, 'completed')).toEqual([d.completed]);
      expect(column({ headers: items.headers, rows: [byDay.get(d.day)!] }, 'open (WIP)')).toEqual([d.wip]);
    }
    expect(column(items, 'created').reduce((n: number, v) => n + (v ?? 0), 0)).toBe(24); // 2 sources × 6 days × 2 items
    expect(column(await chartTable(page, 'times'), 'cycle time p50').filter((v) => v !== null)).toEqual(
      Array(6).fill(18),
    );

    await page.locator('figure[data-chart="times"] canvas').scrollIntoViewIfNeeded();
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-activity.png'), fullPage: true });
    expect(await page.evaluate('window.cspViolations')).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('shows a read token the org’s charts but not the system-wide reconciler chart', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    const a = await openActivity(readToken);
    expect(a.includes_system).toBe(false);
    for (const key of CHARTS) expect(await page.locator(`figure[data-chart="${key}"]`).isVisible(), key).toBe(true);
    expect(await page.locator('figure[data-chart="reconciler"]').count()).toBe(0);
    expect(await page.evaluate('window.cspViolations')).toEqual([]);
    expect(problems).toEqual([]);
  });
});
