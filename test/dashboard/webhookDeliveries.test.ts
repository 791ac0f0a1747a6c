/**
 * The dashboard's webhook-deliveries page, in Debian's chromium driven by playwright-core against a
 * real server (API + dashboard) on a cloned PostgreSQL database: linked from the integration's card,
 * it shows the last 24 h summed up (counts, delivery-to-data p50/p95) and the newest deliveries, its
 * status filter offers the statuses the API counts, and the page runs under its Content-Security-Policy
 * with a read-only token. app.js spells no delivery status itself.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { dashboardPlugin } from '../../src/dashboard/index.js';
import { WEBHOOK_DELIVERY_STATUSES, WEBHOOK_OUTCOMES } from '../../src/store/webhookDeliveries.js';
import { openApiHarness, ORG_A, type ApiHarness } from '../api/helpers.js';
import { seedIntegration, seedKnownWindow } from '../helpers/webhookDeliveries.js';
import { chromiumMissing, launchChromium, signIn, type Chromium } from '../helpers/browser.js';

let h: ApiHarness;
let integrationId: string;
beforeAll(async () => {
  h = await openApiHarness({ broker: new InProcessBroker(), server: { plugins: [dashboardPlugin()] } });
  integrationId = await seedIntegration(h.db, ORG_A, 'github', 'Acme GitHub');
  await seedKnownWindow(h.db, ORG_A, integrationId, new Date());
});
afterAll(async () => {
  await h?.close();
});

it('app.js spells no delivery status or outcome: it shows what the API answers', async () => {
  const app = await (await fetch(`${h.url}/dashboard/app.js`)).text();
  const literals = new Set([...app.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]));
  // 'pending' is also a JobRun status, checked by statuses.test.ts.
  const spelled = [...WEBHOOK_DELIVERY_STATUSES, ...WEBHOOK_OUTCOMES].filter((s) => literals.has(s));
  expect(spelled).toEqual([]);
  expect(app).toContain('/webhook-deliveries');
});

const missing = chromiumMissing('the deliveries page browser test');

describe.skipIf(missing !== null)('the deliveries page in chromium', () => {
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

  it('is linked from the integration, sums up the last 24 h and lists the newest deliveries', async () => {
    await signIn(page, h.url, h.tokens.read);

    await page.getByRole('link', { name: 'Integrations' }).click();
    const card = page.locator(`[data-integration="${integrationId}"]`);
    await card.getByRole('link', { name: 'Webhook deliveries →' }).click();
    await page.getByRole('heading', { name: 'Webhook deliveries of Acme GitHub' }).waitFor();
    expect(page.url()).toContain(`#/integrations/${integrationId}/webhooks`);

    await expect.poll(() => page.locator('#stat-deliveries').textContent()).toBe('18');
    expect(await page.locator('#stat-runs-armed').textContent()).toBe('11');
    expect(await page.locator('#stat-p50').textContent()).toBe('4.0 s');
    expect(await page.locator('#stat-p95').textContent()).toBe('10.0 s');
    expect(await page.locator('#delivery-timing').textContent()).toBe(
      'Delivery → data over 12 deliveries whose run succeeded: p50 4.0 s, p95 10.0 s, max 10.0 s.',
    );
    const chips = async (id: string) =>
      (await page.locator(`#${id} li`).allTextContents()).map((t) => t.replace(/\s+/g, ' ').trim());
    expect(await chips('delivery-status-counts')).toEqual(['received15', 'duplicate2', 'rejected1']);
    expect(await chips('delivery-outcome-counts')).toEqual(['armed11', 'coalesced2', 'pending1', 'ignored1']);

    const rows = page.locator('#delivery-rows tr');
    await expect.poll(() => rows.count()).toBe(19);
    const first = await rows.first().locator('td').allTextContents();
    expect(first.slice(1)).toEqual(['rejected', '—', '—', '—', '—', '—']);

    const filter = page.getByLabel('Delivery status');
    const options = await filter
      .locator('option')
      .evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
    expect(options).toEqual(['', ...WEBHOOK_DELIVERY_STATUSES]);
    await filter.selectOption('duplicate');
    await expect.poll(() => rows.count()).toBe(2);
    expect(await page.locator('#delivery-rows tr[data-status="duplicate"]').count()).toBe(2);
    expect(problems).toEqual([]);
  });
});
