/**
 * Webhooks the emulators send, end to end, for GitHub, Linear and Jira: each emulator beside a whole
 * install (API server, BullMQ worker, reconciler; real PostgreSQL and Redis). After one run started
 * through the API, the emulator is pointed at the integration's webhook URL with redeliveries and
 * reordering switched on, and a short debounce in the engine. About ten edits and one deletion are
 * made through the emulator; with no further trigger, the normalized store comes to hold every
 * edit (each edited item's `updated_at` equal to the emulator's own record) and the deleted item's
 * `deleted_at`. Then: one `received` row per delivery id the emulator sent, one `duplicate` per
 * redelivery, none rejected, at least one run triggered by a webhook, nothing remembered once
 * idle, and the secret in no log line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import type { ItemRecord } from '../../src/emulators/github/model.js';
import { jiraDemoIntegration, startJiraEmulator, type JiraEmulator } from '../../src/emulators/jira/index.js';
import { findIssue } from '../../src/emulators/jira/deletions.js';
import { linearIntegrationFor, startLinearEmulator, type LinearEmulator } from '../../src/emulators/linear/index.js';
import type { WebhookSender } from '../../src/emulators/core/webhooks.js';
import { defaultRegistry } from '../../src/providers/registry.js';
import { incrementalRun, openApiStack, runEnded, type ApiStack } from '../helpers/apiStack.js';
import { waitFor } from '../helpers/engine.js';
import { findLeaks } from '../helpers/leakScan.js';

const ORG = 'org-webhooks-emulated';
const DEBOUNCE_MS = 300;
const FAULTS = { redeliver: 0.3, reorderWindowMs: 200 };
const EDITS = 10;

/** An emulator as this test drives it, whichever provider it imitates. */
interface EmulatedCase {
  provider: 'github' | 'linear' | 'jira';
  webhooks: () => WebhookSender | null;
  setWebhookTarget(target: { url: string; secret: string; faults: typeof FAULTS } | null): void;
  /** The fields of `POST /api/v1/integrations`. */
  integration(): Record<string, unknown>;
  /** Makes the edits; the external ids of the items edited (each may repeat). */
  edit(): string[];
  /** Deletes one item no edit touched; its external id. */
  remove(): string;
  /** The emulator's own `updated` of the item (epoch ms): the ground truth. */
  updatedMs(externalId: string): number;
  close(): Promise<void>;
}

async function githubCase(): Promise<EmulatedCase> {
  const scale = {
    repos: 3,
    issues: 30,
    pulls: 3,
    maxComments: 1,
    maxReviews: 0,
    directCommits: 1,
    members: 3,
    days: 5,
  };
  const emu: GithubEmulator = await startGithubEmulator({ scale, seed: 41 });
  const login = emu.data.org.login;
  const keyOf = (item: ItemRecord) => `${login}/${item.repo.name}#${item.number}`;
  const byKey = () => new Map(emu.data.repos.flatMap((r) => r.items.map((i) => [keyOf(i), i] as const)));
  const issues = () => emu.data.repos.flatMap((r) => r.items.filter((i) => !i.pull && i.deletedAt === undefined));
  return {
    provider: 'github',
    webhooks: () => emu.webhooks,
    setWebhookTarget: (t) => emu.setWebhookTarget(t),
    integration: () => ({
      provider: 'github',
      sources: emu.data.repos.map((r) => `${login}/${r.name}`),
      datasets: ['work-items', 'work-item-comments'],
      config: { baseUrl: emu.url },
      credential: emu.token,
    }),
    edit: () => {
      const picked = issues().slice(0, EDITS);
      return picked.map((item, k) => {
        if (k % 3 === 0) emu.edit.touch(item.number, item.repo);
        else if (k % 3 === 1) emu.edit.comment(item.number, item.repo);
        else emu.edit.close(item.number, item.repo);
        return keyOf(item);
      });
    },
    remove: () => {
      const item = issues().at(-1)!;
      emu.edit.remove(item.number, item.repo);
      return keyOf(item);
    },
    updatedMs: (key) => byKey().get(key)!.updatedAt,
    close: () => emu.close(),
  };
}

