/**
 * The Jira provider with `deployment: datacenter` against the emulator's `datacenter` flavor: the
 * family over `GET /rest/api/2/search` (keyset pages), members by user key, sprints from the text
 * form, verify through v2 search; the acceptance check that a Data Center backfill lands the same
 * normalized rows as a Cloud one of the same seed (text fields and user ids aside, mapped through
 * the emulator's user records); a 429 with Retry-After defers, then completes; a 403 with Data
 * Center's `retry-after: 0` and a wrong credential fail `auth`; edits during the read lose nothing.
 */
import { describe, expect, it } from 'vitest';
import { classifyError, NonRetryableError } from '../../../src/errors.js';
import { startJiraEmulator, type JiraEmulator, type JiraEmulatorOptions } from '../../../src/emulators/jira/index.js';
import { runJiraUnit, type JiraProviderOptions } from '../../../src/providers/jira/index.js';
import type { Db } from '../../../src/db/types.js';
import { jiraEventCount } from '../../helpers/emulatorRows.js';
import { count, DAY, rows, T0, useEmulatorSuite } from '../../helpers/emulatorSuite.js';
import { failureOf, rateLimitOf } from '../../helpers/failures.js';

const FAST: JiraProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 }, pageSize: 25 };
const FAMILY = ['work-items', 'work-item-comments', 'work-item-history'];
const OPTIONS: JiraEmulatorOptions = { seed: 21, scale: { projects: 2, issues: 140, longLists: 2, days: 20 } };
const WINDOW = { since: new Date(T0 - 30 * DAY), before: new Date(T0) };

const fx = useEmulatorSuite({
  start: (o: JiraEmulatorOptions) => startJiraEmulator({ ...o, flavor: 'datacenter' }),
  defaults: OPTIONS,
  target: (emu: JiraEmulator) => ({
    provider: 'jira',
    config: { siteUrl: emu.url, deployment: 'datacenter' },
    token: emu.token,
    sourceKey: 'ENG',
  }),
  unit: WINDOW,
});

const CLOUD_ID = '00000000-0000-4000-8000-00000000c10d';
const DC_ID = '00000000-0000-4000-8000-00000000dc01';
const DATASETS = ['projects', 'members', 'sprints'];

/** Backfills every dataset of every project of `emu` into the integration `integrationId`. */
async function backfill(emu: JiraEmulator, integrationId: string, config: Record<string, unknown>) {
  for (const project of emu.data.projects) {
    const target = { config, token: emu.token, sourceKey: project.key, integrationId };
    for (const datasetKey of DATASETS) await runJiraUnit(fx.unit({ ...target, datasetKey }), FAST);
    await runJiraUnit(fx.unit({ ...target, datasetKey: 'work-items', datasets: FAMILY }), FAST);
  }
}

/** Columns that differ by deployment however faithful the read: text, links, sync times, the raw answer. */
const DIFFERENT = new Set(['integration_id', 'raw', 'body', 'url', 'avatar_url', 'last_synced_at', 'first_seen_at']);

/** The integration's rows of `table`, without DIFFERENT columns, user ids through `user`, sorted. */
async function normalized(db: Db, table: string, integrationId: string, user: (id: unknown) => unknown) {
  const { rows: all } = await db.query<Record<string, unknown>>(
    `SELECT * FROM ${db.schema.table(table)} WHERE integration_id = $1`,
    [integrationId],
  );
  const out = all.map((r) => {
    const row = Object.fromEntries(Object.entries(r).filter(([k]) => !DIFFERENT.has(k)));
    for (const k of ['lead', 'author', 'actor', 'login']) if (k in row) row[k] = user(row[k]);
    if (table === 'members') row.external_id = user(row.external_id);
    if (Array.isArray(row.assignees)) row.assignees = row.assignees.map(user);
    if (row.kind === 'assignee') [row.from_value, row.to_value] = [user(row.from_value), user(row.to_value)];
    return row;
  });
  return out.sort((a, b) => String(a.external_id).localeCompare(String(b.external_id)));
}

