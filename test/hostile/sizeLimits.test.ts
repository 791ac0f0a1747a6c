/**
 * Limits on what a provider returns, played by a hostile server on 127.0.0.1 against each
 * provider's real unit (GitHub, Jira, Linear):
 * - a body larger than the answer bound (streamed without a length, or declared by
 *   `content-length`): reading stops there, the server sees the connection closed having written
 *   far less than it meant to, and the unit fails once (no retry) with a `provider_error` naming
 *   the integration and the request, none of the body;
 * - a text field longer than the stored bound: stored cut, `raw._truncated` recording its length
 *   (or `raw` replaced by a marker when it passes the raw bound);
 * - a `next` link or cursor back to a page already read: `provider_error` "pagination loop" after
 *   one or two requests;
 * - endless distinct pages: `provider_error` once the unit's page bound is reached, in every mode.
 * The server gives up after GIVE_UP requests (answering a last page), so a unit without the
 * limits ends instead of looping forever.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { SyncMode } from '../../src/domain/statuses.js';
import { classifyError, NonRetryableError } from '../../src/errors.js';
import { runGithubUnit } from '../../src/providers/github/index.js';
import { runJiraUnit } from '../../src/providers/jira/index.js';
import type { ProviderLimits } from '../../src/providers/kit/limits.js';
import { runLinearUnit } from '../../src/providers/linear/index.js';
import type { UnitContext, UnitResult } from '../../src/sdk/types.js';
import { normalizedSink, prepareRow, type StoredLimits } from '../../src/sinks/normalized/index.js';
import { DAY, rows, T0, truncateSurfaces } from '../helpers/emulatorSuite.js';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.js';
import { unitContext, type UnitSpec } from '../helpers/unitContext.js';

/** Requests after which the server answers a last page: a unit that never stops by itself ends there. */
const GIVE_UP = 30;
/** What a hostile body would stream, and the answer bound the units run with. */
const HUGE = 128 * 1024 * 1024;
const MAX_RESPONSE = 256 * 1024;
/** Text that must never show in an error: it is the body's content. */
const BODY_MARK = 'BODY-CONTENT-7f3a';

type Provider = 'github' | 'jira' | 'linear';

interface Request {
  method: string;
  path: string;
  body: string;
}

interface Poured {
  written: number;
  /** The client closed the connection before the whole body was written. */
  cut: boolean;
}

interface Hostile {
  url: string;
  requests: Request[];
  pours: Promise<Poured>[];
}

type Answer = (req: Request, res: ServerResponse, served: Hostile) => void;

const servers: Server[] = [];
let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});
beforeEach(async () => {
  await truncateSurfaces(t.db);
});
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((s) => {
      s.closeAllConnections();
      return new Promise((resolve) => s.close(resolve));
    }),
  );
});

