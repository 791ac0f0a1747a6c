/**
 * Single edits of the organisation at a time, as people make them while a reader pages through a
 * list: an issue commented on or edited (its `updated_at` moves to that time, so it moves to the
 * end of every list sorted by `updated` ascending), a comment edited, a comment deleted (gone from
 * every list; reading it answers 404; its issue keeps its `updated_at`), an issue closed, an issue
 * deleted (gone from every list; reading it answers 410), a user removed as one repository's
 * assignee, a user's account deleted (accounts.ts). Each bumps the repository's version so cached
 * orderings are rebuilt. Used by the churn (churn.ts) and by tests (`emulator.edit`), both
 * through `editHelpers`, which announces every edit (the webhook it sends: webhooks.ts).
 */
import { Rng } from '../core/random.js';
import type { Announce } from '../core/webhooks.js';
import { deleteAccount, liveUser, unassign } from './accounts.js';
import {
  present,
  type CommentRecord,
  type ItemRecord,
  type OrgData,
  type RepoRecord,
  type UserRecord,
} from './model.js';
import { closeItem, commentPosition, nextId } from './mutate.js';
import type { GithubChange } from './webhooks.js';
import { COMMENT_BODIES } from './words.js';

/** What `emulator.edit` offers; every edit happens at the clock's now (whole seconds). */
export interface Edits {
  /** The issue or pull request `number` of `repo` (default: the first) is edited. */
  touch(number: number, repo?: RepoRecord): ItemRecord;
  /** A new comment on `number`; the issue's `updated_at` moves with it. */
  comment(number: number, repo?: RepoRecord): CommentRecord;
  /** The comment `id` is edited. */
  editComment(id: number, repo?: RepoRecord): CommentRecord;
  /** The comment `id` is deleted; its issue's `updated_at` stays. */
  removeComment(id: number, repo?: RepoRecord): CommentRecord;
  /** The open issue `number` is closed (a `closed` event). */
  close(number: number, repo?: RepoRecord): ItemRecord;
  /** The issue `number` is deleted (pull requests cannot be, as on GitHub). */
  remove(number: number, repo?: RepoRecord): ItemRecord;
  /** User `id` is no longer a collaborator of `repo`: gone from its assignees only. */
  unassign(id: number, repo?: RepoRecord): UserRecord;
  /** User `id`'s GitHub account is deleted (not the organisation's owner): gone everywhere, read as 404. */
  deleteAccount(id: number): UserRecord;
}

/** Whole seconds, never before the item's own last change. */
function second(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}

function itemOf(repo: RepoRecord, number: number): ItemRecord {
  const item = repo.items[number - 1];
  if (!item || !present(item)) throw new Error(`no issue #${number} in ${repo.name}`);
  return item;
}

/** The comment `id` of `repo`, while it and its issue are there. */
function commentOf(repo: RepoRecord, id: number): CommentRecord {
  const c = repo.comments.find((x) => x.id === id && present(x.item));
  if (!c) throw new Error(`no comment ${id}`);
  return c;
}

function touchItem(repo: RepoRecord, item: ItemRecord, at: number): ItemRecord {
  item.updatedAt = Math.max(item.updatedAt, second(at));
  repo.version++;
  return item;
}

function commentOn(data: OrgData, repo: RepoRecord, item: ItemRecord, at: number, n = 0): CommentRecord {
  const position = commentPosition(repo);
  const rng = new Rng(data.seed, `comment:${repo.index}:${position}:${n}`);
  const when = Math.max(item.updatedAt, second(at));
  const comment: CommentRecord = {
    id: nextId(repo, 'comment', position),
    item,
    author: rng.pick(data.users),
    body: rng.pick(COMMENT_BODIES),
    createdAt: when,
    updatedAt: when,
  };
  item.comments.push(comment);
  repo.comments.push(comment);
  touchItem(repo, item, when);
  return comment;
}

function editComment(repo: RepoRecord, comment: CommentRecord, at: number): CommentRecord {
  comment.updatedAt = Math.max(comment.updatedAt, second(at));
  repo.version++;
  return comment;
}

/**
 * Deletes `comment`: it leaves its issue's and its repository's comments for `deletedComments`. The
 * issue's `updated_at` stays (no GitHub document says a deletion moves it: docs/emulators.md).
 */
function deleteComment(repo: RepoRecord, comment: CommentRecord, at: number): CommentRecord {
  comment.deletedAt = second(at);
  const item = comment.item;
  item.comments.splice(item.comments.indexOf(comment), 1);
  repo.comments.splice(repo.comments.indexOf(comment), 1);
  repo.deletedComments.push(comment);
  repo.version++;
  return comment;
}

