/**
 * Conditional polls (src/providers/github/conditional.ts) against the GitHub emulator: an
 * incremental unit probes its list with the ETag its last poll recorded; a 304 ends it without
 * reading or spending the primary limit, a change is read by the next poll, and the tag is recorded
 * only after the rows read behind its probe are written.
 */
import { describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../../src/errors.js';
import type { GithubEmulator, RepoRecord } from '../../../src/emulators/github/index.js';
import { runGithubUnit, type GithubProviderOptions } from '../../../src/providers/github/index.js';
import { listProviderEtags } from '../../../src/store/etags.js';
import { deleteIntegrationRecords } from '../../../src/store/integrationDelete.js';
import { insertIntegration } from '../../../src/store/integrations.js';
import { readRateBudget } from '../../../src/store/rateBudgets.js';
import { DAY, rows, T0 } from '../../helpers/emulatorSuite.js';
import { failureOf } from '../../helpers/failures.js';
import { CREDENTIAL_ID, ORG, TestGuard } from '../../helpers/unitContext.js';
import { repoKey, requestsTo, useGithubSuite } from './support.js';

const FAST: GithubProviderOptions = { retry: { baseDelayMs: 1, maxDelayMs: 2 } };
const ISSUE_LIST = ['work-items', 'pull-requests', 'pull-request-reviews'];
/** The units of one repository's incremental poll: the issues list (three datasets), comments, commits. */
const POLL = [ISSUE_LIST, ['work-item-comments'], ['commits']];
const SCALE = { repos: 1, issues: 30, pulls: 6, maxComments: 2, maxReviews: 2, directCommits: 6, members: 4, days: 5 };
const OVERLAP = 120_000;
const SECOND = 1000;

const fx = useGithubSuite({ seed: 9, scale: SCALE, emptyRepos: [] });

/** A new integration row (its ETags are its own); returns its id. */
async function integration(name = `conditional-${Math.random().toString(36).slice(2)}`): Promise<string> {
  const row = await insertIntegration(fx.db, { orgId: ORG, provider: 'github', name, config: {} }, new Date(T0));
  return row.id;
}

/** The incremental unit of `datasets` on `repo` for the integration, from `since` to now. */
function unit(id: string, datasets: string[], since: Date, repo?: RepoRecord, guard?: TestGuard) {
  return fx.unit({
    datasetKey: datasets[0]!,
    datasets,
    mode: 'incremental',
    since,
    before: fx.clock.now(),
    integrationId: id,
    sourceKey: repo ? repoKey(fx.emu, repo) : repoKey(fx.emu),
    ...(guard ? { guard } : {}),
  });
}

/**
 * One incremental poll of every repository (each unit of POLL), `since` the last poll's end less
 * the overlap, as the planner would; returns each unit's result. The clock then moves on a minute.
 */
async function poll(id: string, since: Date, repos: readonly RepoRecord[] = fx.emu.data.repos.slice(0, 1)) {
  const results = [];
  for (const repo of repos) {
    for (const datasets of POLL) results.push(await runGithubUnit(unit(id, datasets, since, repo), FAST));
  }
  const end = fx.clock.now();
  fx.clock.set(end.getTime() + 60 * SECOND);
  return { results, next: new Date(end.getTime() - OVERLAP) };
}

/** The emulator's primary limit as it stands (GET /rate_limit is free). */
async function remaining(emu: GithubEmulator): Promise<number> {
  const res = await fetch(`${emu.url}/rate_limit`, { headers: { authorization: `token ${emu.token}` } });
  return ((await res.json()) as { rate: { remaining: number } }).rate.remaining;
}

const FIRST_SINCE = new Date(T0 - 30 * DAY);

describe('GitHub conditional polls', () => {
  it('an incremental poll of 20 unchanged repositories spends no primary rate-limit point', async () => {
    const emu = await fx.start({ scale: { ...SCALE, repos: 20, issues: 8, pulls: 2, directCommits: 3 } });
    const id = await integration();
    const first = await poll(id, FIRST_SINCE, emu.data.repos);
    expect(first.results.every((r) => r.notModified === undefined)).toBe(true);
    expect((await listProviderEtags(fx.db, id)).size).toBe(20 * POLL.length);
    const budget = await readRateBudget(fx.db, { orgId: ORG, provider: 'github', credentialId: CREDENTIAL_ID });

    const before = await remaining(emu);
    const seen = emu.log.length;
    const second = await poll(id, first.next, emu.data.repos);

    expect(await remaining(emu)).toBe(before);
    const requests = emu.log.slice(seen).filter((l) => !l.path.startsWith('/rate_limit'));
    expect(requests).toHaveLength(20 * POLL.length); // one probe per unit, each a 304
    expect(requests.every((l) => l.status === 304)).toBe(true);
    expect(emu.activity().notModified).toBe(20 * POLL.length);
    for (const r of second.results) expect(r).toEqual({ items: 0, touchedSurfaces: [], notModified: true });
    // The 304s' figures are the budget as it stands: the recorded remaining did not go down.
    const after = await readRateBudget(fx.db, { orgId: ORG, provider: 'github', credentialId: CREDENTIAL_ID });
    expect(after!.remaining).toBe(budget!.remaining);
  });

  it('a change after a 304 is read by the next poll', async () => {
    const emu = await fx.start();
    const id = await integration();
    const first = await poll(id, FIRST_SINCE);
    const second = await poll(id, first.next);
    expect(second.results.map((r) => r.notModified)).toEqual([true, true, true]);

    const issue = emu.data.repos[0]!.items.find((i) => !i.pull)!;
    const touched = emu.edit.touch(issue.number);
    const comment = emu.edit.comment(issue.number);
    const third = await poll(id, second.next);

    expect(third.results[0]!.items).toBeGreaterThanOrEqual(1);
    expect(third.results[0]!.notModified).toBeUndefined();
    expect(third.results[2]).toEqual({ items: 0, touchedSurfaces: [], notModified: true }); // no commit pushed
    const items = await rows<{ external_id: string; updated_at: Date }>(fx.db, 'work_items');
    const pullRows = await rows<{ external_id: string; updated_at: Date }>(fx.db, 'pull_requests');
    const stored = [...items, ...pullRows].find((r) => r.external_id === `${repoKey(emu)}#${touched.number}`);
    expect(stored!.updated_at.getTime()).toBe(touched.updatedAt);
    const comments = await rows<{ external_id: string }>(fx.db, 'work_item_comments');
    expect(comments.some((c) => c.external_id.endsWith(String(comment.id)))).toBe(true);

    // Read once, it is unchanged again.
    const fourth = await poll(id, third.next);
    expect(fourth.results.map((r) => r.notModified)).toEqual([true, true, true]);
  });

  it('the ETag is recorded only after the rows read behind its probe are written', async () => {
    const emu = await fx.start();
    const id = await integration();
    const first = await poll(id, FIRST_SINCE);
    const recorded = await listProviderEtags(fx.db, id);
    const touched = emu.edit.touch(2);

    // A unit whose writes fail (its lease lost at the first write) records no new tag.
    const dying = new TestGuard('u-dying');
    dying.loseAfter = 0;
    const failing = runGithubUnit(unit(id, ISSUE_LIST, first.next, undefined, dying), FAST);
    expect(await failureOf(failing)).toBeInstanceOf(LeaseLostError);
    expect(await listProviderEtags(fx.db, id)).toEqual(recorded);

    // Each write sees the tag of the poll before: the new one comes after the last write.
    const seenAtWrites: (string | undefined)[] = [];
    const ctx = unit(id, ISSUE_LIST, first.next);
    const key = [...recorded.keys()].find((k) => k.includes('/issues?'))!;
    const sink = ctx.sink;
    ctx.sink = {
      ...sink,
      write: async (...args: Parameters<typeof sink.write>) => {
        seenAtWrites.push((await listProviderEtags(fx.db, id)).get(key));
        return sink.write(...args);
      },
    };
    const result = await runGithubUnit(ctx, FAST);
    expect(result.items).toBeGreaterThanOrEqual(1);
    expect(seenAtWrites.length).toBeGreaterThan(0);
    expect(seenAtWrites.every((t) => t === recorded.get(key))).toBe(true);
    expect((await listProviderEtags(fx.db, id)).get(key)).not.toBe(recorded.get(key));
    const stored = (await rows<{ external_id: string; updated_at: Date }>(fx.db, 'work_items')).concat(
      await rows(fx.db, 'pull_requests'),
    );
    const row = stored.find((r) => r.external_id === `${repoKey(emu)}#${touched.number}`);
    expect(row!.updated_at.getTime()).toBe(touched.updatedAt);
  });

  it('a read stopped by maxPages records no tag: the next poll reads on', async () => {
    await fx.start({ scale: { ...SCALE, issues: 250, pulls: 0 } });
    const id = await integration();
    const c = unit(id, ['work-items'], FIRST_SINCE);
    const stopped = await runGithubUnit(c, { ...FAST, maxPages: 1 });
    expect(stopped.watermark).toBeInstanceOf(Date);
    expect((await listProviderEtags(fx.db, id)).size).toBe(0);
    const next = await runGithubUnit(unit(id, ['work-items'], stopped.watermark!), FAST);
    expect(next.notModified).toBeUndefined();
    expect(next.items).toBeGreaterThan(0);
    expect((await listProviderEtags(fx.db, id)).size).toBe(1);
  });

  it('two integrations on the same repository keep their own tags', async () => {
    const emu = await fx.start();
    const a = await integration('a');
    const b = await integration('b');
    const pollA = await poll(a, FIRST_SINCE);
    const seen = emu.log.length;
    const pollB = await poll(b, FIRST_SINCE);
    // b's first poll sends no tag (a's are a's): every probe reads, and b records its own.
    expect(pollB.results.every((r) => r.notModified === undefined)).toBe(true);
    expect(emu.log.slice(seen).some((l) => l.status === 304)).toBe(false);
    expect([...(await listProviderEtags(fx.db, b)).keys()]).toEqual([...(await listProviderEtags(fx.db, a)).keys()]);

    // Deleting a takes its tags with it; b keeps its own.
    await fx.db.transaction((tx) => deleteIntegrationRecords(tx, a));
    expect((await listProviderEtags(fx.db, a)).size).toBe(0);
    expect((await listProviderEtags(fx.db, b)).size).toBe(POLL.length);
    expect((await poll(b, pollB.next)).results.every((r) => r.notModified === true)).toBe(true);
    expect(pollA.results).toHaveLength(POLL.length);
  });

  it('a unit fetching other datasets from the list does not take their tag; backfills never probe', async () => {
    const emu = await fx.start();
    const id = await integration();
    await runGithubUnit(unit(id, ['work-items'], FIRST_SINCE), FAST);
    fx.clock.set(T0 + 60 * SECOND);
    const withPulls = await runGithubUnit(unit(id, ISSUE_LIST, new Date(T0 - OVERLAP)), FAST);
    expect(withPulls.notModified).toBeUndefined();
    expect((await listProviderEtags(fx.db, id)).size).toBe(2);

    const probesBefore = requestsTo(emu, /\/issues/).filter((l) => l.path.includes('direction=desc')).length;
    const backfill = fx.unit({
      datasetKey: 'work-items',
      mode: 'backfill',
      since: FIRST_SINCE,
      before: fx.clock.now(),
      integrationId: id,
    });
    expect((await runGithubUnit(backfill, FAST)).notModified).toBeUndefined();
    const probesAfter = requestsTo(emu, /\/issues/).filter((l) => l.path.includes('direction=desc')).length;
    expect(probesAfter).toBe(probesBefore);
  });
});
