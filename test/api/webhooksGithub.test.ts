/**
 * GitHub webhooks end to end: the API server, a worker and the reconciler on real PostgreSQL and
 * Redis, the GitHub emulator on 127.0.0.1. An issue edited on the emulator and announced by a
 * signed `issues` delivery lands in the normalized store through a run of that repository only; an
 * `issues.deleted` delivery marks the issue deleted at once; a delivery that comes during a live
 * run arms exactly one run after that run has finished; the secret appears in no log line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import type { ItemRecord, RepoRecord } from '../../src/emulators/github/model.js';
import { createGithubProvider } from '../../src/providers/github/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { signWebhookBody } from '../../src/secrets/webhookSecrets.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { incrementalRun, openApiStack, runEnded, type ApiStack } from '../helpers/apiStack.js';
import { waitFor } from '../helpers/engine.js';
import { findLeaks } from '../helpers/leakScan.js';

const ORG = 'org-gh-webhooks';
const SCALE = { repos: 2, issues: 24, pulls: 4, maxComments: 1, maxReviews: 1, directCommits: 2, members: 3, days: 5 };

describe('GitHub webhooks end to end (emulator, API, worker, reconciler)', () => {
  let stack: ApiStack;
  let emu: GithubEmulator;
  let integrationId = '';
  let secret = '';

  beforeAll(async () => {
    emu = await startGithubEmulator({ scale: SCALE, seed: 31 });
    stack = await openApiStack({
      orgId: ORG,
      tag: 'gh-webhooks',
      concurrency: 2,
      registry: (db) => new ProviderRegistry().register(createGithubProvider(), normalizedSink(db)),
    });
    const res = await stack.send('POST', '/api/v1/integrations', {
      provider: 'github',
      name: 'webhooks',
      sources: emu.data.repos.map((r) => fullName(r)),
      datasets: ['work-items', 'work-item-comments', 'pull-requests'],
      config: { baseUrl: emu.url },
      credential: emu.token,
    });
    expect(res.status, res.text).toBe(201);
    integrationId = (res.json as { id: string }).id;
    const made = await stack.send('POST', `/api/v1/integrations/${integrationId}/webhook-secret`);
    expect(made.status, made.text).toBe(201);
    secret = (made.json as { secret: string }).secret;
    expect(await runEnded(stack, await incrementalRun(stack, integrationId))).toBe('success');
  }, 90_000);

  afterAll(async () => {
    await stack?.close();
    await emu?.close();
  });

  function fullName(repo: RepoRecord): string {
    return `${emu.data.org.login}/${repo.name}`;
  }

  /** An open issue (not a pull request) of `repo` not used yet. */
  const used = new Set<ItemRecord>();
  function anIssue(repo: RepoRecord): ItemRecord {
    const item = repo.items.find((i) => !i.pull && i.deletedAt === undefined && !used.has(i));
    if (!item) throw new Error(`no issue left in ${repo.name}`);
    used.add(item);
    return item;
  }

  /** A payload shaped like GitHub's `issues` event (the fields syncrelay reads, and the usual others). */
  function issuesEvent(action: string, repo: RepoRecord, item: ItemRecord): Record<string, unknown> {
    const owner = { login: emu.data.org.login, id: 1, type: 'Organization' };
    return {
      action,
      issue: {
        id: item.id,
        number: item.number,
        title: item.title,
        state: item.closedAt === null ? 'open' : 'closed',
        user: { login: item.author.login, id: item.author.id },
        labels: [],
        created_at: new Date(item.createdAt).toISOString(),
        updated_at: new Date(item.updatedAt).toISOString(),
        html_url: `https://github.com/${fullName(repo)}/issues/${item.number}`,
      },
      repository: { id: repo.id, name: repo.name, full_name: fullName(repo), private: repo.private, owner },
      organization: { login: emu.data.org.login, id: 1 },
      sender: { login: item.author.login, id: item.author.id, type: 'User' },
    };
  }

  async function deliver(event: string, payload: Record<string, unknown>) {
    const body = JSON.stringify(payload);
    const res = await fetch(`${stack.server.url}/api/v1/webhooks/github/${integrationId}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'GitHub-Hookshot/test',
        'x-github-event': event,
        'x-github-delivery': crypto.randomUUID(),
        'x-hub-signature-256': signWebhookBody(body, secret),
      },
      body,
    });
    return { status: res.status, body: (await res.json()) as { outcome: string; sync_run_id: string | null } };
  }

  async function storedIssue(key: string): Promise<{ title: string; deleted_at: Date | null } | undefined> {
    const db = stack.t.db;
    const { rows } = await db.query<{ title: string; deleted_at: Date | null }>(
      `SELECT title, deleted_at FROM ${db.schema.table('work_items')} WHERE integration_id = $1 AND external_id = $2`,
      [integrationId, key],
    );
    return rows[0];
  }

  async function webhookRunIds(): Promise<string[]> {
    const db = stack.t.db;
    const { rows } = await db.query<{ id: string }>(
      `SELECT id FROM ${db.schema.sync_runs}
        WHERE integration_id = $1 AND triggered_by = 'webhook' ORDER BY created_at`,
      [integrationId],
    );
    return rows.map((r) => r.id);
  }

  it('an edited issue announced by a signed delivery lands through a run of its repository only', async () => {
    const repo = emu.data.repos[0]!;
    const item = anIssue(repo);
    item.title = 'Renamed while a webhook listens';
    emu.edit.touch(item.number, repo);
    const res = await deliver('issues', issuesEvent('edited', repo, item));
    expect(res.status).toBe(202);
    expect(res.body.outcome).toBe('armed');
    const runId = res.body.sync_run_id!;
    expect(await runEnded(stack, runId)).toBe('success');
    expect((await storedIssue(`${fullName(repo)}#${item.number}`))?.title).toBe(item.title);
    const db = stack.t.db;
    const { rows } = await db.query<{ key: string }>(
      `SELECT DISTINCT s.external_key AS key FROM ${db.schema.sync_run_units} u
         JOIN ${db.schema.integration_sources} s ON s.id = u.source_id WHERE u.sync_run_id = $1`,
      [runId],
    );
    expect(rows.map((r) => r.key)).toEqual([fullName(repo)]);
  }, 60_000);

  it('issues.deleted marks the stored issue deleted as the delivery is accepted', async () => {
    const repo = emu.data.repos[0]!;
    const item = anIssue(repo);
    const key = `${fullName(repo)}#${item.number}`;
    expect((await storedIssue(key))?.deleted_at).toBeNull();
    emu.edit.remove(item.number, repo);
    const res = await deliver('issues', issuesEvent('deleted', repo, item));
    expect(res.status).toBe(202);
    expect((await storedIssue(key))?.deleted_at).toBeInstanceOf(Date);
    if (res.body.sync_run_id) expect(await runEnded(stack, res.body.sync_run_id)).toBe('success');
    expect((await storedIssue(key))?.deleted_at).toBeInstanceOf(Date);
  }, 60_000);

  it('a delivery during a live run arms exactly one run once that run has finished', async () => {
    const repo = emu.data.repos[1]!;
    const item = anIssue(repo);
    item.title = 'Renamed during a live run';
    emu.edit.touch(item.number, repo);
    const before = await webhookRunIds();
    const live = await incrementalRun(stack, integrationId);
    const res = await deliver('issues', issuesEvent('edited', repo, item));
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ outcome: 'pending', sync_run_id: null });
    expect(await runEnded(stack, live)).toBe('success');
    const armed = await waitFor(async () => {
      const ids = (await webhookRunIds()).filter((id) => !before.includes(id));
      return ids.length > 0 ? ids : null;
    }, 30_000);
    expect(armed).toHaveLength(1);
    expect(await runEnded(stack, armed[0]!)).toBe('success');
    expect((await storedIssue(`${fullName(repo)}#${item.number}`))?.title).toBe(item.title);
    // Later passes arm nothing more.
    await new Promise((r) => setTimeout(r, 2500));
    expect((await webhookRunIds()).filter((id) => !before.includes(id))).toEqual(armed);
  }, 90_000);

  it('the secret appears in no log line and no other answer', () => {
    const sources = stack.responses.sources();
    const others = Object.fromEntries(Object.entries(sources).filter(([, text]) => !text.includes('webhook-secret')));
    expect(findLeaks(secret, { logs: stack.log.text(), ...others })).toEqual([]);
  });
});
