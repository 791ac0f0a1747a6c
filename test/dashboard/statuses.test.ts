/**
 * The dashboard's status lists come from the domain: the server builds `/dashboard/statuses.js`
 * from src/domain/statuses.ts, and app.js imports them from there instead of spelling them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker } from '../../src/broker/inprocess.js';
import { dashboardPlugin } from '../../src/dashboard/index.js';
import {
  JOB_RUN_STATUSES,
  RUN_STATUSES,
  SYNC_MODES,
  TERMINAL_RUN_STATUSES,
  TERMINAL_UNIT_STATUSES,
  TRIGGERS,
  UNIT_STATUSES,
} from '../../src/domain/statuses.js';
import { openApiHarness, type ApiHarness } from '../api/helpers.js';

let h: ApiHarness;
beforeAll(async () => {
  h = await openApiHarness({ broker: new InProcessBroker(), server: { plugins: [dashboardPlugin()] } });
});
afterAll(async () => {
  await h?.close();
});

async function served(path: string): Promise<{ response: Response; text: string }> {
  const response = await fetch(`${h.url}${path}`);
  return { response, text: await response.text() };
}

/** Loads a module's source the way a browser would, from its text: its exports by name. */
async function load(source: string): Promise<Record<string, unknown>> {
  const module = (await import(`data:text/javascript;base64,${Buffer.from(source).toString('base64')}`)) as object;
  return Object.fromEntries(Object.entries(module));
}

describe('the dashboard takes its status lists from the domain', () => {
  it('serves statuses.js without a token, under the page policy, with the domain lists', async () => {
    const { response, text } = await served('/dashboard/statuses.js');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    const lists = await load(text);
    expect(lists).toEqual({
      JOB_RUN_STATUSES: [...JOB_RUN_STATUSES],
      UNIT_STATUSES: [...UNIT_STATUSES],
      TERMINAL_RUN_STATUSES: [...TERMINAL_RUN_STATUSES],
      TERMINAL_UNIT_STATUSES: [...TERMINAL_UNIT_STATUSES],
      SYNC_MODES: [...SYNC_MODES],
      TRIGGERS: [...TRIGGERS],
    });
  });

  it('app.js imports every list it uses from statuses.js and spells none of them', async () => {
    const app = (await served('/dashboard/app.js')).text;
    const imported = /import\s*\{([^}]*)\}\s*from\s*'\.\/statuses\.js';/.exec(app);
    expect(imported).not.toBeNull();
    const names = imported![1]!
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean);
    const lists = await load((await served('/dashboard/statuses.js')).text);
    expect(names.filter((n) => !(n in lists))).toEqual([]);
    expect(names).toContain('UNIT_STATUSES');

    const literals = new Set([...app.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]));
    // Triggers too ('backfill' is also a mode, which the sync form leaves out by name).
    const triggers = TRIGGERS.filter((t) => !(SYNC_MODES as readonly string[]).includes(t));
    const statuses = new Set([...RUN_STATUSES, ...UNIT_STATUSES, ...JOB_RUN_STATUSES, ...triggers]);
    // 'cancelled' is the cancel endpoint's outcome, compared once; no status list is written out.
    expect([...statuses].filter((s) => literals.has(s))).toEqual(['cancelled']);
  });
});
