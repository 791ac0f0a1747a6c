/**
 * The dashboard in a real browser: Debian's chromium driven by playwright-core against a real
 * server (API + dashboard) on a cloned PostgreSQL database, with a worker and the reconciler in
 * this process. Signs in with a token, triggers a backfill from the page, watches it finish, and
 * checks the run, outbox and reconciler pages; saves screenshots (to docs/screenshots/ with
 * SYNCRELAY_UPDATE_SCREENSHOTS=1).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type RunningApiServer } from '../../src/api/server.js';
import { createApiToken } from '../../src/api/tokens.js';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { systemClock } from '../../src/clock.js';
import { dashboardPlugin } from '../../src/dashboard/index.js';
import { JOB_RUN_STATUSES, UNIT_STATUSES } from '../../src/domain/statuses.js';
import { Engine } from '../../src/engine.js';
import { silentLogger } from '../../src/logger.js';
import { testSettings } from '../helpers/engine.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';

const CHROMIUM = '/usr/bin/chromium';
const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
/** Pages not shown in the README go where CI keeps its artifacts. */
const MORE_SCREENSHOTS = join(ROOT, 'test-output/screenshots');
/** The README's screenshots are rewritten only on request (SYNCRELAY_UPDATE_SCREENSHOTS=1). */
const SCREENSHOTS =
  process.env.SYNCRELAY_UPDATE_SCREENSHOTS === '1' ? join(ROOT, 'docs/screenshots') : MORE_SCREENSHOTS;
const ORG = 'acme';

/** Installs Debian's chromium when it is missing and this process may (root with apt-get). */
function ensureChromium(): string | null {
  if (existsSync(CHROMIUM)) return null;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get'))
    return `${CHROMIUM} is missing and apt-get cannot run here`;
  const r = spawnSync(
    'bash',
    ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium'],
    { stdio: 'ignore', timeout: 8 * 60_000 },
  );
  return existsSync(CHROMIUM)
    ? null
    : `${CHROMIUM} is missing and installing Debian's chromium failed (exit ${String(r.status)})`;
}

/** The page from the top down to the end of its card, at the viewport's width. */
async function screenshotToContent(page: Page, path: string): Promise<void> {
  const card = await page.locator('main .card').last().boundingBox();
  const viewport = page.viewportSize()!;
  const height = Math.min(viewport.height, Math.ceil((card?.y ?? 0) + (card?.height ?? viewport.height) + 24));
  await page.screenshot({ path, clip: { x: 0, y: 0, width: viewport.width, height } });
}

/** The values of a <select>'s options, in order. */
async function optionValues(select: Locator): Promise<string[]> {
  return select
    .locator('option')
    .evaluateAll((options) => options.map((o) => (o as unknown as { value: string }).value));
}

const missing = ensureChromium();
if (missing) {
  if (process.env.CI) throw new Error(`dashboard browser test: ${missing}`);
  console.warn(`skipping the dashboard browser test: ${missing} (apt-get install chromium)`);
}

