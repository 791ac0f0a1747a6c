/**
 * Data changing between runs: `mutate(at)` comments on, closes and edits some existing issues and
 * pull requests and opens new ones, all at `at` — deterministic from the seed and the round. Each
 * change is announced (the webhook it sends: webhooks.ts).
 */
import type { Announce } from '../core/webhooks.js';
import type { GithubChange } from './webhooks.js';
import type { EmulatorScale } from './options.js';
import { ID_BASE, present, REPO_ID_SPAN, type ItemRecord, type OrgData, type RepoRecord } from './model.js';
import { buildItem, touch } from './items.js';
import { Rng } from '../core/random.js';
import { COMMENT_BODIES } from './words.js';

export interface MutationSummary {
  round: number;
  at: string;
  /** `repo#number` of every issue or pull whose updated_at moved to `at` (new ones included). */
  updated: string[];
  created: string[];
  closed: string[];
  /** Ids of comments posted and comments edited at `at`. */
  newComments: number[];
  editedComments: number[];
}

export function mutateOrg(
  data: OrgData,
  scale: EmulatorScale,
  round: number,
  at: number,
  announce: Announce<GithubChange> = () => undefined,
): MutationSummary {
  const when = Math.max(Math.floor(at / 1000) * 1000, data.now);
  data.now = when;
  const summary: MutationSummary = {
    round,
    at: new Date(when).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    updated: [],
    created: [],
    closed: [],
    newComments: [],
    editedComments: [],
  };
  for (const repo of data.repos) {
    const rng = new Rng(data.seed, `mutate:${round}:${repo.index}`);
    mutateRepo(data, scale, repo, rng, when, summary, announce);
    repo.version++;
  }
  return summary;
}

function mutateRepo(
  data: OrgData,
  scale: EmulatorScale,
  repo: RepoRecord,
  rng: Rng,
  at: number,
  out: MutationSummary,
  announce: Announce<GithubChange>,
): void {
  const ref = (item: ItemRecord): string => `${repo.name}#${item.number}`;
  const live = repo.items.filter(present);
  const touched = rng.sample(live, Math.max(1, Math.ceil(live.length * 0.02)));
  for (const item of touched) {
    const comment = {
      id: nextId(repo, 'comment', commentPosition(repo)),
      item,
      author: rng.pick(data.users),
      body: rng.pick(COMMENT_BODIES),
      createdAt: at,
      updatedAt: at,
    };
    item.comments.push(comment);
    repo.comments.push(comment);
    out.newComments.push(comment.id);
    announce({ event: 'issue_comment', action: 'created', comment });
    if (item.closedAt === null && !item.pull && rng.chance(0.3)) {
      closeItem(repo, item, at, rng, out);
      announce({ event: 'issues', action: 'closed', item });
    }
    item.updatedAt = at;
    out.updated.push(ref(item));
  }
  for (const c of rng.sample(repo.comments.slice(0, -touched.length || undefined), Math.ceil(touched.length / 2))) {
    c.updatedAt = at;
    out.editedComments.push(c.id);
    announce({ event: 'issue_comment', action: 'edited', comment: c });
  }
  const fresh = Math.max(1, Math.ceil(repo.items.length * 0.01));
  for (let i = 0; i < fresh; i++) {
    const item = buildItem(repo, data, scale, rng, {
      number: repo.items.length + 1,
      createdAt: at,
      pull: rng.chance(0.25),
      end: at,
    });
    item.id = nextId(repo, 'item', repo.items.length);
    for (const e of item.events) e.id = nextId(repo, 'event', repo.events.push(e) - 1);
    for (const c of item.comments) {
      c.id = nextId(repo, 'comment', commentPosition(repo));
      repo.comments.push(c);
      out.newComments.push(c.id);
    }
    for (const r of item.pull?.reviews ?? []) r.id = nextReviewId(repo);
    if (item.pull) repo.heads.set(item.pull.headSha, item);
    repo.items.push(item);
    out.created.push(ref(item));
    out.updated.push(ref(item));
    announceNew(item, announce);
  }
}

/** A new issue or pull request: opened, then its comments and reviews. */
function announceNew(item: ItemRecord, announce: Announce<GithubChange>): void {
  announce(item.pull ? { event: 'pull_request', action: 'opened', item } : { event: 'issues', action: 'opened', item });
  for (const comment of item.comments) announce({ event: 'issue_comment', action: 'created', comment });
  for (const review of item.pull?.reviews ?? [])
    announce({ event: 'pull_request_review', action: 'submitted', review });
}

/** Closes an open issue at `at` (a `closed` event), noting it in `out`. */
export function closeItem(
  repo: RepoRecord,
  item: ItemRecord,
  at: number,
  rng: Rng,
  out: Pick<MutationSummary, 'closed'>,
): void {
  item.closedAt = at;
  item.closedBy = rng.pick(repo.collaborators);
  const event = {
    id: nextId(repo, 'event', repo.events.length),
    item,
    actor: item.closedBy,
    event: 'closed' as const,
    createdAt: at,
    commitId: null,
  };
  item.events.push(event);
  repo.events.push(event);
  touch(item);
  out.closed.push(`${repo.name}#${item.number}`);
}

/** The id of the `position`th record of `kind` in the repository. */
export function nextId(repo: RepoRecord, kind: 'item' | 'comment' | 'event', position: number): number {
  return ID_BASE[kind] + repo.index * REPO_ID_SPAN + position;
}

/** The position of the repository's next comment: past every comment it had, deleted ones included. */
export function commentPosition(repo: RepoRecord): number {
  return repo.comments.length + repo.deletedComments.length;
}

function nextReviewId(repo: RepoRecord): number {
  let max = ID_BASE.review + repo.index * REPO_ID_SPAN - 1;
  for (const item of repo.items) for (const r of item.pull?.reviews ?? []) max = Math.max(max, r.id);
  return max + 1;
}
