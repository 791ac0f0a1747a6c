/**
 * A small GitHub REST stand-in on 127.0.0.1 for the provider's tests: the list and detail routes the
 * provider reads, Link-header pagination, a primary rate limit per token on the test's clock,
 * scripted faults, and a log of every request.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../../src/clock.js';

export interface FakeIssue {
  number: number;
  title: string;
  state: 'open' | 'closed';
  state_reason?: string | null;
  labels?: string[];
  assignees?: string[];
  created_at: string;
  updated_at: string;
  closed_at?: string | null;
  /** A pull request listed among the issues. */
  pull?: boolean;
}

export interface FakePull {
  number: number;
  title: string;
  state: 'open' | 'closed';
  merged_at?: string | null;
  created_at: string;
  updated_at: string;
  additions: number;
  reviews?: { id: number; state: string; user: string; submitted_at: string }[];
}

export interface FakeCommit {
  sha: string;
  date: string;
  message: string;
  additions: number;
}

export interface FakeEvent {
  id: number;
  issue: number;
  event: string;
  label?: string;
  assignee?: string;
  created_at: string;
}

export interface Fault {
  /** Matches the request path (with its query). */
  match: RegExp;
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** How many requests it answers. @default 1 */
  times?: number;
}

export interface LoggedRequest {
  path: string;
  status: number;
  /** Start and end on the process's monotonic clock (ordering of concurrent requests). */
  startedAt: number;
  endedAt: number;
  /** A limit response (403/429 for a rate limit). */
  limited: boolean;
}

export interface FakeGithubOptions {
  token: string;
  clock: Clock;
  /** Requests per window and token. @default 5000 */
  limit?: number;
  /** @default 1 h */
  windowMs?: number;
}

const REPO = { id: 101, name: 'app' };

export class FakeGithub {
  issues: FakeIssue[] = [];
  pulls: FakePull[] = [];
  commits: FakeCommit[] = [];
  events: FakeEvent[] = [];
  comments: { id: number; issue: number; body: string; updated_at: string; pull?: boolean }[] = [];
  readonly log: LoggedRequest[] = [];
  readonly faults: Fault[] = [];
  /** Awaited before a request is answered (e.g. to hold the first one). */
  beforeAnswer: ((path: string) => Promise<void>) | null = null;
  limit: number;
  used = 0;
  resetAt: number;
  private server: Server | null = null;
  url = '';

  constructor(private readonly o: FakeGithubOptions) {
    this.limit = o.limit ?? 5000;
    this.resetAt = o.clock.now().getTime() + (o.windowMs ?? 3600_000);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }

  /** Requests whose path starts with `prefix` (query ignored). */
  requests(prefix = ''): LoggedRequest[] {
    return this.log.filter((l) => l.path.split('?')[0]!.startsWith(prefix));
  }

