/**
 * GitHub's verify of a repository's issues and pull requests (the steps: ../kit/verify.ts).
 *
 * The listing is the repository's issues list (`state=all&sort=updated&direction=asc`, 100 a page,
 * read by keyset on `updated_at` like any read of it: pages.ts `keysetPages`), which lists pull
 * requests too and already holds each object whole: a missing or stale issue is written from the
 * page just listed, without asking for it again; a pull request costs only what the unit's datasets
 * need beyond the list (its detail, its reviews: pulls.ts), as a window read's does.
 *
 * One listing serves two surfaces, issues → `work_items` and pull requests → `pull_requests` (when
 * the unit carries `pull-requests`): the kit compares one scope per reader, so the reader's store
 * (`familyStore`) is the pair of them. Its ids carry which surface they are of (`i:` or `p:` before
 * the store's `owner/repo#number`; GitHub numbers issues and pull requests in one sequence), and it
 * hands each call to the surface's own store; the pass through the store's unseen rows takes the
 * issues first, then the pull requests, so the id it stands at (the checkpoint's `after`) says in
 * which of the two it is. Counts are the two surfaces' together.
 *
 * GitHub has no read of several issues by number: an unseen one is confirmed by `GET
 * /repos/{owner}/{repo}/issues/{number}` (4 at a time): 200 is present, unless the answer is another
 * repository's or another number's (a transferred issue: GitHub answers 301 to its new place, which
 * the client follows); 410 Gone (deleted) and 404 (deleted with its repository content, or no longer
 * visible to the credential) are gone.
 */
import type { ListedItem } from '../../domain/verify.js';
import { NonRetryableError } from '../../errors.js';
import type { VerifyScope } from '../../sdk/normalized.js';
import type { Sink, SinkTombstones, UnitContext, UnitResult } from '../../sdk/types.js';
import { ProviderAnswerError } from '../kit/errors.js';
import { freshProgress, resumableRead, type KeysetFormat } from '../kit/resume.js';
import { CONFIRM_SINGLES, runVerify, sourceScope, VERIFY_COUNTS, type VerifyReader } from '../kit/verify.js';
import { PageWriter } from '../kit/write.js';
import { itemKey, workItemRow, type GhIssue } from './mapping.js';
import { details, issuePages, type Job } from './pages.js';
import { pullRows, reviewRows } from './pulls.js';

/** The surfaces a verify of the issues list writes, by dataset. */
const FAMILY: Readonly<Record<string, string>> = {
  'work-items': 'work_items',
  'pull-requests': 'pull_requests',
  'pull-request-reviews': 'pull_request_reviews',
};

/** A verify's checkpoint: its listing's keyset, then its pass through the store; verify and family counts. */
const VERIFY_RESUME: KeysetFormat = { v: 1, order: 'asc', surfaces: [...VERIFY_COUNTS, ...Object.values(FAMILY)] };

/** Which surface a verify id is of: its prefix. */
type Kind = 'i' | 'p';

const SURFACE_OF: Readonly<Record<Kind, string>> = { i: 'work_items', p: 'pull_requests' };

/** The verify id of an issue or pull request: its kind, then the store's `owner/repo#number`. */
function verifyId(job: Job, i: Pick<GhIssue, 'number' | 'pull_request'>): string {
  return `${i.pull_request ? 'p' : 'i'}:${itemKey(job.scope.container, i.number)}`;
}

/** A verify id read: its kind, the store's id and the number. */
interface Parsed {
  kind: Kind;
  key: string;
  number: number;
}

/** A verify id's kind, the store's id and the number, or null when it is none of this repository. */
function parseId(job: Job, id: string): Parsed | null {
  const kind = id.slice(0, 2) === 'i:' ? 'i' : id.slice(0, 2) === 'p:' ? 'p' : null;
  const key = id.slice(2);
  const prefix = `${job.scope.container}#`;
  if (kind === null || !key.startsWith(prefix)) return null;
  const number = Number(key.slice(prefix.length));
  return Number.isSafeInteger(number) && number > 0 ? { kind, key, number } : null;
}