function readAll(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

/** A server on 127.0.0.1 recording every request and answering it with `answer`. */
async function hostile(answer: Answer): Promise<Hostile> {
  const served: Hostile = { url: '', requests: [], pours: [] };
  const server = createServer((req, res) => {
    void readAll(req).then((body) => {
      const r = { method: req.method ?? '', path: req.url ?? '', body };
      served.requests.push(r);
      answer(r, res, served);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  served.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return served;
}

function json(res: ServerResponse, body: unknown, headers: Record<string, string> = {}, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/**
 * Streams `total` bytes of a JSON-looking body in 64 KiB chunks, waiting for the client to take
 * each (`declare`: with a `content-length` saying so); resolves with what was written.
 */
function pour(served: Hostile, res: ServerResponse, status: number, total: number, declare = false): void {
  const done = new Promise<Poured>((resolve) => {
    let written = 0;
    let closed = false;
    res.on('close', () => {
      closed = true;
      resolve({ written, cut: !res.writableFinished });
    });
    const head = Buffer.from(`{"mark":"${BODY_MARK}","x":"`);
    const chunk = Buffer.alloc(64 * 1024, 'a');
    res.writeHead(status, {
      'content-type': 'application/json',
      ...(declare ? { 'content-length': String(total) } : {}),
    });
    res.write(head);
    written += head.length;
    const more = async () => {
      while (!closed && written + chunk.length <= total) {
        written += chunk.length;
        if (!res.write(chunk)) await drainedOrClosed(res);
      }
      if (!closed) res.end(Buffer.alloc(total - written, 'a'));
    };
    void more();
  });
  served.pours.push(done);
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

const CLOCK = () => new ManualClock(T0);
const WINDOW = { since: new Date(T0 - 30 * DAY), before: new Date(T0) };
const OPTS = { retry: { baseDelayMs: 1, maxDelayMs: 2, attempts: 3 } };

/** A unit of `provider` reading `served`, its sink storing within `stored`. */
function unit(
  provider: Provider,
  served: Hostile,
  spec: Partial<UnitSpec> & { datasetKey: string },
  stored: Partial<StoredLimits> = {},
): UnitContext {
  const target = {
    github: { config: { baseUrl: served.url }, token: 'ghp_hostile-test-token', sourceKey: 'acme/app' },
    jira: { config: { siteUrl: served.url }, token: 'me@acme.io:jira-hostile-token', sourceKey: 'ENG' },
    linear: { config: { apiUrl: `${served.url}/graphql` }, token: 'lin_api_hostiletesttoken', sourceKey: 'ENG' },
  }[provider];
  const ctx = unitContext({ provider, ...target, db: t.db, clock: CLOCK(), ...WINDOW, ...spec });
  return { ...ctx, sink: normalizedSink(t.db, { limits: stored }) };
}

function run(provider: Provider, ctx: UnitContext, limits: Partial<ProviderLimits>): Promise<UnitResult> {
  const opts = { ...OPTS, limits };
  if (provider === 'github') return runGithubUnit(ctx, opts);
  if (provider === 'jira') return runJiraUnit(ctx, opts);
  return runLinearUnit(ctx, opts);
}

/** The error `p` rejects with: a non-retryable `provider_error` whose message holds every `parts`. */
async function providerError(p: Promise<unknown>, ...parts: string[]): Promise<Error> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(NonRetryableError);
  expect(classifyError(err)).toBe('provider_error');
  for (const part of parts) expect((err as Error).message).toContain(part);
  return err as Error;
}

const SUBJECT = (p: Provider) => `${p} integration "acme-${p}"`;

// ---------------------------------------------------------------------------------------------
// The answers each provider's unit meets first.

/** Jira's calls besides its search: the caller, the statuses and the project. */
function jiraPreamble(req: Request, res: ServerResponse): boolean {
  if (req.path.startsWith('/rest/api/3/project/')) return (json(res, { id: '10000', key: 'ENG', name: 'Eng' }), true);
  if (req.path.startsWith('/rest/api/3/myself')) return (json(res, { accountId: 'me', timeZone: 'UTC' }), true);
  if (req.path.startsWith('/rest/api/3/status')) return (json(res, []), true);
  return false;
}

const isSearch = (r: Request) => r.path.startsWith('/rest/api/3/search/jql');
const isIssues = (r: Request) => r.path.split('?')[0]!.endsWith('/issues');

function linearTeams(nodes: unknown[], endCursor: string | null): unknown {
  return { data: { teams: { nodes, pageInfo: { hasNextPage: endCursor !== null, endCursor } } } };
}

function githubIssue(n: number, title: string): unknown {
  const at = new Date(T0 - DAY).toISOString();
  return {
    id: 1000 + n,
    number: n,
    title,
    state: 'open',
    labels: [],
    assignees: [],
    created_at: at,
    updated_at: at,
    html_url: `https://github.invalid/acme/app/issues/${n}`,
  };
}

// ---------------------------------------------------------------------------------------------

describe('an answer larger than the bound', () => {
  async function expectCut(served: Hostile): Promise<void> {
    const poured = await Promise.all(served.pours);
    expect(poured).toHaveLength(1); // one request: not retried
    expect(poured[0]!.cut).toBe(true);
    expect(poured[0]!.written).toBeLessThan(HUGE / 8);
  }

  it('GitHub: a streamed list page stops being read past the bound; one non-retryable provider_error', async () => {
    const served = await hostile((_, res, s) => pour(s, res, 200, HUGE));
    const ctx = unit('github', served, { datasetKey: 'work-items' });
    const err = await providerError(
      run('github', ctx, { maxResponseBytes: MAX_RESPONSE }),
      SUBJECT('github'),
      'GET /repos/acme/app/issues',
      `larger than ${MAX_RESPONSE} bytes`,
    );
    expect(err.message).not.toContain(BODY_MARK);
    await expectCut(served);
  });

  it('GitHub: an error body Octokit reads itself is bounded too', async () => {
    const served = await hostile((_, res, s) => pour(s, res, 422, HUGE));
    const ctx = unit('github', served, { datasetKey: 'work-items' });
    const err = await providerError(
      run('github', ctx, { maxResponseBytes: MAX_RESPONSE }),
      SUBJECT('github'),
      'GET /repos/acme/app/issues',
      `larger than ${MAX_RESPONSE} bytes`,
    );
    expect(err.message).not.toContain(BODY_MARK);
    await expectCut(served);
  });

  it('Jira: a body whose content-length passes the bound is not read at all', async () => {
    const served = await hostile((_, res, s) => pour(s, res, 200, HUGE, true));
    const ctx = unit('jira', served, { datasetKey: 'work-items' });
    const err = await providerError(
      run('jira', ctx, { maxResponseBytes: MAX_RESPONSE }),
      SUBJECT('jira'),
      'GET /rest/api/3/myself',
      `larger than ${MAX_RESPONSE} bytes`,
    );
    expect(err.message).not.toContain(BODY_MARK);
    await expectCut(served);
  });

  it('Jira: a streamed search page stops being read past the bound', async () => {
    const served = await hostile((req, res, s) => {
      if (!jiraPreamble(req, res)) pour(s, res, 200, HUGE);
    });
    const ctx = unit('jira', served, { datasetKey: 'work-items' });
    const err = await providerError(
      run('jira', ctx, { maxResponseBytes: MAX_RESPONSE }),
      SUBJECT('jira'),
      'POST /rest/api/3/search/jql',
      `larger than ${MAX_RESPONSE} bytes`,
    );
    expect(err.message).not.toContain(BODY_MARK);
    await expectCut(served);
  });

  it('Linear: a streamed answer stops being read past the bound', async () => {
    const served = await hostile((_, res, s) => pour(s, res, 200, HUGE));
    const ctx = unit('linear', served, { datasetKey: 'teams', tier: 'reference' });
    const err = await providerError(
      run('linear', ctx, { maxResponseBytes: MAX_RESPONSE }),
      SUBJECT('linear'),
      'query SyncTeams',
      `larger than ${MAX_RESPONSE} bytes`,
    );
    expect(err.message).not.toContain(BODY_MARK);
    await expectCut(served);
  });
});

describe('a text field longer than the stored bound', () => {
  const LONG = 5000;
  const TEXT_MAX = 1000;

  it('GitHub: an issue title is stored cut, raw._truncated recording its length', async () => {
    const served = await hostile((_, res) => json(res, [githubIssue(1, 't'.repeat(LONG))]));
    const ctx = unit('github', served, { datasetKey: 'work-items' }, { textMaxChars: TEXT_MAX });
    await run('github', ctx, {});
    const [row] = await rows<{ title: string; raw: Record<string, unknown> }>(t.db, 'work_items');
    expect(row!.title).toBe('t'.repeat(TEXT_MAX));
    expect(row!.raw._truncated).toEqual({ title: LONG });
    expect(row!.raw.number).toBe(1); // the rest of raw is kept
  });

  it('Jira: a project description is stored cut; a raw past its bound becomes a marker with its size', async () => {
    const description = 'd'.repeat(LONG);
    const served = await hostile((_, res) => json(res, { id: '10000', key: 'ENG', name: 'Engineering', description }));
    const ctx = unit(
      'jira',
      served,
      { datasetKey: 'projects', tier: 'reference' },
      { textMaxChars: TEXT_MAX, rawMaxBytes: 2048 },
    );
    await run('jira', ctx, {});
    const [row] = await rows<{ description: string; raw: Record<string, unknown> }>(t.db, 'projects');
    expect(row!.description).toBe('d'.repeat(TEXT_MAX));
    const bytes = JSON.stringify({ id: '10000', key: 'ENG', name: 'Engineering', description }).length;
    expect(row!.raw).toEqual({
      _omitted: { bytes: expect.any(Number) as number, limit: 2048 },
      _truncated: { description: LONG },
    });
    expect((row!.raw._omitted as { bytes: number }).bytes).toBeGreaterThan(bytes);
  });

  it('Linear: a team description is stored cut, raw._truncated recording its length', async () => {
    const team = { id: 'team-1', key: 'ENG', name: 'Engineering', description: 'l'.repeat(LONG) };
    const served = await hostile((_, res) => json(res, linearTeams([team], null)));
    const ctx = unit('linear', served, { datasetKey: 'teams', tier: 'reference' }, { textMaxChars: TEXT_MAX });
    await run('linear', ctx, {});
    const [row] = await rows<{ description: string; raw: Record<string, unknown> }>(t.db, 'teams');
    expect(row!.description).toBe('l'.repeat(TEXT_MAX));
    expect(row!.raw._truncated).toEqual({ description: LONG });
    expect(row!.raw.key).toBe('ENG');
  });
});

describe('a next link or cursor back to a page already read', () => {
  it('GitHub: page 2 linking back to page 1 ends the unit after two requests', async () => {
    const served = await hostile((req, res, s) => {
      if (s.requests.length > GIVE_UP) return json(res, []);
      const first = s.requests[0]!.path;
      const next = req.path === first ? `${first}&page=2` : first; // 1 → 2 → 1 → …
      json(res, [], { link: `<${s.url}${next}>; rel="next"` });
    });
    const ctx = unit('github', served, { datasetKey: 'work-items' });
    await providerError(run('github', ctx, {}), SUBJECT('github'), 'GET /repos/acme/app/issues', 'pagination loop');
    expect(served.requests.filter(isIssues)).toHaveLength(2);
  });

  it('Jira: a search answering the same nextPageToken ends the unit after two searches', async () => {
    const served = await hostile((req, res, s) => {
      if (jiraPreamble(req, res)) return;
      const last = s.requests.length > GIVE_UP;
      json(res, { issues: [], ...(last ? { isLast: true } : { nextPageToken: 'same-token', isLast: false }) });
    });
    const ctx = unit('jira', served, { datasetKey: 'work-items' });
    const err = await providerError(
      run('jira', ctx, {}),
      SUBJECT('jira'),
      'POST /rest/api/3/search/jql',
      'pagination loop',
    );
    expect(err.message).not.toContain('same-token');
    expect(served.requests.filter(isSearch)).toHaveLength(2);
  });

  it('Linear: a connection answering the same endCursor ends the unit after two queries', async () => {
    const served = await hostile((_, res, s) =>
      json(res, linearTeams([], s.requests.length > GIVE_UP ? null : 'same-cursor')),
    );
    const ctx = unit('linear', served, { datasetKey: 'teams', tier: 'reference' });
    const err = await providerError(run('linear', ctx, {}), SUBJECT('linear'), 'query SyncTeams', 'pagination loop');
    expect(err.message).not.toContain('same-cursor');
    expect(served.requests).toHaveLength(2);
  });
});

describe('endless distinct pages: the unit’s page bound', () => {
  const MAX_PAGES = 3;
  const MODES: SyncMode[] = ['incremental', 'backfill', 'full_resync'];

  it.each(MODES)('GitHub (%s): fails before the list page past the bound', async (mode) => {
    const served = await hostile((req, res, s) => {
      const n = s.requests.length;
      if (n > GIVE_UP) return json(res, []);
      json(res, [], { link: `<${s.url}${s.requests[0]!.path}&page=${n + 1}>; rel="next"` });
    });
    const ctx = unit('github', served, { datasetKey: 'work-items', mode });
    await providerError(
      run('github', ctx, { unitMaxPages: MAX_PAGES }),
      SUBJECT('github'),
      `more than ${MAX_PAGES} pages`,
      'SYNC_UNIT_MAX_PAGES',
    );
    expect(served.requests.filter(isIssues)).toHaveLength(MAX_PAGES);
  });

  it.each(MODES)('Jira (%s): fails after the bound’s searches', async (mode) => {
    const served = await hostile((req, res, s) => {
      if (jiraPreamble(req, res)) return;
      const n = s.requests.length;
      json(res, { issues: [], ...(n > GIVE_UP ? { isLast: true } : { nextPageToken: `token-${n}`, isLast: false }) });
    });
    const ctx = unit('jira', served, { datasetKey: 'work-items', mode });
    await providerError(run('jira', ctx, { unitMaxPages: MAX_PAGES }), SUBJECT('jira'), `more than ${MAX_PAGES} pages`);
    expect(served.requests.filter(isSearch)).toHaveLength(MAX_PAGES);
  });

  it.each(MODES)('Linear (%s): fails after the bound’s queries', async (mode) => {
    const served = await hostile((_, res, s) => {
      const n = s.requests.length;
      json(res, linearTeams([], n > GIVE_UP ? null : `cursor-${n}`));
    });
    const ctx = unit('linear', served, { datasetKey: 'teams', tier: 'reference', mode });
    await providerError(
      run('linear', ctx, { unitMaxPages: MAX_PAGES }),
      SUBJECT('linear'),
      `more than ${MAX_PAGES} pages`,
    );
    expect(served.requests).toHaveLength(MAX_PAGES);
  });

  it('the bound counts every listing of the unit together (Jira: the boards, then each board’s sprints)', async () => {
    const served = await hostile((req, res) => {
      const boards = [1, 2].map((id) => ({ id, name: `Board ${id}`, type: 'scrum' }));
      json(res, { isLast: true, values: req.path.includes('/sprint') ? [] : boards });
    });
    const ctx = () => unit('jira', served, { datasetKey: 'sprints', tier: 'reference' });
    await expect(run('jira', ctx(), { unitMaxPages: 3 })).resolves.toBeDefined();
    expect(served.requests).toHaveLength(3);
    await providerError(run('jira', ctx(), { unitMaxPages: 2 }), SUBJECT('jira'), 'more than 2 pages');
    expect(served.requests).toHaveLength(3 + 2);
  });
});

describe('the stored bounds, row by row', () => {
  const limits = { textMaxChars: 10, rawMaxBytes: 1024 };
  const row = {
    org_id: 'org',
    integration_id: '00000000-0000-4000-8000-00000000a001',
    provider: 'github',
    last_synced_at: new Date(T0),
  };

  it('cuts text and text-array elements, never inside a surrogate pair, never a key column', () => {
    const id = 'x'.repeat(40);
    const title = `${'t'.repeat(9)}\u{1F600}tail`; // the pair would straddle the bound
    const out = prepareRow(
      'work_items',
      { ...row, external_id: id, title, labels: ['ok', 'l'.repeat(12)], raw: { id: 7 } },
      limits,
    );
    expect(out.external_id).toBe(id);
    expect(out.title).toBe('t'.repeat(9));
    expect(out.labels).toEqual(['ok', 'l'.repeat(10)]);
    expect(JSON.parse(out.raw as string)).toEqual({ id: 7, _truncated: { title: title.length, 'labels[1]': 12 } });
  });

  it('a row within the bounds is stored as it came; a raw past its bound becomes a marker', () => {
    const small = prepareRow('work_items', { ...row, external_id: 'a', title: 'short', raw: { id: 1 } }, limits);
    expect(small.title).toBe('short');
    expect(JSON.parse(small.raw as string)).toEqual({ id: 1 });
    const big = prepareRow('work_items', { ...row, external_id: 'b', raw: { blob: 'é'.repeat(600) } }, limits);
    expect(JSON.parse(big.raw as string)).toEqual({ _omitted: { bytes: 1211, limit: 1024 } });
  });
});