  private rateHeaders(): Record<string, string> {
    return {
      'x-ratelimit-limit': String(this.limit),
      'x-ratelimit-remaining': String(Math.max(0, this.limit - this.used)),
      'x-ratelimit-reset': String(Math.ceil(this.resetAt / 1000)),
      'x-ratelimit-resource': 'core',
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const startedAt = performance.now();
    const path = req.url ?? '/';
    if (this.beforeAnswer) await this.beforeAnswer(path);
    const answer = this.answer(req, path);
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(JSON.stringify(answer.body));
    this.log.push({ path, status: answer.status, startedAt, endedAt: performance.now(), limited: answer.limited });
  }

  private answer(req: IncomingMessage, path: string): Answer {
    if (req.headers.authorization !== `token ${this.o.token}`) {
      return { status: 401, headers: {}, body: { message: 'Bad credentials' }, limited: false };
    }
    const now = this.o.clock.now().getTime();
    if (now >= this.resetAt) {
      this.used = 0;
      this.resetAt = now + (this.o.windowMs ?? 3600_000);
    }
    const fault = this.faults.find((f) => f.match.test(path) && (f.times ?? 1) > 0);
    if (fault) {
      fault.times = (fault.times ?? 1) - 1;
      const limited = fault.status === 403 || fault.status === 429;
      return { status: fault.status, headers: fault.headers ?? {}, body: fault.body ?? {}, limited };
    }
    if (this.used >= this.limit) {
      const body = { message: 'API rate limit exceeded for user ID 1.' };
      return { status: 403, headers: this.rateHeaders(), body, limited: true };
    }
    this.used++;
    const url = new URL(path, this.url);
    const routed = this.route(url);
    if (!routed) return { status: 404, headers: this.rateHeaders(), body: { message: 'Not Found' }, limited: false };
    if (!Array.isArray(routed)) return { status: 200, headers: this.rateHeaders(), body: routed, limited: false };
    return this.page(url, routed);
  }

  private page(url: URL, all: unknown[]): Answer {
    const perPage = Number(url.searchParams.get('per_page') ?? 30);
    const page = Number(url.searchParams.get('page') ?? 1);
    const body = all.slice((page - 1) * perPage, page * perPage);
    const headers = this.rateHeaders();
    if (page * perPage < all.length) {
      const next = new URL(url);
      next.searchParams.set('page', String(page + 1));
      headers.link = `<${next.toString()}>; rel="next"`;
    }
    return { status: 200, headers, body, limited: false };
  }

  private route(url: URL): unknown {
    const m = /^\/repos\/acme\/app(\/.*)?$/.exec(url.pathname);
    if (!m) return null;
    const rest = m[1] ?? '';
    const q = url.searchParams;
    if (rest === '') return repoJson(this.url);
    if (rest === '/assignees') return [1, 2, 3].map((n) => user(`dev${n}`, n));
    if (rest === '/issues') return this.listIssues(q);
    if (rest === '/issues/comments') return this.listComments(q);
    if (rest === '/issues/events') return [...this.events].sort((a, b) => b.id - a.id).map((e) => eventJson(e, this));
    if (rest === '/pulls') return this.listPulls(q);
    if (rest === '/commits') return this.listCommits(q);
    let d = /^\/pulls\/(\d+)$/.exec(rest);
    if (d) return this.pullJson(Number(d[1]), true);
    d = /^\/pulls\/(\d+)\/reviews$/.exec(rest);
    if (d) return this.reviews(Number(d[1]));
    d = /^\/commits\/(\w+)$/.exec(rest);
    if (d) return this.commitJson(d[1]!, true);
    return null;
  }

  /** Issues and pull requests (GitHub's issues list has both), by `updated` (ties by number). */
  private listIssues(q: URLSearchParams): unknown[] {
    const since = q.get('since');
    const all: FakeIssue[] = [...this.issues, ...this.pulls.map(pullAsIssue)];
    const rows = all.filter((i) => !since || i.updated_at >= since);
    const sign = q.get('direction') === 'desc' ? -1 : 1;
    rows.sort((a, b) => (cmp(a.updated_at, b.updated_at) || a.number - b.number) * sign);
    return rows.map((i) => issueJson(i));
  }

  private listComments(q: URLSearchParams): unknown[] {
    const since = q.get('since');
    const rows = this.comments.filter((c) => !since || c.updated_at >= since);
    rows.sort((a, b) => cmp(a.updated_at, b.updated_at));
    return rows.map((c) => ({
      id: c.id,
      issue_url: `${this.url}/repos/acme/app/issues/${c.issue}`,
      html_url: `https://github.test/acme/app/${c.pull ? 'pull' : 'issues'}/${c.issue}#issuecomment-${c.id}`,
      user: user('dev1', 1),
      body: c.body,
      created_at: c.updated_at,
      updated_at: c.updated_at,
    }));
  }

  private listPulls(q: URLSearchParams): unknown[] {
    const rows = [...this.pulls].sort((a, b) => cmp(a.updated_at, b.updated_at) * -1);
    if (q.get('direction') !== 'desc') rows.reverse();
    return rows.map((p) => this.pullJson(p.number, false));
  }

  private pullJson(n: number, detail: boolean): unknown {
    const p = this.pulls.find((x) => x.number === n);
    if (!p) return null;
    const figures = detail ? { additions: p.additions, deletions: 1, changed_files: 2 } : {};
    return {
      id: 9000 + p.number,
      number: p.number,
      title: p.title,
      state: p.state,
      draft: false,
      user: user('dev2', 2),
      base: { ref: 'main', repo: repoJson(this.url) },
      head: { ref: `topic-${p.number}`, repo: repoJson(this.url) },
      created_at: p.created_at,
      updated_at: p.updated_at,
      merged_at: p.merged_at ?? null,
      closed_at: p.state === 'closed' ? p.updated_at : null,
      html_url: `https://github.test/acme/app/pull/${p.number}`,
      ...figures,
    };
  }

  private reviews(n: number): unknown[] | null {
    const p = this.pulls.find((x) => x.number === n);
    if (!p) return null;
    return (p.reviews ?? []).map((r) => ({
      id: r.id,
      state: r.state,
      user: user(r.user, 7),
      submitted_at: r.submitted_at,
    }));
  }

  private listCommits(q: URLSearchParams): unknown[] {
    const since = q.get('since');
    const until = q.get('until');
    return this.commits
      .filter((c) => (!since || c.date >= since) && (!until || c.date <= until))
      .sort((a, b) => cmp(b.date, a.date))
      .map((c) => this.commitJson(c.sha, false));
  }

  private commitJson(sha: string, detail: boolean): unknown {
    const c = this.commits.find((x) => x.sha === sha);
    if (!c) return null;
    return {
      sha: c.sha,
      author: user('dev3', 3),
      commit: { message: c.message, author: { name: 'Dev Three', date: c.date }, committer: { date: c.date } },
      ...(detail
        ? { stats: { additions: c.additions, deletions: 0, total: c.additions }, files: [{ patch: 'x' }] }
        : {}),
    };
  }
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  limited: boolean;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function user(login: string, id: number) {
  return { login, id, avatar_url: `https://avatars.test/${login}` };
}

function repoJson(base: string) {
  return {
    id: REPO.id,
    full_name: 'acme/app',
    description: 'the app',
    html_url: 'https://github.test/acme/app',
    url: `${base}/repos/acme/app`,
    private: true,
    archived: false,
    default_branch: 'main',
    created_at: '2020-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
  };
}

function issueJson(i: FakeIssue) {
  return {
    id: 5000 + i.number,
    number: i.number,
    title: i.title,
    state: i.state,
    state_reason: i.state_reason ?? null,
    labels: (i.labels ?? []).map((name) => ({ name })),
    assignees: (i.assignees ?? []).map((l, n) => user(l, n + 1)),
    user: user('dev1', 1),
    created_at: i.created_at,
    updated_at: i.updated_at,
    closed_at: i.closed_at ?? null,
    milestone: null,
    html_url: `https://github.test/acme/app/issues/${i.number}`,
    ...(i.pull ? { pull_request: pullRef(i) } : {}),
  };
}

/** A pull request as the issues list shows it. */
function pullAsIssue(p: FakePull): FakeIssue {
  const { number, title, state, created_at, updated_at } = p;
  return {
    number,
    title,
    state,
    created_at,
    updated_at,
    closed_at: state === 'closed' ? updated_at : null,
    pull: true,
  };
}

/** An issue's `pull_request` key (GitHub's shape: url, html_url, diff_url, patch_url, merged_at). */
function pullRef(i: FakeIssue) {
  const html = `https://github.test/acme/app/pull/${i.number}`;
  return {
    url: `https://api.github.test/repos/acme/app/pulls/${i.number}`,
    html_url: html,
    diff_url: `${html}.diff`,
    patch_url: `${html}.patch`,
    merged_at: null,
  };
}

function eventJson(e: FakeEvent, gh: FakeGithub) {
  const issue = gh.issues.find((i) => i.number === e.issue);
  return {
    id: e.id,
    event: e.event,
    actor: user('dev1', 1),
    created_at: e.created_at,
    ...(e.label ? { label: { name: e.label } } : {}),
    ...(e.assignee ? { assignee: user(e.assignee, 4) } : {}),
    issue: { number: e.issue, ...(issue?.pull ? { pull_request: { url: 'x' } } : {}) },
  };
}