describe('Jira Data Center: a backfill lands the same rows as Cloud', () => {
  it('same seed, two integrations: equal normalized tables, text and user ids aside', async () => {
    const dc = await fx.start();
    const cloud = await startJiraEmulator({ ...OPTIONS, clock: fx.clock, now: new Date(T0) });
    try {
      await backfill(cloud, CLOUD_ID, { siteUrl: cloud.url, deployment: 'cloud' });
      await backfill(dc, DC_ID, { siteUrl: dc.url, deployment: 'datacenter' });
      // Cloud ids users by account id, Data Center by user key: the same user record holds both.
      const keyOf = new Map(cloud.data.users.map((u) => [u.accountId, u.key]));
      const toKey = (id: unknown) => (typeof id === 'string' ? (keyOf.get(id) ?? id) : id);
      const same = (id: unknown) => id;
      for (const table of ['projects', 'members', 'sprints', 'work_items', 'work_item_comments', 'work_item_events']) {
        const c = await normalized(fx.db, table, CLOUD_ID, toKey);
        const d = await normalized(fx.db, table, DC_ID, same);
        expect(c.length, table).toBeGreaterThan(0);
        expect(d, table).toEqual(c);
      }
      // Text fields: the same plain text from ADF and from wiki markup.
      const bodies = async (id: string) =>
        (
          await fx.db.query<{ external_id: string; body: string }>(
            `SELECT external_id, body FROM ${fx.db.schema.table('work_item_comments')} WHERE integration_id = $1
              ORDER BY external_id`,
            [id],
          )
        ).rows;
      expect(await bodies(DC_ID)).toEqual(await bodies(CLOUD_ID));
      expect(dc.requestLog.every((l) => !l.path.includes('/rest/api/3/'))).toBe(true);
      expect(dc.requestLog.some((l) => l.path.startsWith('/rest/api/2/search?'))).toBe(true);
    } finally {
      await cloud.close();
    }
  });
});

