/**
 * The emulator through GitHub's own client (Octokit with its paginate and throttling plugins):
 * pagination ends where the data ends, and the throttling plugin's retries leave no burst of
 * limit answers in the request log.
 */
import { Octokit } from '@octokit/core';
import { paginateRest } from '@octokit/plugin-paginate-rest';
import { throttling } from '@octokit/plugin-throttling';
import { afterEach, describe, expect, it } from 'vitest';
import {
  startGithubEmulator,
  type GithubEmulator,
  type GithubEmulatorOptions,
} from '../../../src/emulators/github/index.js';

const Client = Octokit.plugin(paginateRest, throttling);
const SCALE = { repos: 1, issues: 150, pulls: 40, directCommits: 5, members: 4, days: 30 };

let open: GithubEmulator[] = [];
afterEach(async () => {
  await Promise.all(open.map((e) => e.close()));
  open = [];
});

async function setup(opts: GithubEmulatorOptions = {}) {
  const e = await startGithubEmulator({ seed: 8, now: new Date('2026-04-01T00:00:00Z'), scale: SCALE, ...opts });
  open.push(e);
  const limits: string[] = [];
  const client = new Client({
    baseUrl: e.url,
    auth: e.token,
    throttle: {
      onRateLimit: (retryAfter: number) => {
        limits.push(`primary:${retryAfter}`);
        return true;
      },
      onSecondaryRateLimit: (retryAfter: number) => {
        limits.push(`secondary:${retryAfter}`);
        return true;
      },
    },
  });
  return { e, client, limits, repo: e.data.repos[0]!.name };
}

describe('Octokit against the emulator', () => {
  it('paginate() collects every issue and pull request by following Link', async () => {
    const { e, client, repo } = await setup();
    const issues = await client.paginate('GET /repos/{owner}/{repo}/issues', {
      owner: 'emulated-org',
      repo,
      state: 'all',
      per_page: 40,
    });
    expect(issues.map((i) => i.number).sort((a, b) => a - b)).toEqual(e.data.repos[0]!.items.map((i) => i.number));
    expect(issues.filter((i) => i.pull_request).length).toBe(40);
    expect(e.log.length).toBe(Math.ceil(190 / 40));
  });

  it('a secondary limit with retry-after is retried once, after the wait', async () => {
    const { e, client, limits, repo } = await setup({
      faults: [{ kind: 'secondary-limit', count: 1, retryAfter: 1, path: '/pulls' }],
    });
    const pulls = await client.request('GET /repos/{owner}/{repo}/pulls', {
      owner: 'emulated-org',
      repo,
      state: 'all',
    });
    expect(pulls.status).toBe(200);
    expect(limits).toEqual(['secondary:1']);
    expect(e.log.map((l) => l.status)).toEqual([403, 200]);
    expect(Date.parse(e.log[1]!.at) - Date.parse(e.log[0]!.at)).toBeGreaterThanOrEqual(900);
  });

  it('an exhausted window gets one refusal, then waits for x-ratelimit-reset', async () => {
    const { e, client, limits, repo } = await setup({ rateLimit: '3/4s' });
    const issues = await client.paginate('GET /repos/{owner}/{repo}/issues', {
      owner: 'emulated-org',
      repo,
      state: 'all',
      per_page: 40,
    });
    expect(issues).toHaveLength(190);
    expect(limits).toHaveLength(1);
    expect(limits[0]).toMatch(/^primary:\d$/);
    const statuses = e.log.map((l) => l.status);
    expect(statuses.filter((s) => s === 403)).toHaveLength(1);
    expect(statuses).toEqual([200, 200, 200, 403, 200, 200]);
  }, 30_000);
});