/** The verify unit of the issues list: its result counts the rows written and the verify's. */
export function verifyIssueList(job: Job): Promise<UnitResult> {
  return resumableRead(job.ctx, VERIFY_RESUME, async (p, resumed) => {
    const reader = issueListReader(job, p.counts);
    // The unit's sink, its tombstones those of the pair of surfaces (`familyStore`).
    const sink = Object.create(job.ctx.sink, { tombstones: { value: familyStore(job) } }) as Sink;
    const ctx = { ...job.ctx, sink };
    await runVerify(ctx, reader, { f: VERIFY_RESUME, p, resumed });
    const verify = Object.fromEntries(VERIFY_COUNTS.map((k) => [k, p.counts[k] ?? 0]));
    const surfaces = job.datasets.map((d) => FAMILY[d]).filter((s): s is string => s !== undefined);
    return {
      items: surfaces.reduce((n, s) => n + (p.counts[s] ?? 0), 0),
      touchedSurfaces: surfaces.filter((s) => (p.counts[s] ?? 0) > 0),
      verify,
    };
  });
}

/** The kinds the unit verifies: issues always (its anchor), pull requests when it carries them. */
function kindsOf(job: Job): Kind[] {
  return job.datasets.includes('pull-requests') ? ['i', 'p'] : ['i'];
}

/**
 * The reader: the issues list's pages as verify ids, the objects of the last page listed (and of
 * the last batch confirmed) kept by id, so `fetch` writes them without asking again.
 */
export function issueListReader(job: Job, counts: Record<string, number>): VerifyReader {
  const kinds = new Set(kindsOf(job));
  const known = new Map<string, GhIssue>();
  const writer = new PageWriter(job.ctx, counts);
  const keep = (objects: readonly GhIssue[]) => {
    known.clear();
    for (const o of objects) known.set(verifyId(job, o), o);
  };
  const listedOf = (o: GhIssue): ListedItem => ({ id: verifyId(job, o), updatedAt: timeOf(o.updated_at) });
  const wanted = (o: GhIssue) => kinds.has(o.pull_request ? 'p' : 'i');
  let home: string | null = null; // the repository's URL as the listing names it
  return {
    scope: familyScope(job, 'i'),
    confirmBatch: CONFIRM_SINGLES,
    async *list(from) {
      const place = { f: VERIFY_RESUME, p: freshProgress(VERIFY_RESUME), resumed: false };
      for await (const page of issuePages<GhIssue>({ ...job, since: from }, place)) {
        const objects = page.filter(wanted);
        if (page[0]?.repository_url) home = page[0].repository_url;
        keep(objects);
        yield objects.map(listedOf);
      }
    },
    async confirm(ids) {
      const asked = ids.map((id) => parseId(job, id)).filter((x): x is Parsed => x !== null);
      const read = await details(job, asked, (a) => readIssue(job, a.number, home));
      const present = read.filter((o): o is GhIssue => o !== null && wanted(o));
      keep(present);
      return present.map(listedOf);
    },
    async fetch(ids) {
      const objects: GhIssue[] = [];
      const unknown: number[] = [];
      for (const id of ids) {
        const o = known.get(id);
        if (o) objects.push(o);
        else {
          const parsed = parseId(job, id);
          if (parsed) unknown.push(parsed.number);
        }
      }
      // Every id the kit fetches is of the page or batch just handed to it; anything else is read.
      const read = await details(job, unknown, (n) => readIssue(job, n, home));
      objects.push(...read.filter((o): o is GhIssue => o !== null && wanted(o)));
      await writeFamily(job, writer, objects);
    },
  };
}

/** The rows of these issues and pull requests, written surface by surface (the unit's datasets'). */
async function writeFamily(job: Job, writer: PageWriter, objects: GhIssue[]): Promise<void> {
  const issues = objects.filter((o) => !o.pull_request).map((o) => workItemRow(job.scope, o));
  const pulls = job.datasets.includes('pull-requests') ? await pullRows(job, objects) : [];
  const reviews = job.datasets.includes('pull-request-reviews') ? await reviewRows(job, objects) : [];
  await writer.write('work_items', issues);
  await writer.write('pull_requests', pulls);
  await writer.write('pull_request_reviews', reviews);
}

/** A GitHub time as a Date, or null without a valid one. */
export function timeOf(iso: string | undefined): Date | null {
  const ms = iso ? Date.parse(iso) : Number.NaN;
  return Number.isFinite(ms) ? new Date(ms) : null;
}

