/**
 * Concurrent edits while a reader pages through a list, as on GitHub, where people keep working
 * while a sync reads: GitHub pages lists by page number (`Link: <…&page=2>; rel="next"`), so an
 * object edited on a page already read moves to the end of a list sorted by `updated`, a deleted
 * one leaves it, and every later object shifts one place forward — the one at the page boundary is
 * then on a page already read.
 *
 * - `churn` (edits per second of the emulator's clock): before each answer of a repository list,
 *   the edits due since the previous request (at most MAX_BURST, the rest dropped) are made in
 *   that repository, drawn from the seed: a new comment on an issue or pull request (half), an
 *   edited comment, a deleted comment (one in twenty), a closed issue, a deleted issue (one in ten);
 *   and, drawn apart (so the edits above stay as they were), one in ACCOUNT_DELETION_ODDS edits is
 *   followed by a user's account deleted (accounts.ts: gone from every repository's assignees).
 * - `listEdits` (a probability): before each request for a later part of a list sorted by update
 *   time, ascending (`/issues` or `/issues/comments` with `sort=updated&direction=asc`, asking for
 *   `page` 2 or more, or `since` a time after some of the list), with that probability one more
 *   edit in that repository to an object the reader has passed already — on an earlier page, or
 *   updated before `since` — drawn from the seed (a comment on the issue, or an edited comment).
 *   A busy repository: what a reader pages through changes behind it between its pages.
 * - `onPage(listing, page, fn)`: `fn` runs once, just before the `page`th request of `listing`
 *   (counted from when the hook was set) is answered: a test's edit between two given pages.
 * A listing is the path after `/repos/{owner}/{repo}` (`/issues`, `/issues/comments`,
 * `/issues/events`, `/assignees`, `/pulls/7/reviews`), whatever its query.
 */
import { ValidationError } from '../../errors.js';
import { Rng } from '../core/random.js';
import { deletableUsers } from './accounts.js';
import { editHelpers, type EditHelpers } from './edits.js';
import { present, type CommentRecord, type ItemRecord, type OrgData, type RepoRecord } from './model.js';

/** Edits made at once at most, however long the emulator sat idle. */
export const MAX_BURST = 5;

/** One edit in this many is followed by an account deleted: rare, as people leaving are. */
export const ACCOUNT_DELETION_ODDS = 200;

/** The lists sorted by update time, which an edit reorders. */
const SORTED_LISTS: ReadonlySet<string> = new Set(['/issues', '/issues/comments']);

interface Hook {
  listing: string;
  page: number;
  seen: number;
  fn: () => void;
}

export class Churn {
  /** Edits the churn made so far (deletions among them: issues and comments), and accounts deleted, for reports. */
  readonly made = { edits: 0, deletions: 0, accounts: 0 };
  private readonly hooks: Hook[] = [];
  private lastAt: number | null = null;
  private owed = 0;
  private drawn = 0;
  private listEdits = 0;
  private listDraws = 0;

  constructor(
    private readonly data: OrgData,
    private rate: number,
    private readonly edits: EditHelpers = editHelpers(data),
  ) {
    checkRate(rate);
  }

  /** Edits per second from now on (0: none). */
  setRate(rate: number): void {
    checkRate(rate);
    this.rate = rate;
  }

  /** The probability of one more edit before each request of a sorted list (0: none). */
  setListEdits(p: number): void {
    if (!Number.isFinite(p) || p < 0 || p > 1)
      throw new ValidationError('listEdits', `expected a probability from 0 to 1, got ${p}`);
    this.listEdits = p;
  }

  onPage(listing: string, page: number, fn: () => void): void {
    if (!Number.isInteger(page) || page < 1) throw new Error(`page must be a whole number from 1, got ${page}`);
    this.hooks.push({ listing, page, seen: 0, fn });
  }