function closeIssue(data: OrgData, repo: RepoRecord, item: ItemRecord, at: number): ItemRecord {
  if (item.closedAt !== null) return touchItem(repo, item, at);
  const when = Math.max(item.updatedAt, second(at));
  closeItem(repo, item, when, new Rng(data.seed, `close:${repo.index}:${item.number}`), { closed: [] });
  item.updatedAt = when;
  repo.version++;
  return item;
}

function deleteIssue(repo: RepoRecord, item: ItemRecord, at: number): ItemRecord {
  if (item.pull) throw new Error(`#${item.number} is a pull request: it cannot be deleted`);
  item.deletedAt = second(at);
  repo.version++;
  return item;
}

/** The edits every other part makes (tests' and the churn's), each announced once it is made. */
export interface EditHelpers {
  touch(repo: RepoRecord, item: ItemRecord, at: number): ItemRecord;
  comment(repo: RepoRecord, item: ItemRecord, at: number, n?: number): CommentRecord;
  editComment(repo: RepoRecord, comment: CommentRecord, at: number): CommentRecord;
  removeComment(repo: RepoRecord, comment: CommentRecord, at: number): CommentRecord;
  close(repo: RepoRecord, item: ItemRecord, at: number): ItemRecord;
  remove(repo: RepoRecord, item: ItemRecord, at: number): ItemRecord;
  unassign(repo: RepoRecord, user: UserRecord): UserRecord;
  deleteAccount(user: UserRecord, at: number): UserRecord;
}

/** An edit of an issue or a pull request, as its webhook names it. */
export function itemChange(item: ItemRecord, action: 'opened' | 'edited' | 'closed'): GithubChange {
  return item.pull ? { event: 'pull_request', action, item } : { event: 'issues', action, item };
}

/** The edits of `data`, each followed by `announce` of what it changed. */
export function editHelpers(data: OrgData, announce: Announce<GithubChange> = () => undefined): EditHelpers {
  return {
    touch: (repo, item, at) => {
      touchItem(repo, item, at);
      announce(itemChange(item, 'edited'));
      return item;
    },
    comment: (repo, item, at, n) => {
      const comment = commentOn(data, repo, item, at, n);
      announce({ event: 'issue_comment', action: 'created', comment });
      return comment;
    },
    editComment: (repo, comment, at) => {
      editComment(repo, comment, at);
      announce({ event: 'issue_comment', action: 'edited', comment });
      return comment;
    },
    removeComment: (repo, comment, at) => {
      deleteComment(repo, comment, at);
      announce({ event: 'issue_comment', action: 'deleted', comment });
      return comment;
    },
    close: (repo, item, at) => {
      const open = item.closedAt === null;
      closeIssue(data, repo, item, at);
      announce(itemChange(item, open ? 'closed' : 'edited'));
      return item;
    },
    remove: (repo, item, at) => {
      deleteIssue(repo, item, at);
      announce({ event: 'issues', action: 'deleted', item });
      return item;
    },
    // No webhook the emulator sends names these (GitHub's `member` and `organization` events).
    unassign: (repo, user) => unassign(repo, user),
    deleteAccount: (user, at) => deleteAccount(data, user, at),
  };
}

/** The edits at the clock's now (`now()`), on `data`'s first repository unless one is given. */
export function editsOf(data: OrgData, now: () => number, helpers: EditHelpers = editHelpers(data)): Edits {
  const pick = (repo?: RepoRecord) => repo ?? data.repos[0]!;
  return {
    touch: (n, repo) => helpers.touch(pick(repo), itemOf(pick(repo), n), now()),
    comment: (n, repo) => helpers.comment(pick(repo), itemOf(pick(repo), n), now()),
    editComment: (id, repo) => helpers.editComment(pick(repo), commentOf(pick(repo), id), now()),
    removeComment: (id, repo) => helpers.removeComment(pick(repo), commentOf(pick(repo), id), now()),
    close: (n, repo) => helpers.close(pick(repo), itemOf(pick(repo), n), now()),
    remove: (n, repo) => helpers.remove(pick(repo), itemOf(pick(repo), n), now()),
    unassign: (id, repo) => helpers.unassign(pick(repo), liveUser(data, id)),
    deleteAccount: (id) => helpers.deleteAccount(liveUser(data, id), now()),
  };
}