/**
 * Issue (or pull request) `number` as GitHub has it now in this repository, or null when it is not
 * there: deleted (410), not found or not visible (404), or transferred (the 301 followed to
 * another repository's issue, or another number). `home`: the repository's URL as its issues name
 * it (a renamed repository's new one), when the listing showed it.
 */
async function readIssue(job: Job, number: number, home: string | null): Promise<GhIssue | null> {
  const { owner, repo } = job.repo;
  try {
    const res = await job.gh.request('GET /repos/{owner}/{repo}/issues/{issue_number}', {
      owner,
      repo,
      issue_number: number,
    });
    const issue = res.data as unknown as GhIssue;
    return issue.number === number && inRepository(job, issue.repository_url, home) ? issue : null;
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  }
}

/**
 * Whether an answer whose repository API URL is `url` is of this repository: `url` is the
 * listing's (`home`), or names `owner/repo`.
 */
export function inRepository(job: Job, url: string | undefined, home: string | null): boolean {
  if (url === undefined) return true; // an answer without it: its number is all there is to compare
  if (home !== null && url === home) return true;
  const path = `/repos/${job.repo.owner}/${job.repo.repo}`.toLowerCase();
  return url.toLowerCase().replace(/\/+$/, '').endsWith(path);
}

/** A 404 (`not_found`) or 410 Gone answer. */
export function isGone(err: unknown): boolean {
  if (!(err instanceof NonRetryableError)) return false;
  if (err.category === 'not_found') return true;
  return err.cause instanceof ProviderAnswerError && err.cause.status === 410;
}

function familyScope(job: Job, kind: Kind): VerifyScope {
  return sourceScope(job.ctx, job.scope.provider, SURFACE_OF[kind], job.scope.container);
}

type Fenced = Pick<UnitContext, 'sink'>;

/**
 * The store as the verify sees it: the unit's surfaces of the repository (issues, and pull requests
 * when it carries them) under verify ids (module comment), each call handed to each surface's store
 * with its own ids. The unseen rows come issue rows first, then pull request rows.
 */
export function familyStore(job: Job & { ctx: Fenced }): SinkTombstones {
  const store = job.ctx.sink.tombstones;
  if (!store) {
    const msg = `sink "${job.ctx.sink.name}" keeps no tombstones: it cannot verify`;
    throw new NonRetryableError(msg, 'adapter_error');
  }
  const kinds = kindsOf(job);
  /** `ids` by kind, as the store names them. */
  const byKind = (ids: readonly string[]) => {
    const out = new Map<Kind, string[]>(kinds.map((k) => [k, []]));
    for (const id of ids) {
      const parsed = parseId(job, id);
      if (parsed) out.get(parsed.kind)?.push(parsed.key);
    }
    return [...out].filter(([, keys]) => keys.length > 0);
  };
  const ours = (kind: Kind) => (key: string) => `${kind}:${key}`;
  return {
    async compare(guard, _scope, ids, at) {
      const out = [];
      for (const [kind, keys] of byKind(ids)) {
        const stored = await store.compare(guard, familyScope(job, kind), keys, at);
        out.push(...stored.map((s) => ({ ...s, externalId: ours(kind)(s.externalId) })));
      }
      return out;
    },
    async unseen(_scope, since, after, limit) {
      const at = after === null ? null : parseId(job, after);
      const start = at === null ? 0 : kinds.indexOf(at.kind);
      if (start < 0) return []; // a place in a surface this unit does not verify: nothing more to confirm
      const out: string[] = [];
      for (const [i, kind] of kinds.entries()) {
        if (i < start || out.length >= limit) continue;
        const from = i === start && at !== null ? at.key : null;
        const keys = await store.unseen(familyScope(job, kind), since, from, limit - out.length);
        out.push(...keys.map(ours(kind)));
      }
      return out;
    },
    async markDeleted(guard, _scope, ids, at, unseenSince) {
      let marked = 0;
      for (const [kind, keys] of byKind(ids)) {
        marked += await store.markDeleted(guard, familyScope(job, kind), keys, at, unseenSince);
      }
      return marked;
    },
  };
}