describe.skipIf(missing !== null)('dashboard in chromium', () => {
  let t: TestDatabase;
  let broker: InProcessBroker;
  let engine: Engine;
  let server: RunningApiServer;
  let context: BrowserContext;
  let page: Page;
  let profile: string;
  let adminToken: string;
  let readToken: string;
  let integrationId: string;
  let runId: string;
  const problems: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    broker = new InProcessBroker();
    engine = await Engine.open({ settings: testSettings(), db: t.db, broker, logger: silentLogger(), migrate: false });
    engine.startWorker({ concurrency: 4 });
    await engine.startReconciler({ id: 'dashboard-test' });
    server = await startApiServer({
      engine,
      host: '127.0.0.1',
      port: 0,
      rateLimit: false,
      plugins: [dashboardPlugin()],
    });
    const integration = await engine.createIntegration({
      orgId: ORG,
      provider: 'synthetic',
      name: 'Acme Linear (synthetic)',
      sources: ['team-a', 'team-b', 'team-c'],
      datasets: ['teams', 'work-items', 'work-item-comments'],
      config: { itemsPerDay: 2, latencyMs: 20 },
    });
    integrationId = integration.id;
    adminToken = (await createApiToken(t.db, systemClock, { orgId: ORG, scopes: ['admin'], name: 'dashboard test' }))
      .token;
    readToken = (await createApiToken(t.db, systemClock, { orgId: ORG, scopes: ['read'], name: 'read only' })).token;

    profile = mkdtempSync(join(tmpdir(), 'syncrelay-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
      viewport: { width: 1360, height: 860 },
      timezoneId: 'UTC',
      locale: 'en-GB',
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      // A refused request is logged by the browser too; those the test provokes are expected.
      if (msg.type() === 'error' && !/status of 40[0-9]/.test(msg.text())) problems.push(`console: ${msg.text()}`);
    });
    mkdirSync(SCREENSHOTS, { recursive: true });
    mkdirSync(MORE_SCREENSHOTS, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await server?.close();
    await engine?.close();
    await broker?.close();
    await t?.drop();
  });

  it('refuses a bad token and signs in with a good one', async () => {
    await page.goto(server.url);
    await expect.poll(() => page.title()).toBe('Sign in · syncrelay');
    await page.getByLabel('API token').fill('sr_not-a-real-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('#login-error').textContent()).toMatch(/invalid or revoked/);

    await page.getByLabel('API token').fill(adminToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Job run history' }).waitFor();
    expect(await page.locator('#who').textContent()).toMatch(/org acme · admin/);
    await expect.poll(() => page.locator('#history-rows').textContent()).toContain('No job runs match');
    expect(await page.evaluate("sessionStorage.getItem('syncrelay.token')")).toBe(adminToken);
  });

  it('shows the API error when a backfill is refused, and triggers one from the integrations page', async () => {
    await page.getByRole('link', { name: 'Integrations' }).click();
    const card = page.locator(`[data-integration="${integrationId}"]`);
    await card.getByRole('heading', { name: 'Acme Linear (synthetic)' }).waitFor();
    expect(await card.textContent()).toContain('team-a, team-b, team-c');
    // The sync form offers the domain's modes but backfill, which has its own form.
    expect(await optionValues(card.getByLabel('Mode'))).toEqual(['incremental', 'full_resync', 'verify']);
    const backfill = card.getByRole('form', { name: /Start a backfill/ });

    await backfill.getByLabel('Since (UTC, inclusive)').fill('2026-02-01');
    await backfill.getByLabel('Before (UTC, exclusive)').fill('2026-01-01');
    await backfill.getByRole('button', { name: 'Start backfill' }).click();
    const error = page.getByRole('alert').filter({ hasText: 'Error:' });
    await expect.poll(() => error.textContent()).toMatch(/HTTP 400, invalid_input/);

    await backfill.getByLabel('Since (UTC, inclusive)').fill('2026-01-01');
    await backfill.getByLabel('Before (UTC, exclusive)').fill('2026-01-29');
    await backfill.getByRole('button', { name: 'Start backfill' }).click();
    const accepted = page.locator('#accepted-run');
    await accepted.waitFor();
    expect(await page.locator('#notice').textContent()).toMatch(/Backfill accepted: run [0-9a-f]{8}/);
    expect(await error.isVisible()).toBe(false);
    runId = (await accepted.getAttribute('href'))!.replace('#/runs/', '');
    expect(runId).toMatch(/^[0-9a-f-]{36}$/);
    await page.screenshot({ path: join(MORE_SCREENSHOTS, 'dashboard-integrations.png'), fullPage: true });
    await page.locator('#notice').getByRole('button', { name: 'Dismiss' }).click();
  });

  it('watches the run finish on the history page', async () => {
    await page.getByRole('link', { name: 'History' }).click();
    const row = page.locator(`#history-rows tr[data-sync-run="${runId}"]`);
    await row.waitFor();
    // The page refreshes itself: no reload, just wait for the terminal status to appear.
    await row.locator('.status .badge-success').waitFor({ timeout: 60_000 });
    const cells = await row.locator('td').allTextContents();
    expect(cells[1]).toBe('Acme Linear (synthetic)');
    expect(cells[2]).toBe('backfill');
    expect(cells[3]).toBe('backfill');
    expect(cells[4]).toBe('success');
    expect(cells[5]).toBe('25 / 25 (100%)'); // 1 reference unit + 3 teams × 2 datasets × 4 weeks

    // The status filter lists the domain's JobRun statuses (served by /dashboard/statuses.js).
    expect(await optionValues(page.getByLabel('Status'))).toEqual(['', ...JOB_RUN_STATUSES]);
    await page.getByLabel('Status').selectOption('failed');
    await expect.poll(() => page.locator('#history-rows').textContent()).toContain('No job runs match');
    await page.getByLabel('Status').selectOption('success');
    await row.waitFor();
    await screenshotToContent(page, join(SCREENSHOTS, 'dashboard-history.png'));
  });

  it('opens the run page: JobRun, progress 100 % and every unit', async () => {
    await page.getByRole('link', { name: `Open run ${runId}` }).click();
    await page.getByRole('heading', { name: /^Run [0-9a-f]{8}/ }).waitFor();
    await page.locator('#unit-rows tr[data-unit]').first().waitFor();
    expect(await page.locator('#run-status').textContent()).toBe('success');

    const bar = page.locator('#run-progress progress');
    expect(await bar.getAttribute('value')).toBe('25');
    expect(await bar.getAttribute('max')).toBe('25');
    expect(await page.locator('#run-progress .progress-text').textContent()).toBe('25 / 25 (100%)');
    expect(await page.locator('#unit-counts li[data-status="success"]').textContent()).toBe('success25');
    expect(await optionValues(page.getByLabel('Unit status'))).toEqual(['', ...UNIT_STATUSES]);

    const runFacts = await page.locator('#run-facts').textContent();
    expect(runFacts).toContain(runId);
    expect(runFacts).toContain('Acme Linear (synthetic)');
    const jobFacts = await page.locator('#job-facts').textContent();
    expect(jobFacts).toMatch(/Statussuccess/);
    expect(jobFacts).toMatch(/Triggered bybackfill/);

    const rows = page.locator('#unit-rows tr[data-unit]');
    expect(await rows.count()).toBe(25);
    const statuses = new Set(await rows.locator('td:nth-child(1)').allTextContents());
    expect([...statuses]).toEqual(['success']);
    const datasets = new Set(await rows.locator('td:nth-child(3)').allTextContents());
    expect([...datasets].sort()).toEqual(['teams', 'work-item-comments', 'work-items']);
    const sources = new Set(await rows.locator('td:nth-child(2)').allTextContents());
    expect(sources).toContain('team-a');
    const windows = await rows.locator('td:nth-child(4)').allTextContents();
    expect(windows).toContain('2026-01-01 → 2026-01-08');
    expect(windows).toContain('2026-01-22 → 2026-01-29');
    for (const attempts of await rows.locator('td:nth-child(5)').allTextContents())
      expect(Number(attempts)).toBeGreaterThanOrEqual(1);
    expect(await page.getByRole('button', { name: 'Cancel run' }).isDisabled()).toBe(true);

    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-run.png'), fullPage: true });
  });

  it('shows outbox health and reconciler passes', async () => {
    await page.getByRole('link', { name: 'Outbox' }).click();
    await page.getByRole('heading', { name: 'Outbox health' }).waitFor();
    const dispatch = page.locator('#outbox-count-rows tr[data-kind="dispatch_sync_run"]');
    await dispatch.waitFor();
    expect(Number(await dispatch.locator('td[data-status="dispatched"]').textContent())).toBe(1);
    await expect.poll(() => page.locator('#stat-claims').textContent()).toBe('0');
    expect(await page.locator('#outbox-errors').textContent()).toContain('No recent errors.');
    await page.screenshot({ path: join(MORE_SCREENSHOTS, 'dashboard-outbox.png') });

    await page.getByRole('link', { name: 'Reconciler' }).click();
    await page.getByRole('heading', { name: 'Reconciler passes' }).waitFor();
    await page.locator('#pass-rows tr[data-pass]').first().waitFor();
    expect(await page.locator('#pass-rows tr[data-pass]').first().textContent()).toContain('dashboard-test');
    expect(await page.locator('#pass-totals').textContent()).toMatch(/relayed|expired|materialized/);
    expect(await page.locator('#stat-pass-errors').textContent()).toBe('0');
    await page.screenshot({ path: join(MORE_SCREENSHOTS, 'dashboard-reconciler.png'), fullPage: true });
  });

  it('logs out, and a read-only token sees no enabled trigger or cancel buttons', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByLabel('API token').waitFor();
    expect(await page.evaluate("sessionStorage.getItem('syncrelay.token')")).toBeNull();

    await page.getByLabel('API token').fill(readToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Signing in again keeps the page that was open.
    await page.getByRole('heading', { name: 'Reconciler passes' }).waitFor();
    expect(await page.locator('#who').textContent()).toMatch(/org acme · read$/);
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByText('This token lacks the trigger scope').waitFor();
    expect(await page.getByRole('button', { name: 'Start backfill' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Start sync' }).isDisabled()).toBe(true);
    await page.goto(`${server.url}/#/runs/${runId}`);
    await page.locator('#unit-rows tr[data-unit]').first().waitFor();
    expect(await page.getByRole('button', { name: 'Cancel run' }).isDisabled()).toBe(true);
    expect(problems).toEqual([]);
  });
});