describe('Jira Data Center provider', () => {
  const issues = () => fx.emu.data.projects[0]!.issues;

  it('the family over v2 search: every issue, comment and event once; members by key', async () => {
    await fx.start();
    const r = await runJiraUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY }), FAST);
    const all = issues();
    const comments = all.reduce((n, i) => n + i.comments.length, 0);
    expect(r.written).toEqual({
      work_items: all.length,
      work_item_comments: comments,
      work_item_events: jiraEventCount(all),
    });
    // Long comment lists from /comment; the changelog whole from the search's expand: no per-issue changelog reads.
    expect(fx.emu.requestLog.some((l) => /\/rest\/api\/2\/issue\/\d+\/comment/.test(l.path))).toBe(true);
    expect(fx.emu.requestLog.some((l) => l.path.includes('changelog') && l.path.includes('/issue/'))).toBe(false);
    const stored = await rows<{ external_id: string; assignees: string[] }>(fx.db, 'work_items');
    const keys = new Set(fx.emu.data.users.map((u) => u.key));
    expect(stored.flatMap((s) => s.assignees).every((a) => keys.has(a))).toBe(true);
    await runJiraUnit(fx.unit({ datasetKey: 'members' }), FAST);
    const members = await rows<{ external_id: string; login: string }>(fx.db, 'members');
    expect(members.length).toBeGreaterThan(0);
    expect(members.every((m) => keys.has(m.external_id) && m.login === m.external_id)).toBe(true);
  });

  it('edits while the window is read: every issue stored at least as new as when the read began', async () => {
    await fx.start({ churn: 0 });
    const before = new Map(issues().map((i) => [i.id, i.updated]));
    fx.emu.setChurn(50);
    let t = T0;
    const tick = setInterval(() => fx.clock.set((t += 200)), 1);
    try {
      await runJiraUnit(fx.unit({ datasetKey: 'work-items', datasets: ['work-items'], before: null }), {
        ...FAST,
        pageSize: 10,
      });
    } finally {
      clearInterval(tick);
    }
    expect(fx.emu.churnStats().edits).toBeGreaterThan(0);
    const stored = new Map(
      (await rows<{ external_id: string; updated_at: Date }>(fx.db, 'work_items')).map((r) => [
        r.external_id,
        r.updated_at.getTime(),
      ]),
    );
    for (const [id, updated] of before) expect(stored.get(id), id).toBeGreaterThanOrEqual(updated);
  });

  it('verify lists ids through v2 search (fields=updated) and marks a deleted issue', async () => {
    await fx.start();
    await runJiraUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY }), FAST);
    const gone = issues()[3]!;
    fx.emu.deleteIssue(gone.id);
    fx.emu.requestLog.length = 0;
    fx.clock.set(T0 + 600_000);
    const planned = { mode: 'verify' as const, since: null, before: fx.clock.now() };
    const r = await runJiraUnit(fx.unit({ datasetKey: 'work-items', datasets: FAMILY, ...planned }), FAST);
    expect(r.verify).toMatchObject({ deleted: 1, missing: 0 });
    const listing = fx.emu.requestLog.filter((l) => l.path.startsWith('/rest/api/2/search?'));
    expect(listing.length).toBeGreaterThan(0);
    expect(listing.every((l) => new URL(l.path, fx.emu.url).searchParams.get('fields') === 'updated')).toBe(true);
    expect(fx.emu.requestLog.some((l) => l.path.startsWith(`/rest/api/2/issue/${gone.id}`))).toBe(true);
    const deleted = await fx.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${fx.db.schema.table('work_items')} WHERE deleted_at IS NOT NULL`,
    );
    expect(deleted.rows[0]!.n).toBe(1);
  });

  it('a 429 with Retry-After defers the unit to its lift time, then it completes', async () => {
    await fx.start();
    fx.emu.setFaults([{ kind: 'rate-limit', count: 1, retryAfter: 30, path: '/rest/api/2/search' }]);
    const err = await rateLimitOf(runJiraUnit(fx.unit({ datasetKey: 'work-items' }), FAST));
    expect(err.liftsAt!.getTime()).toBe(T0 + 30_000);
    fx.clock.set(T0 + 31_000);
    const r = await runJiraUnit(fx.unit({ datasetKey: 'work-items', checkpoint: err.checkpoint }), FAST);
    expect(r.items).toBe(issues().length);
    expect(await count(fx.db, 'work_items')).toBe(issues().length);
  });

  it('the enforced bucket: a unit over it is deferred by retry-after, then completes', async () => {
    await fx.start({ rateLimit: { limit: 4, windowSeconds: 60 } });
    const err = await rateLimitOf(runJiraUnit(fx.unit({ datasetKey: 'members' }), FAST));
    expect(err.liftsAt!.getTime()).toBe(T0 + 60_000);
    expect(fx.emu.requestLog.filter((l) => l.status === 429)).toHaveLength(1);
    fx.clock.set(T0 + 60_000);
    await fx.start({ rateLimit: { limit: 100, windowSeconds: 60 } });
    expect((await runJiraUnit(fx.unit({ datasetKey: 'members' }), FAST)).items).toBeGreaterThan(0);
  });

  it('wrong credential: auth; a 403 with retry-after 0: auth, no limit; a missing project: not_found', async () => {
    await fx.start();
    const bad = await failureOf(runJiraUnit(fx.unit({ datasetKey: 'projects', token: 'wrong-pat' }), FAST));
    expect(classifyError(bad)).toBe('auth');
    expect(bad.message).not.toContain('wrong-pat');
    const basicBad = await failureOf(
      runJiraUnit(fx.unit({ datasetKey: 'projects', token: `${fx.emu.username}:nope` }), FAST),
    );
    expect(classifyError(basicBad)).toBe('auth');
    const basicOk = await runJiraUnit(
      fx.unit({ datasetKey: 'projects', token: `${fx.emu.username}:${fx.emu.apiToken}` }),
      FAST,
    );
    expect(basicOk.items).toBe(1);
    fx.emu.setFaults([{ kind: 'forbidden', count: 1 }]);
    const forbidden = await failureOf(runJiraUnit(fx.unit({ datasetKey: 'work-items' }), FAST));
    expect(classifyError(forbidden)).toBe('auth');
    const missing = await failureOf(runJiraUnit(fx.unit({ datasetKey: 'work-items', sourceKey: 'NOPE' }), FAST));
    expect((missing as NonRetryableError).category).toBe('not_found');
  });
});
