/** One issue or pull request with its comments, events and reviews, drawn from a seeded generator. */
import type { EmulatorScale } from './options.js';
import type { EventRecord, ItemRecord, OrgData, PullDetails, RepoRecord, ReviewState, UserRecord } from './model.js';
import { phrase } from '../core/names.js';
import { fakeSha, Rng } from '../core/random.js';
import { COMMENT_BODIES, IN_PROGRESS_LABEL, OBJECTS, VERBS } from './words.js';

export interface ItemDraft {
  number: number;
  createdAt: number;
  pull: boolean;
  /** Activity (comments, events, closing) happens no later than this. */
  end: number;
}

const REVIEW_STATES: ReviewState[] = ['APPROVED', 'CHANGES_REQUESTED', 'COMMENTED'];

/** A time in [from, to], whole seconds. */
export function between(rng: Rng, from: number, to: number): number {
  return from + Math.floor((rng.next() * Math.max(0, to - from)) / 1000) * 1000;
}

export function buildItem(
  repo: RepoRecord,
  data: OrgData,
  scale: EmulatorScale,
  rng: Rng,
  draft: ItemDraft,
): ItemRecord {
  const item: ItemRecord = {
    repo,
    id: 0,
    number: draft.number,
    title: phrase(rng, VERBS, OBJECTS),
    body: rng.chance(0.85) ? `Details for #${draft.number}.` : null,
    author: draft.pull ? rng.pick(repo.collaborators) : rng.pick(data.users),
    createdAt: draft.createdAt,
    updatedAt: draft.createdAt,
    closedAt: null,
    closedBy: null,
    labels: rng.sample(topicLabels(repo), rng.int(0, 2)),
    assignees: rng.sample(repo.collaborators, rng.int(0, 2)),
    milestone: rng.chance(0.3) ? rng.pick(repo.milestones) : null,
    comments: [],
    events: [],
    pull: draft.pull ? pullDetails(data, repo, rng, draft.number) : null,
  };
  decideClosing(item, rng, draft.end, data.seed);
  const activityEnd = item.closedAt ?? draft.end;
  addComments(item, data, scale, rng, activityEnd);
  addEvents(item, rng, activityEnd);
  if (!item.pull) addProgress(item, new Rng(data.seed, `progress:${repo.index}:${item.number}`), activityEnd);
  if (item.pull) addReviews(item, item.pull, scale, rng, activityEnd);
  touch(item);
  return item;
}

function pullDetails(data: OrgData, repo: RepoRecord, rng: Rng, number: number): PullDetails {
  return {
    headRef: `feature/${number}-${rng.pick(['fix', 'docs', 'perf', 'api', 'ui'])}`,
    headSha: fakeSha(data.seed, `${repo.index}:head:${number}`),
    mergeSha: null,
    mergedAt: null,
    mergedBy: null,
    draft: rng.chance(0.1),
    additions: rng.int(1, 500),
    deletions: rng.int(0, 200),
    changedFiles: rng.int(1, 10),
    commits: rng.int(1, 6),
    reviews: [],
    requestedReviewers: rng.sample(repo.collaborators, rng.int(0, 1)),
  };
}

/** Issues close with probability 0.65, pulls 0.75 (0.8 of those merged); never after `end`. */
function decideClosing(item: ItemRecord, rng: Rng, end: number, seed: number): void {
  if (!rng.chance(item.pull ? 0.75 : 0.65)) return;
  const span = end - item.createdAt;
  const closedAt = item.createdAt + Math.max(60_000, Math.floor((rng.next() ** 2 * span) / 1000) * 1000);
  if (closedAt > end) return;
  item.closedAt = closedAt;
  item.closedBy = rng.pick(item.repo.collaborators);
  const pull = item.pull;
  if (pull && rng.chance(0.8)) {
    pull.mergedAt = closedAt;
    pull.mergedBy = item.closedBy;
    pull.mergeSha = fakeSha(seed, `${item.repo.index}:merge:${item.number}`);
    pull.draft = false;
  }
  if (pull && !pull.mergedAt) pull.draft = false;
}

