/**
 * The emulator's answers against GitHub's recorded fixtures (@octokit/fixtures): every key a
 * recorded object has is present with the same JSON type (nested objects too; null in either
 * counts as a nullable field), and the Link / rate headers have GitHub's form.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGithubEmulator, type GithubEmulator } from '../../../src/emulators/github/index.js';
import { get, parseLink, type Json } from './helpers.js';

const ROOT = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const SCENARIOS = join(ROOT, 'node_modules/@octokit/fixtures/scenarios/api.github.com');

interface Recorded {
  method: string;
  path: string;
  status: number;
  headers: Record<string, unknown>;
  response: Json;
}

function scenario(name: string): Recorded[] {
  return JSON.parse(readFileSync(join(SCENARIOS, name, 'normalized-fixture.json'), 'utf8')) as Recorded[];
}

function jsonType(v: unknown): string {
  return Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v;
}

/** Where `actual` lacks a key of `recorded` or holds another JSON type there. */
function shapeMismatches(recorded: unknown, actual: unknown, at = '$'): string[] {
  if (recorded === null || actual === null) return [];
  const rt = jsonType(recorded);
  const at2 = jsonType(actual);
  if (rt !== at2) return [`${at}: recorded ${rt}, served ${at2}`];
  if (rt === 'array') {
    const [r] = recorded as unknown[];
    const [a] = actual as unknown[];
    return r === undefined || a === undefined ? [] : shapeMismatches(r, a, `${at}[0]`);
  }
  if (rt !== 'object') return [];
  const out: string[] = [];
  for (const [key, value] of Object.entries(recorded as Record<string, unknown>)) {
    if (!(key in (actual as object))) out.push(`${at}.${key}: missing`);
    else out.push(...shapeMismatches(value, (actual as Record<string, unknown>)[key], `${at}.${key}`));
  }
  return out;
}

let e: GithubEmulator;
const repo = () => `/repos/emulated-org/${e.data.repos[0]!.name}`;

beforeAll(async () => {
  e = await startGithubEmulator({ seed: 11, now: new Date('2026-03-01T00:00:00Z'), scale: 'small' });
});
afterAll(async () => e.close());

describe('recorded fixture shapes', () => {
  it('the comparison itself catches a missing key and a changed type', () => {
    expect(shapeMismatches({ a: 1, b: { c: 'x' } }, { a: 1, b: {} })).toEqual(['$.b.c: missing']);
    expect(shapeMismatches({ a: [{ n: 1 }] }, { a: [{ n: '1' }] })).toEqual([
      '$.a[0].n: recorded number, served string',
    ]);
    expect(shapeMismatches({ a: null }, { a: { any: 1 } })).toEqual([]);
  });

  it('issues (paginate-issues), for plain issues and pull requests in the list', async () => {
    const recorded = scenario('paginate-issues')[0]!.response[0];
    const served = (await get(e, `${repo()}/issues?state=all&per_page=100`)).body as Json[];
    const issue = served.find((i) => !i.pull_request && i.labels.length > 0 && i.milestone)!;
    const pull = served.find((i) => i.pull_request)!;
    expect(issue && pull).toBeTruthy();
    expect(shapeMismatches(recorded, issue)).toEqual([]);
    expect(shapeMismatches(recorded, pull)).toEqual([]);
    // GitHub's OpenAPI `issue.pull_request`: what a reader of the list tells pull requests by.
    expect(Object.keys(pull.pull_request).sort()).toEqual(['diff_url', 'html_url', 'merged_at', 'patch_url', 'url']);
    expect(pull.pull_request.url).toBe(`${e.url}${repo()}/pulls/${pull.number}`);
    expect(pull.pull_request.html_url).toMatch(new RegExp(`/pull/${pull.number}$`));
    expect(shapeMismatches(recorded, (await get(e, `${repo()}/issues/${issue.number}`)).body)).toEqual([]);
  });

  it('a repository (get-repository) and its owner', async () => {
    const recorded = scenario('get-repository')[0]!.response;
    expect(shapeMismatches(recorded, (await get(e, repo())).body)).toEqual([]);
  });

  it('labels (labels) and collaborators (add-and-remove-repository-collaborator)', async () => {
    const labels = scenario('labels')[0]!.response[0];
    expect(shapeMismatches(labels, (await get(e, `${repo()}/labels`)).body[0])).toEqual([]);
    const collaborators = scenario('add-and-remove-repository-collaborator').find(
      (f) => f.method === 'get' && f.path.endsWith('/collaborators'),
    )!.response[0];
    expect(shapeMismatches(collaborators, (await get(e, `${repo()}/collaborators`)).body[0])).toEqual([]);
  });

  it('a 404 error body (branch-protection)', async () => {
    const recorded = scenario('branch-protection').find((f) => f.status === 404)!;
    const served = await get(e, `${repo()}/branches/main/protection`);
    expect(served.status).toBe(404);
    expect(shapeMismatches(recorded.response, served.body)).toEqual([]);
  });

  it('headers: GitHub rate-limit and media headers, and Link relations in GitHub’s order', async () => {
    const pages = scenario('paginate-issues');
    const served = await get(e, `${repo()}/issues?state=all&per_page=3&page=2`);
    for (const name of [
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
      'x-ratelimit-resource',
      'x-ratelimit-used',
      'x-github-media-type',
      'x-github-request-id',
      'content-type',
      'access-control-expose-headers',
    ]) {
      expect(pages[1]!.headers[name], name).toBeDefined();
      expect(served.headers.get(name), name).not.toBeNull();
    }
    expect(served.headers.get('content-type')).toBe(pages[1]!.headers['content-type']);
    expect(served.headers.get('x-ratelimit-reset')).toMatch(/^\d{10}$/);
    for (const [i, page] of [
      [0, 1],
      [1, 2],
      [4, 14],
    ] as const) {
      const recordedRels = Object.keys(parseLink(pages[i]!.headers.link as string));
      const servedPage = await get(e, `${repo()}/issues?state=all&per_page=3&page=${page}`);
      expect(Object.keys(parseLink(servedPage.headers.get('link')))).toEqual(recordedRels);
    }
    const recordedNext = new URL(parseLink(pages[0]!.headers.link as string).next!);
    const servedNext = new URL(
      parseLink((await get(e, `${repo()}/issues?per_page=3&state=all`)).headers.get('link')).next!,
    );
    expect(servedNext.pathname.replace(/\d+/, 'ID')).toBe(recordedNext.pathname.replace(/\d+/, 'ID'));
  });
});
