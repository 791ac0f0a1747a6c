/**
 * Jira webhooks against a search that lags (the emulator's index shows a change two minutes late, as
 * Jira's eventually consistent search may): an issue edited at the emulator, announced by the
 * emulator's own signed delivery, lands in the normalized store through the run that delivery armed
 * while search still shows the old issue — the unit reads the named issue directly. The API server, a
 * worker and the reconciler on real PostgreSQL and Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jiraDemoIntegration, startJiraEmulator, type JiraEmulator } from '../../src/emulators/jira/index.js';
import { createJiraProvider } from '../../src/providers/jira/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { incrementalRun, openApiStack, runEnded, type ApiStack } from '../helpers/apiStack.js';
import { waitFor } from '../helpers/engine.js';

const ORG = 'org-jira-webhook-lag';
const SCALE = { projects: 2, issues: 40, users: 4, maxComments: 1, longLists: 0, sprints: 1, days: 10 };
const LAG_MS = 120_000;

describe('Jira webhooks while search lags', () => {
  let stack: ApiStack;
  let emu: JiraEmulator;
  let integrationId = '';

  beforeAll(async () => {
    emu = await startJiraEmulator({ scale: SCALE, seed: 61, searchLagMs: LAG_MS });
    stack = await openApiStack({
      orgId: ORG,
      tag: 'jira-webhook-lag',
      concurrency: 2,
      registry: (db) => new ProviderRegistry().register(createJiraProvider({}), normalizedSink(db)),
    });
    const spec = jiraDemoIntegration(emu);
    const res = await stack.send('POST', '/api/v1/integrations', {
      ...spec,
      name: 'lagging search',
      datasets: ['work-items', 'work-item-comments'],
    });
    expect(res.status, res.text).toBe(201);
    integrationId = (res.json as { id: string }).id;
    const made = await stack.send('POST', `/api/v1/integrations/${integrationId}/webhook-secret`);
    expect(made.status, made.text).toBe(201);
    const secret = (made.json as { secret: string }).secret;
    expect(await runEnded(stack, await incrementalRun(stack, integrationId))).toBe('success');
    emu.setWebhookTarget({ url: `${stack.server.url}/api/v1/webhooks/jira/${integrationId}`, secret });
  }, 90_000);

  afterAll(async () => {
    await stack?.close();
    await emu?.close();
  });

  async function storedUpdated(issueId: string): Promise<number | null> {
    const { rows } = await stack.t.db.query<{ updated_at: Date | null }>(
      `SELECT updated_at FROM ${stack.t.db.schema.table('work_items')}
        WHERE integration_id = $1 AND external_id = $2`,
      [integrationId, issueId],
    );
    return rows[0]?.updated_at?.getTime() ?? null;
  }

  it('an edit search does not show yet lands through the run its delivery armed', async () => {
    const edited: { id: string; updated: number }[] = [];
    const logFrom = emu.requestLog.length;
    for (let i = 0; i < 3; i++) {
      const key = emu.churnEdit();
      expect(key).not.toBeNull();
      const issue = [...emu.data.issuesById.values()].find((x) => x.key === key)!;
      edited.push({ id: issue.id, updated: issue.updated });
    }
    await emu.webhooks!.flush();
    expect(emu.webhooks!.stats()).toMatchObject({ failed: 0 });
    const landed = await waitFor(
      async () => {
        const stored = await Promise.all(edited.map((e) => storedUpdated(e.id)));
        return stored.every((ms, i) => ms !== null && ms >= edited[i]!.updated) ? stored : null;
      },
      60_000,
      200,
    );
    expect(landed).toHaveLength(3);
    // Search could not have shown any of it: the index is still behind.
    expect(emu.searchSettled()).toBe(false);
    const { rows } = await stack.t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${stack.t.db.schema.webhook_named_items} WHERE integration_id = $1`,
      [integrationId],
    );
    expect(rows[0]!.n).toBe(0);
    const { rows: deliveries } = await stack.t.db.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM ${stack.t.db.schema.webhook_deliveries}
        WHERE integration_id = $1 GROUP BY status`,
      [integrationId],
    );
    expect(deliveries).toEqual([{ status: 'received', n: 3 }]);
    // Statuses are read once per work-item unit, however many reads (search, direct) it made.
    const { rows: units } = await stack.t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${stack.t.db.schema.sync_run_units} u
         JOIN ${stack.t.db.schema.sync_runs} r ON r.id = u.sync_run_id
        WHERE r.integration_id = $1 AND r.triggered_by = 'webhook'
          AND u.dataset_key = 'work-items' AND u.started_at IS NOT NULL`,
      [integrationId],
    );
    const statusReads = emu.requestLog.slice(logFrom).filter((l) => l.path === '/rest/api/3/status').length;
    expect(units[0]!.n).toBeGreaterThan(0);
    expect(statusReads).toBe(units[0]!.n);
  }, 90_000);
});
