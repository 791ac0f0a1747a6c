/**
 * Builds the seeded organisation: users, repositories with labels and milestones, and per
 * repository its issues and pull requests (numbers in creation order), their comments, events,
 * reviews and the default branch's commits. Same seed, scale and `now` → the same records.
 */
import { type EmulatorScale } from './options.js';
import type {
  CommentRecord,
  CommitRecord,
  EventRecord,
  ItemRecord,
  LabelRecord,
  MilestoneRecord,
  OrgData,
  RepoRecord,
  UserRecord,
} from './model.js';
import { DAY_MS, ID_BASE, REPO_ID_SPAN } from './model.js';
import { nthName } from '../core/names.js';
import { fakeSha, Rng } from '../core/random.js';
import { buildItem } from './items.js';
import {
  CUSTOM_LABELS,
  DEFAULT_LABELS,
  FILE_PATHS,
  FIRST_NAMES,
  IN_PROGRESS_LABEL,
  LANGUAGES,
  REPO_NAMES,
} from './words.js';

/**
 * `empty`: the indexes of the repositories without any commit (see `emptyRepositories`); the org's
 * pull requests are shared over the others.
 */
export function generateOrg(
  seed: number,
  orgLogin: string,
  scale: EmulatorScale,
  now: number,
  empty: ReadonlySet<number> = new Set(),
): OrgData {
  const end = Math.floor(now / 1000) * 1000;
  const start = end - scale.days * DAY_MS;
  const org: UserRecord = { index: 0, id: 9_000_000, login: orgLogin, type: 'Organization', association: 'NONE' };
  const users = makeUsers(scale.members);
  const members = users.filter((u) => u.association === 'MEMBER' || u.association === 'OWNER');
  const data: OrgData = { seed, org, members, users, deletedUsers: [], repos: [], now: end, start };
  const withGit = Array.from({ length: scale.repos }, (_, r) => r).filter((r) => !empty.has(r));
  for (let r = 0; r < scale.repos; r++) {
    const pulls = empty.has(r) ? 0 : share(scale.pulls, withGit.length, withGit.indexOf(r));
    data.repos.push(makeRepo(data, scale, r, { pulls, empty: empty.has(r) }));
  }
  return data;
}

/** The default empty repositories: every fourth one (indexes 3, 7, …). */
export function defaultEmptyRepos(repos: number): number[] {
  return Array.from({ length: repos }, (_, r) => r).filter((r) => r % 4 === 3);
}

function makeUsers(memberCount: number): UserRecord[] {
  const users: UserRecord[] = [];
  const total = memberCount * 2 + 1;
  for (let i = 0; i < total; i++) {
    const name = `${FIRST_NAMES[i % FIRST_NAMES.length]!}-${Math.floor(i / FIRST_NAMES.length) + 1}`;
    const association =
      i === 0
        ? 'OWNER'
        : i < memberCount
          ? 'MEMBER'
          : i === memberCount
            ? 'COLLABORATOR'
            : i % 2
              ? 'CONTRIBUTOR'
              : 'NONE';
    users.push({ index: i, id: 1_000 + i, login: name, type: 'User', association });
  }
  return users;
}

function share(total: number, parts: number, index: number): number {
  return Math.floor(total / parts) + (index < total % parts ? 1 : 0);
}

function makeRepo(data: OrgData, scale: EmulatorScale, r: number, git: { pulls: number; empty: boolean }): RepoRecord {
  const rng = new Rng(data.seed, `repo:${r}`);
  const name = nthName(REPO_NAMES, r, (round) => `-${round + 1}`);
  const collaborators = data.users.filter((u) => u.association !== 'CONTRIBUTOR' && u.association !== 'NONE');
  const repo: RepoRecord = {
    index: r,
    id: 5_000_000 + r,
    name,
    private: r % 3 === 1,
    description: rng.chance(0.8) ? `The ${name} service` : null,
    language: rng.pick(LANGUAGES),
    createdAt: data.start - rng.int(30, 900) * DAY_MS,
    labels: makeLabels(r),
    milestones: [],
    collaborators,
    items: [],
    comments: [],
    deletedComments: [],
    events: [],
    commits: [],
    heads: new Map(),
    version: 0,
  };
  if (git.empty) repo.empty = true;
  repo.milestones = makeMilestones(repo, data, collaborators);
  fillItems(repo, data, scale, rng, git.pulls);
  if (!git.empty) fillCommits(repo, data, scale, rng);
  return repo;
}

function makeLabels(r: number): LabelRecord[] {
  const all: LabelRecord[] = DEFAULT_LABELS.map(([name, color, description], i) => ({
    id: 7_000_000 + r * 100 + i,
    name,
    color,
    description,
    default: true,
  }));
  CUSTOM_LABELS.forEach(([name, color], i) =>
    all.push({ id: 7_000_000 + r * 100 + 50 + i, name, color, description: null, default: false }),
  );
  const [name, color] = IN_PROGRESS_LABEL;
  all.push({ id: 7_000_000 + r * 100 + 90, name, color, description: 'Work on this has started', default: false });
  return all;
}

