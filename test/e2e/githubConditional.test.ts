/**
 * Conditional polls end to end (API, worker, reconciler, real PostgreSQL and Redis, the GitHub
 * emulator): once an incremental run has read 20 repositories, the next incremental run of them
 * unchanged spends no primary rate-limit point (every probe a 304), and an edit after it is read
 * by the run after.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGithubEmulator, type GithubEmulator } from '../../src/emulators/github/index.js';
import { createGithubProvider } from '../../src/providers/github/index.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { normalizedSink } from '../../src/sinks/normalized/index.js';
import { listProviderEtags } from '../../src/store/etags.js';
import { incrementalRun, openApiStack, runEnded, type ApiStack } from '../helpers/apiStack.js';

const ORG = 'org-gh-conditional';
const REPOS = 20;
const DATASETS = ['work-items', 'work-item-comments', 'pull-requests', 'pull-request-reviews', 'commits'];
/** Units of one repository's incremental run: the issues list (carrying pulls and reviews), comments, commits. */
const UNITS = 3;
const SCALE = {
  repos: REPOS,
  issues: 6,
  pulls: 2,
  maxComments: 1,
  maxReviews: 1,
  directCommits: 3,
  members: 3,
  days: 3,
};

describe('GitHub conditional polls end to end', () => {
  let stack: ApiStack;
  let emu: GithubEmulator;

  beforeAll(async () => {
    emu = await startGithubEmulator({ scale: SCALE, seed: 31, emptyRepos: [] });
    stack = await openApiStack({
      orgId: ORG,
      tag: 'gh-conditional',
      poolSize: 8,
      concurrency: 4,
      registry: (db) => new ProviderRegistry().register(createGithubProvider(), normalizedSink(db)),
    });
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
    await emu?.close();
  });

  /** The emulator's primary limit as it stands (GET /rate_limit is free). */
  async function used(): Promise<number> {
    const res = await fetch(`${emu.url}/rate_limit`, { headers: { authorization: `token ${emu.token}` } });
    return ((await res.json()) as { rate: { used: number } }).rate.used;
  }

  const run = async (id: string) => expect(await runEnded(stack, await incrementalRun(stack, id))).toBe('success');

  it('an incremental run of 20 unchanged repositories spends 0 points; a later edit is read', async () => {
    const res = await stack.send('POST', '/api/v1/integrations', {
      provider: 'github',
      name: 'conditional',
      sources: emu.data.repos.map((r) => `${emu.data.org.login}/${r.name}`),
      datasets: DATASETS,
      config: { baseUrl: emu.url },
      credential: emu.token,
    });
    expect(res.status, res.text).toBe(201);
    const id = (res.json as { id: string }).id;

    await run(id);
    expect((await listProviderEtags(stack.t.db, id)).size).toBe(REPOS * UNITS);
    const before = await used();
    const seen = emu.log.length;

    await run(id);
    expect(await used()).toBe(before);
    const second = emu.log.slice(seen).filter((l) => l.path !== '/rate_limit');
    expect(second).toHaveLength(REPOS * UNITS);
    expect(second.every((l) => l.status === 304)).toBe(true);

    const repo = emu.data.repos.find((r) => r.items.some((i) => !i.pull))!;
    const issue = repo.items.find((i) => !i.pull)!;
    const touched = emu.edit.touch(issue.number, repo);
    await run(id);
    const { rows } = await stack.t.db.query<{ updated_at: Date }>(
      `SELECT updated_at FROM ${stack.t.db.schema.table('work_items')} WHERE integration_id = $1 AND external_id = $2`,
      [id, `${emu.data.org.login}/${repo.name}#${issue.number}`],
    );
    expect(rows[0]!.updated_at.getTime()).toBe(touched.updatedAt);
  }, 120_000);
});
