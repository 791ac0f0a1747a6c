/**
 * The dashboard's Freshness page, in Debian's chromium driven by playwright-core against a real
 * server (API + dashboard) on a cloned PostgreSQL database whose sources were synced by real runs
 * of the synthetic provider (one fresh, one failing, one deferred by a rate limit, one never
 * synced): reached from the main navigation with a read-only token, it shows every row's state in
 * words, worst first, the ones that are not fresh marked by a class and in capitals, and the values
 * the API answers and the database holds. Saves a screenshot (docs/screenshots/ with
 * SYNCRELAY_UPDATE_SCREENSHOTS=1, else test-output/screenshots/).
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { dashboardPlugin } from '../../src/dashboard/index.js';
import { createSchedule } from '../../src/planning/schedules.js';
import { call, openApiHarness, ORG_A, type ApiHarness } from '../api/helpers.js';
import { seedFreshnessStates, type FreshnessSeed } from '../helpers/freshness.js';
import { chromiumMissing, launchChromium, SCREENSHOTS, signIn, type Chromium } from '../helpers/browser.js';

let h: ApiHarness;
let seed: FreshnessSeed;
beforeAll(async () => {
  h = await openApiHarness({ broker: new InProcessBroker(), server: { plugins: [dashboardPlugin()] } });
  h.engine.startWorker({ concurrency: 2 });
  await h.engine.startReconciler({ scheduler: false });
  seed = await seedFreshnessStates(h.engine, ORG_A, 'Acme Linear (synthetic)');
  await createSchedule(h.db, h.engine.ctx.clock, {
    orgId: ORG_A,
    integrationId: seed.integrationId,
    cron: '0 * * * *',
  });
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const missing = chromiumMissing('the freshness page browser test');

describe.skipIf(missing !== null)('the freshness page in chromium', () => {
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

  it('shows each source × dataset worst first, marks the ones not fresh, as the API and database say', async () => {
    await signIn(page, h.url, h.tokens.read);

    await page.getByRole('link', { name: 'Freshness', exact: true }).click();
    await page.getByRole('heading', { name: 'Freshness of Acme Linear (synthetic)' }).waitFor();
    const rows = page.locator('#freshness-rows tr');
    await expect.poll(() => rows.count()).toBe(4);

    const api = await call(h.url, 'GET', `/api/v1/integrations/${seed.integrationId}/freshness`, {
      token: h.tokens.read,
    });
    expect(api.status).toBe(200);
    const items = api.body.items as Record<string, string | number | null>[];

    const shown = await rows.evaluateAll((trs) =>
      trs.map((tr) => ({
        state: tr.getAttribute('data-state'),
        source: tr.getAttribute('data-source'),
        marked: tr.classList.contains('attention'),
        cells: [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim()),
        times: Object.fromEntries(
          [...tr.querySelectorAll('td[data-field]')].map((td) => [
            td.getAttribute('data-field'),
            td.querySelector('time')?.getAttribute('datetime') ?? null,
          ]),
        ),
      })),
    );
    expect(shown.map((r) => [r.source, r.state, r.marked, r.cells[2]])).toEqual([
      ['s-failing', 'failing', true, 'FAILING'],
      ['s-deferred', 'deferred_by_budget', true, 'DEFERRED BY BUDGET'],
      ['s-never', 'never_synced', true, 'NEVER SYNCED'],
      ['s-fresh', 'fresh', false, 'fresh'],
    ]);
    expect(shown.map((r) => [r.source, r.state])).toEqual(items.map((i) => [i.source_key, i.state]));
    for (const [n, r] of shown.entries()) {
      expect(r.times.watermark).toBe(items[n]!.watermark_at);
      expect(r.times['last-success']).toBe(items[n]!.last_success_at);
    }
    expect(shown[0]!.cells[6]).toBe(`provider_error${seed.runs.failing.slice(0, 8)}`);
    expect(shown[1]!.times.detail).toBe(items[1]!.deferred_until);
    expect(shown[3]!.cells[3]).toMatch(/^\d+(\.\d)? (ms|s)$/);

    const db = h.db;
    const { rows: marks } = await db.query<{ watermark_at: Date }>(
      `SELECT watermark_at FROM ${db.schema.sync_watermarks} WHERE source_id = $1 AND dataset_key = 'work-items'`,
      [seed.sources['s-fresh']],
    );
    expect(shown[3]!.times.watermark).toBe(marks[0]!.watermark_at.toISOString());
    const { rows: units } = await db.query<{ available_at: Date }>(
      `SELECT available_at FROM ${db.schema.sync_run_units} WHERE sync_run_id = $1 AND source_id = $2`,
      [seed.runs.deferred, seed.sources['s-deferred']],
    );
    expect(shown[1]!.times.detail).toBe(units[0]!.available_at.toISOString());

    const chips = (await page.locator('#freshness-counts li').allTextContents()).map((t) => t.replace(/\s+/g, ''));
    expect(chips).toEqual(
      Object.entries(api.body.counts as Record<string, number>).map(([k, n]) => `${k.replace(/_/g, '')}${n}`),
    );
    expect(await page.locator('#freshness-rule').textContent()).toMatch(
      /^Fresh while the lag is within 2 h 0 min \(twice the tightest schedule interval\)\./,
    );
    expect(await page.locator('#freshness-schedules').textContent()).toBe('Schedules: 0 * * * * UTC incremental');
    expect(await page.locator('[data-nav="freshness"]').getAttribute('aria-current')).toBe('page');

    await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-freshness.png'), fullPage: true });
    expect(problems).toEqual([]);
  });
});