async function linearCase(): Promise<EmulatedCase> {
  const scale = { teams: 2, issues: 40, users: 3, projects: 1, cycles: 1, maxComments: 1, maxLabels: 1, days: 5 };
  const emu: LinearEmulator = await startLinearEmulator({ scale, seed: 42 });
  // Edits reorder the workspace's issues (by updatedAt): the ones edited and deleted are fixed first.
  const listed = emu.data.issues.filter((i) => !i.archivedAt);
  const toEdit = listed.slice(0, EDITS);
  const toDelete = listed.at(-1)!;
  return {
    provider: 'linear',
    webhooks: () => emu.webhooks,
    setWebhookTarget: (t) => emu.setWebhookTarget(t),
    integration: () => ({ ...linearIntegrationFor(emu) }),
    edit: () =>
      toEdit.map((issue) => {
        emu.editIssue(issue.id);
        return issue.id;
      }),
    remove: () => {
      emu.deleteIssue(toDelete.id);
      return toDelete.id;
    },
    updatedMs: (id) => emu.data.issueById.get(id)!.updatedAt,
    close: () => emu.close(),
  };
}

async function jiraCase(): Promise<EmulatedCase> {
  const scale = {
    projects: 2,
    issues: 40,
    users: 3,
    maxComments: 1,
    maxHistories: 1,
    longLists: 0,
    sprints: 1,
    days: 5,
  };
  // Search lag 0: an incremental run finds edited issues through search; with Jira's default lag
  // an edit stays out of search for 30 s (direct reads of the issues a delivery names would not).
  const emu: JiraEmulator = await startJiraEmulator({ scale, seed: 43, searchLagMs: 0 });
  const idOf = (key: string) => findIssue(emu.data, key)!.id;
  const edited = new Set<string>();
  return {
    provider: 'jira',
    webhooks: () => emu.webhooks,
    setWebhookTarget: (t) => emu.setWebhookTarget(t),
    integration: () => ({ ...jiraDemoIntegration(emu) }),
    edit: () =>
      Array.from({ length: EDITS }, () => {
        const id = idOf(emu.churnEdit()!);
        edited.add(id);
        return id;
      }),
    remove: () => {
      const issue = emu.data.projects.flatMap((p) => p.issues).find((i) => !edited.has(i.id))!;
      emu.deleteIssue(issue.id);
      return issue.id;
    },
    updatedMs: (id) => emu.data.issuesById.get(id)!.updated,
    close: () => emu.close(),
  };
}

const CASES: Record<EmulatedCase['provider'], () => Promise<EmulatedCase>> = {
  github: githubCase,
  linear: linearCase,
  jira: jiraCase,
};