function addComments(item: ItemRecord, data: OrgData, scale: EmulatorScale, rng: Rng, end: number): void {
  const count = rng.int(0, scale.maxComments);
  for (let i = 0; i < count; i++) {
    const createdAt = between(rng, item.createdAt, end);
    const edited = rng.chance(0.1);
    item.comments.push({
      id: 0,
      item,
      author: rng.pick(data.users),
      body: rng.pick(COMMENT_BODIES),
      createdAt,
      updatedAt: edited ? between(rng, createdAt, end) : createdAt,
    });
  }
}

function addEvents(item: ItemRecord, rng: Rng, end: number): void {
  const soon = (): number => Math.min(end, item.createdAt + rng.int(0, 3600) * 1000);
  const actor = (): UserRecord => rng.pick(item.repo.collaborators);
  const event = (e: Omit<EventRecord, 'id' | 'item' | 'commitId'> & { commitId?: string | null }): void => {
    item.events.push({ id: 0, item, commitId: null, ...e });
  };
  for (const label of item.labels) event({ event: 'labeled', actor: actor(), createdAt: soon(), label });
  for (const subject of item.assignees) event({ event: 'assigned', actor: actor(), createdAt: soon(), subject });
  if (item.milestone) event({ event: 'milestoned', actor: actor(), createdAt: soon(), milestone: item.milestone });
  for (const subject of item.pull?.requestedReviewers ?? []) {
    event({ event: 'review_requested', actor: item.author, createdAt: soon(), subject });
  }
  if (item.closedAt === null || !item.closedBy) return;
  const mergeSha = item.pull?.mergeSha ?? null;
  if (mergeSha) event({ event: 'merged', actor: item.closedBy, createdAt: item.closedAt, commitId: mergeSha });
  event({ event: 'closed', actor: item.closedBy, createdAt: item.closedAt, commitId: mergeSha });
}

/** The labels an item is created with: every one but the in-progress workflow label. */
function topicLabels(repo: RepoRecord): RepoRecord['labels'] {
  return repo.labels.filter((l) => l.name !== IN_PROGRESS_LABEL[0]);
}

/**
 * Work starting on an issue: about half the issues are labelled "in progress" at some time before
 * they close (or `end`); a third of those lose the label again, and half of these get it back
 * later. An issue that still carries the label keeps it (closed ones too, as on GitHub). Drawn from
 * the issue's own stream, so the rest of the seeded data does not depend on it.
 */
function addProgress(item: ItemRecord, rng: Rng, end: number): void {
  const label = item.repo.labels.find((l) => l.name === IN_PROGRESS_LABEL[0]);
  if (!label || !rng.chance(0.5)) return;
  const actor = (): UserRecord => rng.pick(item.repo.collaborators);
  const started = between(rng, item.createdAt, end);
  item.events.push({ id: 0, item, actor: actor(), event: 'labeled', createdAt: started, label, commitId: null });
  let labelled = true;
  if (rng.chance(1 / 3)) {
    const removed = between(rng, started, end);
    item.events.push({ id: 0, item, actor: actor(), event: 'unlabeled', createdAt: removed, label, commitId: null });
    labelled = rng.chance(0.5);
    if (labelled) {
      const again = between(rng, removed, end);
      item.events.push({ id: 0, item, actor: actor(), event: 'labeled', createdAt: again, label, commitId: null });
    }
  }
  if (labelled) item.labels.push(label);
}

function addReviews(item: ItemRecord, pull: PullDetails, scale: EmulatorScale, rng: Rng, end: number): void {
  const count = rng.int(0, scale.maxReviews);
  for (let i = 0; i < count; i++) {
    const author = rng.pick(item.repo.collaborators);
    pull.reviews.push({
      id: 0,
      item,
      author,
      state: rng.pick(REVIEW_STATES),
      body: rng.chance(0.5) ? rng.pick(COMMENT_BODIES) : '',
      submittedAt: between(rng, item.createdAt, end),
    });
  }
}

/** updated_at: the latest of creation, comments posted, events, reviews and closing. */
export function touch(item: ItemRecord): void {
  let t = item.createdAt;
  for (const c of item.comments) t = Math.max(t, c.createdAt);
  for (const e of item.events) t = Math.max(t, e.createdAt);
  for (const r of item.pull?.reviews ?? []) t = Math.max(t, r.submittedAt);
  if (item.closedAt !== null) t = Math.max(t, item.closedAt);
  item.updatedAt = Math.max(item.updatedAt, t);
}
