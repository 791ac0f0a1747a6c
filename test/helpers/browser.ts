/**
 * What the dashboard's browser tests share: Debian's chromium (installed when missing and this
 * process may), driven by playwright-core in a throw-away profile, every page error and console
 * error collected, and where screenshots go (docs/screenshots/ with SYNCRELAY_UPDATE_SCREENSHOTS=1,
 * else test-output/screenshots/).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const SCREENSHOTS =
  process.env.SYNCRELAY_UPDATE_SCREENSHOTS === '1'
    ? join(ROOT, 'docs/screenshots')
    : join(ROOT, 'test-output/screenshots');

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

/**
 * Why `what` cannot run (chromium missing and not installable), or null. Under CI that is an error;
 * elsewhere the test is skipped with a warning.
 */
export function chromiumMissing(what: string): string | null {
  const missing = ensureChromium();
  if (!missing) return null;
  if (process.env.CI) throw new Error(`${what}: ${missing}`);
  console.warn(`skipping ${what}: ${missing} (apt-get install chromium)`);
  return missing;
}

export interface Chromium {
  context: BrowserContext;
  page: Page;
  /** Page errors and console errors, as they came. */
  problems: string[];
  close(): Promise<void>;
}

/** Headless chromium on a fresh profile, UTC and en-GB, 1360 × `height`; the screenshots folder made. */
export async function launchChromium(opts: { height?: number } = {}): Promise<Chromium> {
  const profile = mkdtempSync(join(tmpdir(), 'syncrelay-chromium-'));
  const problems: string[] = [];
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    viewport: { width: 1360, height: opts.height ?? 860 },
    timezoneId: 'UTC',
    locale: 'en-GB',
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
  return {
    context,
    page,
    problems,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Opens the dashboard at `url`, signs in with `token` and waits for the first page (Job run history). */
export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Job run history' }).waitFor();
}