describe.each(Object.keys(CASES) as EmulatedCase['provider'][])('%s: the emulator’s own webhooks', (provider) => {
  let c: EmulatedCase;
  let stack: ApiStack;
  let integrationId = '';
  let secret = '';

  beforeAll(async () => {
    c = await CASES[provider]();
    stack = await openApiStack({
      orgId: ORG,
      tag: `emu-hooks-${provider}`,
      concurrency: 4,
      settings: { webhookDebounceMs: DEBOUNCE_MS },
      registry: (db) => defaultRegistry(db),
    });
    const res = await stack.send('POST', '/api/v1/integrations', { name: `hooks-${provider}`, ...c.integration() });
    expect(res.status, res.text).toBe(201);
    integrationId = (res.json as { id: string }).id;
    const made = await stack.send('POST', `/api/v1/integrations/${integrationId}/webhook-secret`);
    expect(made.status, made.text).toBe(201);
    secret = (made.json as { secret: string }).secret;
    expect(await runEnded(stack, await incrementalRun(stack, integrationId))).toBe('success');
  }, 90_000);

  afterAll(async () => {
    await stack?.close();
    await c?.close();
  });

  async function stored(ids: string[]): Promise<Map<string, { updated: number | null; deleted: boolean }>> {
    const db = stack.t.db;
    const { rows } = await db.query<{ external_id: string; updated_at: Date | null; deleted_at: Date | null }>(
      `SELECT external_id, updated_at, deleted_at FROM ${db.schema.table('work_items')}
        WHERE integration_id = $1 AND external_id = ANY($2::text[])`,
      [integrationId, ids],
    );
    return new Map(
      rows.map((r) => [r.external_id, { updated: r.updated_at?.getTime() ?? null, deleted: r.deleted_at !== null }]),
    );
  }

  async function storedIds(): Promise<string[]> {
    const db = stack.t.db;
    const { rows } = await db.query<{ external_id: string }>(
      `SELECT external_id FROM ${db.schema.table('work_items')} WHERE integration_id = $1`,
      [integrationId],
    );
    return rows.map((r) => r.external_id);
  }

  async function count(sql: string): Promise<number> {
    const { rows } = await stack.t.db.query<{ n: number }>(sql, [integrationId]);
    return rows[0]!.n;
  }

  it('every edit and the deletion land through webhook-armed runs alone; every delivery is accounted for', async () => {
    const s = stack.t.db.schema;
    c.setWebhookTarget({
      url: `${stack.server.url}/api/v1/webhooks/${provider}/${integrationId}`,
      secret,
      faults: FAULTS,
    });
    const before = await stored(await storedIds());
    const edited = [...new Set(c.edit())];
    const deleted = c.remove();
    // Each edit is news to the store: its item's `updated` moved past what the first run stored.
    for (const id of edited) expect(c.updatedMs(id)).not.toBe(before.get(id)?.updated);
    expect(before.get(deleted)?.deleted).toBe(false);
    const sender = c.webhooks()!;
    await sender.flush();

    // The store catches up with the emulator's own records, with no trigger but the deliveries.
    await waitFor(
      async () => {
        const rows = await stored([...edited, deleted]);
        const landed = edited.every((id) => rows.get(id)?.updated === c.updatedMs(id));
        return landed && rows.get(deleted)?.deleted === true;
      },
      45_000,
      100,
    );
    // Idle: no live run, nothing remembered for after one.
    await waitFor(
      async () => {
        const live = await count(
          `SELECT count(*)::int AS n FROM ${s.sync_runs}
            WHERE integration_id = $1 AND status IN ('planned', 'dispatching')`,
        );
        const pending = await count(
          `SELECT count(*)::int AS n FROM ${s.webhook_pending_runs} WHERE integration_id = $1`,
        );
        return live === 0 && pending === 0;
      },
      30_000,
      100,
    );

    const stats = sender.stats();
    expect(stats.failed).toBe(0);
    expect(stats.pending).toBe(0);
    expect(stats.sent).toBe(stats.queued);
    // The faults were exercised (the draws follow the emulator's seed).
    expect(stats.redelivered).toBeGreaterThan(0);
    const { rows } = await stack.t.db.query<{ status: string; n: number; ids: number }>(
      `SELECT status, count(*)::int AS n, count(DISTINCT delivery_id)::int AS ids
         FROM ${s.webhook_deliveries} WHERE integration_id = $1 GROUP BY status`,
      [integrationId],
    );
    const by = Object.fromEntries(rows.map((r) => [r.status, r]));
    expect(by.received?.n).toBe(stats.sent);
    expect(by.received?.ids).toBe(stats.sent);
    expect(by.duplicate?.n ?? 0).toBe(stats.redelivered);
    expect(by.rejected).toBeUndefined();
    const webhookRuns = await count(
      `SELECT count(*)::int AS n FROM ${s.sync_runs} WHERE integration_id = $1 AND triggered_by = 'webhook'`,
    );
    expect(webhookRuns).toBeGreaterThanOrEqual(1);
    // The one run started through the API is the first; every later one was armed by a delivery.
    const others = await count(
      `SELECT count(*)::int AS n FROM ${s.sync_runs} WHERE integration_id = $1 AND triggered_by <> 'webhook'`,
    );
    expect(others).toBe(1);
  }, 120_000);

  it('the secret appears in no log line', () => {
    expect(secret).not.toBe('');
    expect(findLeaks(secret, { logs: stack.log.text() })).toEqual([]);
  });
});