  /** Called for every request before it is answered; `listing` is set for repository lists. */
  before(now: number, repo: RepoRecord | null, listing: string | null, q?: URLSearchParams): void {
    this.owed = Math.min(MAX_BURST, this.owed + (this.lastAt === null ? 0 : (this.rate * (now - this.lastAt)) / 1000));
    this.lastAt = now;
    if (!repo || listing === null) return;
    for (const h of this.hooks.filter((x) => x.listing === listing)) {
      if (++h.seen !== h.page) continue;
      this.hooks.splice(this.hooks.indexOf(h), 1);
      h.fn();
    }
    for (; this.owed >= 1; this.owed--) this.edit(repo, now);
    const ascending = q?.get('sort') === 'updated' && q.get('direction') === 'asc';
    if (this.listEdits > 0 && q && ascending && SORTED_LISTS.has(listing)) {
      const rng = new Rng(this.data.seed, `list-edit:${this.listDraws++}`);
      if (rng.next() < this.listEdits) this.editBehind(repo, listing, q, now, rng);
    }
  }

  /** Makes `n` of the churn's edits in `repo` at `now` now (as if they were due). */
  editNow(repo: RepoRecord, now: number, n: number): void {
    for (let i = 0; i < n; i++) this.edit(repo, now);
  }

  /** An edit to an object of `listing` the request `q` reads past: on an earlier page, or before its `since`. */
  private editBehind(repo: RepoRecord, listing: string, q: URLSearchParams, now: number, rng: Rng): void {
    const comments = listing === '/issues/comments';
    const list: { updatedAt: number }[] = comments
      ? repo.comments.filter((c) => present(c.item))
      : repo.items.filter((i) => present(i));
    list.sort((a, b) => a.updatedAt - b.updatedAt);
    const since = q.get('since') ? Date.parse(q.get('since')!) : Number.NaN;
    const inWindow = Number.isNaN(since) ? list : list.filter((x) => x.updatedAt >= since);
    const page = Math.max(1, Number(q.get('page') ?? 1) || 1);
    const perPage = Math.min(100, Math.max(1, Number(q.get('per_page') ?? 30) || 30));
    const behind = page > 1 ? inWindow.slice(0, (page - 1) * perPage) : list.filter((x) => x.updatedAt < since);
    if (behind.length === 0) return;
    const target = rng.pick(behind);
    if (comments) this.edits.editComment(repo, target as CommentRecord, now);
    else this.edits.comment(repo, target as ItemRecord, now, this.drawn++);
    this.made.edits++;
  }

  private edit(repo: RepoRecord, now: number): void {
    const rng = new Rng(this.data.seed, `churn:${this.drawn++}`);
    const items = repo.items.filter(present);
    if (items.length === 0) return;
    this.made.edits++;
    const roll = rng.next();
    const item = rng.pick(items);
    const issues = items.filter((i) => !i.pull);
    const comments = repo.comments.filter((c) => present(c.item));
    if (roll < 0.5 || (roll < 0.75 && comments.length === 0)) this.edits.comment(repo, item, now, this.drawn);
    else if (roll < 0.7) this.edits.editComment(repo, rng.pick(comments), now);
    else if (roll < 0.75) {
      this.edits.removeComment(repo, rng.pick(comments), now);
      this.made.deletions++;
    } else if (roll < 0.9 || issues.length === 0) this.edits.close(repo, item, now);
    else {
      this.edits.remove(repo, rng.pick(issues), now);
      this.made.deletions++;
    }
    this.maybeDeleteAccount(now);
  }

  /** After the `made.edits`th edit: an account deleted, with odds 1 in ACCOUNT_DELETION_ODDS. */
  private maybeDeleteAccount(now: number): void {
    const rng = new Rng(this.data.seed, `churn-account:${this.made.edits}`);
    const users = deletableUsers(this.data);
    if (users.length === 0 || rng.next() * ACCOUNT_DELETION_ODDS >= 1) return;
    this.edits.deleteAccount(rng.pick(users), now);
    this.made.accounts++;
  }
}

/** The `churn` option: a number of edits per second, 0 or more. */
export function checkRate(rate: number): number {
  if (!Number.isFinite(rate) || rate < 0)
    throw new ValidationError('churn', `expected edits per second ≥ 0, got ${rate}`);
  return rate;
}
