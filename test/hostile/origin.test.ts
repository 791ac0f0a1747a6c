/**
 * Requests never leave the integration's origin with the credential: a `next` link, a path that
 * escapes the site or a redirect to another origin (here another port on 127.0.0.1) fails the call
 * with a non-retryable `provider_error` naming the integration and the foreign origin only, and the
 * other server receives nothing. A redirect on the origin is still followed.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { classifyError, NonRetryableError } from '../../src/errors.js';
import { createGithubClient } from '../../src/providers/github/client.js';
import { authorizationFor, createJiraClient } from '../../src/providers/jira/index.js';
import { createLinearClient } from '../../src/providers/linear/index.js';

const TOKEN = 'ghp_origin-test-secret';

interface Seen {
  path: string;
  headers: IncomingHttpHeaders;
}

interface Local {
  url: string;
  seen: Seen[];
}

const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A server on 127.0.0.1 that records every request and answers it with `answer`. */
async function serve(answer: (path: string, res: ServerResponse) => void): Promise<Local> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    req.resume();
    answer(req.url ?? '', res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function json(res: ServerResponse, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

function redirect(res: ServerResponse, to: string): void {
  res.writeHead(302, { location: to }).end();
}

const common = (subject: string) => ({
  subject,
  clock: new ManualClock(Date.UTC(2026, 2, 2, 12)),
  signal: new AbortController().signal,
  logger: pino({ level: 'silent' }),
  retry: { baseDelayMs: 1, maxDelayMs: 2 },
});

function githubClient(subject: string, baseUrl: string) {
  const auth = { token: TOKEN };
  return createGithubClient({ ...common(subject), baseUrl, auth, throttleKey: 'origin-test', budget: null });
}

async function refusal(p: Promise<unknown>, subject: string, foreign: string): Promise<Error> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(NonRetryableError);
  expect(classifyError(err)).toBe('provider_error');
  const message = (err as Error).message;
  expect(message).toContain(subject);
  expect(message).toContain(`(${foreign})`);
  expect(message).not.toContain('page=2');
  expect(message).not.toContain('steal');
  expect(message).not.toContain(TOKEN);
  return err as Error;
}

describe('requests stay on the integration’s origin', () => {
  it('GitHub: a `next` link to another origin is not followed, and the other server gets nothing', async () => {
    const other = await serve((_, res) => json(res, [{ id: 2 }]));
    const github = await serve((_, res) =>
      json(res, [{ id: 1 }], { link: `<${other.url}/steal/issues?page=2&token=x>; rel="next"` }),
    );
    const subject = 'github integration "acme"';
    const octokit = githubClient(subject, github.url);
    await refusal(octokit.paginate('GET /repos/{owner}/{repo}/issues', { owner: 'a', repo: 'b' }), subject, other.url);
    expect(github.seen).toHaveLength(1);
    expect(github.seen[0]!.headers.authorization).toBe(`token ${TOKEN}`);
    expect(other.seen).toEqual([]);
  });

  it('GitHub: a redirect to another origin is refused; one on the origin is followed', async () => {
    const other = await serve((_, res) => json(res, { stolen: true }));
    const github = await serve((path, res) => {
      if (path.startsWith('/moved')) redirect(res, '/repos/a/b');
      else if (path.startsWith('/away')) redirect(res, `${other.url}/steal?page=2`);
      else json(res, { name: 'b' });
    });
    const subject = 'github integration "acme"';
    const octokit = githubClient(subject, github.url);
    expect((await octokit.request('GET /moved')).data).toEqual({ name: 'b' });
    expect(github.seen.map((s) => s.path)).toEqual(['/moved', '/repos/a/b']);
    await refusal(octokit.request('GET /away'), subject, other.url);
    expect(other.seen).toEqual([]);
  });

  it('Jira: a redirect to another origin, or a path escaping the site, sends nothing elsewhere', async () => {
    const other = await serve((_, res) => json(res, { stolen: true }));
    const jira = await serve((_, res) => redirect(res, `${other.url}/steal?page=2`));
    const subject = 'jira integration "acme"';
    const client = createJiraClient({
      ...common(subject),
      siteUrl: jira.url,
      authorization: authorizationFor(`me@acme.io:${TOKEN}`, subject),
      budget: null,
    });
    await refusal(client.get('/rest/api/3/myself'), subject, other.url);
    const escaped = `//127.0.0.1:${new URL(other.url).port}/steal?page=2`;
    await refusal(client.get(escaped), subject, other.url);
    await refusal(client.get(`${other.url}/steal?page=2`), subject, other.url);
    expect(jira.seen).toHaveLength(1);
    expect(other.seen).toEqual([]);
  });

  it('Linear: a redirect to another origin sends nothing there', async () => {
    const other = await serve((_, res) => json(res, { data: {} }));
    const linear = await serve((_, res) => {
      res.writeHead(307, { location: `${other.url}/steal?page=2` }).end();
    });
    const subject = 'linear integration "acme"';
    const client = createLinearClient({
      ...common(subject),
      apiUrl: `${linear.url}/graphql`,
      credential: `lin_api_${TOKEN}`,
      budgets: null,
    });
    await refusal(client.query('Viewer', 'query Viewer { viewer { id } }', {}), subject, other.url);
    expect(linear.seen).toHaveLength(1);
    expect(other.seen).toEqual([]);
  });
});