function makeMilestones(repo: RepoRecord, data: OrgData, collaborators: UserRecord[]): MilestoneRecord[] {
  return ['v1.0', 'v1.1', 'v2.0'].map((title, i) => ({
    id: 8_000_000 + repo.index * 10 + i,
    number: i + 1,
    title,
    description: i === 0 ? 'First stable release' : null,
    creator: collaborators[i % collaborators.length]!,
    createdAt: data.start - (3 - i) * DAY_MS,
    dueOn: i === 2 ? null : data.now + (i + 1) * 30 * DAY_MS,
  }));
}

/** Issues and pulls: creation times sorted (numbers follow creation), then ids by activity time. */
function fillItems(repo: RepoRecord, data: OrgData, scale: EmulatorScale, rng: Rng, pulls: number): void {
  const issues = share(scale.issues, scale.repos, repo.index);
  const n = issues + pulls;
  const span = data.now - data.start;
  const created: number[] = [];
  for (let i = 0; i < n; i++) created.push(data.start + Math.floor((rng.next() * span) / 1000) * 1000);
  created.sort((a, b) => a - b);
  const isPull = rng.sample(
    Array.from({ length: n }, (_, i) => i),
    pulls,
  );
  const pullSet = new Set(isPull);
  for (let i = 0; i < n; i++) {
    const item = buildItem(repo, data, scale, rng, {
      number: i + 1,
      createdAt: created[i]!,
      pull: pullSet.has(i),
      end: data.now,
    });
    repo.items.push(item);
  }
  assignActivityIds(repo);
}

/** Comment, event and review ids ascend with their time within the repository. */
export function assignActivityIds(repo: RepoRecord): void {
  const base = repo.index * REPO_ID_SPAN;
  repo.items.forEach((item, i) => (item.id = ID_BASE.item + base + i));
  const comments: CommentRecord[] = repo.items.flatMap((i) => i.comments);
  comments.sort((a, b) => a.createdAt - b.createdAt || a.item.number - b.item.number);
  comments.forEach((c, i) => (c.id = ID_BASE.comment + base + i));
  repo.comments = comments;
  const events: EventRecord[] = repo.items.flatMap((i) => i.events);
  events.sort((a, b) => a.createdAt - b.createdAt || a.item.number - b.item.number);
  events.forEach((e, i) => (e.id = ID_BASE.event + base + i));
  repo.events = events;
  const reviews = repo.items.flatMap((i) => i.pull?.reviews ?? []);
  reviews.sort((a, b) => a.submittedAt - b.submittedAt || a.item.number - b.item.number);
  reviews.forEach((r, i) => (r.id = ID_BASE.review + base + i));
  for (const item of repo.items) {
    item.comments.sort((a, b) => a.id - b.id);
    item.events.sort((a, b) => a.id - b.id);
    item.pull?.reviews.sort((a, b) => a.id - b.id);
  }
}

/** The default branch: one commit per merged pull (its merge commit) and the direct pushes. */
function fillCommits(repo: RepoRecord, data: OrgData, scale: EmulatorScale, rng: Rng): void {
  const drafts: { date: number; item?: ItemRecord }[] = [];
  for (const item of repo.items) {
    if (item.pull?.mergedAt) drafts.push({ date: item.pull.mergedAt, item });
    if (item.pull) repo.heads.set(item.pull.headSha, item);
  }
  const span = data.now - data.start;
  for (let i = 0; i < scale.directCommits; i++) {
    drafts.push({ date: data.start + Math.floor((rng.next() * span) / 1000) * 1000 });
  }
  drafts.sort((a, b) => a.date - b.date || (a.item?.number ?? 0) - (b.item?.number ?? 0));
  let parent: string | null = null;
  drafts.forEach((d, i) => {
    const sha = d.item?.pull?.mergeSha ?? fakeSha(data.seed, `${repo.index}:commit:${i}`);
    const commit: CommitRecord = {
      sha,
      author: d.item ? d.item.author : rng.pick(repo.collaborators),
      date: d.date,
      message: d.item ? `Merge pull request #${d.item.number}\n\n${d.item.title}` : `Update ${rng.pick(FILE_PATHS)}`,
      parent,
      additions: d.item?.pull?.additions ?? rng.int(1, 80),
      deletions: d.item?.pull?.deletions ?? rng.int(0, 40),
      files: rng.sample(
        FILE_PATHS,
        d.item?.pull ? Math.min(d.item.pull.changedFiles, FILE_PATHS.length) : rng.int(1, 3),
      ),
    };
    repo.commits.push(commit);
    parent = sha;
  });
}
