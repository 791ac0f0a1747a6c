/**
 * The GitHub target of `syncrelay chaos --provider github`: the GitHub REST emulator with a small
 * seeded organisation on 127.0.0.1, hostile on demand (limit responses, 5xx, slow answers, issues
 * edited and deleted while lists are read, now and then a user's account deleted), and the ground
 * truth the normalized store must equal, computed from the emulator's own records exactly as the
 * GitHub provider's mapping writes them.
 */
import { ValidationError } from '../../errors.js';
import {
  DEMO_GITHUB_DATASETS,
  startGithubEmulator,
  type EmulatorScale,
  type FaultSpec,
  type GithubEmulator,
  type OrgData,
  type RepoRecord,
} from '../../emulators/github/index.js';
import type { ChaosTarget, GroundTruth, TargetOptions, TruthTable, TruthTableName } from './target.js';

/**
 * Three repositories of about 150 issues and pull requests each, a few comments, reviews and
 * commits (none in the third, an empty repository), 30 members; the history spans 21 days, inside
 * the provider's 30 days of first incremental depth, so an incremental run without a watermark
 * reads all of it.
 */
export const CHAOS_GITHUB_SCALE: Partial<EmulatorScale> = {
  repos: 3,
  issues: 330,
  pulls: 120,
  maxComments: 3,
  maxReviews: 2,
  directCommits: 10,
  members: 30,
  days: 21,
};

/** Far more requests than a chaos run makes: the limit responses come from the faults. */
const GENEROUS_LIMIT = { limit: 1_000_000, windowSeconds: 3600 };

/**
 * The provider's own faults while hostile, each rare enough that its retries (in place, or the
 * unit rescheduled once a limit lifts) carry nearly every run through. A limit response pauses
 * every unit of the credential (the shared budget): at one in a hundred requests (a first
 * setting), a 200-run soak deferred units 14,220 times and 770 of them ran out of deferrals (a
 * limit about every second); one in four hundred leaves the limits a real, rare event.
 */
export const HOSTILE_GITHUB_FAULTS: FaultSpec[] = [
  { kind: 'secondary-limit', probability: 0.001, retryAfter: 1 },
  { kind: 'too-many-requests', probability: 0.001, retryAfter: 1 },
  { kind: 'primary-limit', probability: 0.0005, resetSeconds: 2 },
  { kind: 'server-error', probability: 0.01, status: 502 },
  { kind: 'server-error', probability: 0.01, status: 503 },
  { kind: 'slow', probability: 0.03, delayMs: 150 },
  { kind: 'slow', probability: 0.01, delayMs: 400 },
];

/**
 * While hostile, one more edit before every request of a sorted list (issues, comments, pull
 * requests): a busy repository, where what a reader pages through changes between its pages — the
 * case a reader that pages by number loses items in.
 */
const LIST_EDITS = 1;

/** Starts the emulator (seeded with `o.seed`, its own random token) and returns the target. */
export async function startGithubTarget(o: TargetOptions): Promise<ChaosTarget> {
  if (!Number.isFinite(o.editsPerSecond) || o.editsPerSecond < 0) {
    throw new ValidationError('editsPerSecond', `expected a number of at least 0, got ${o.editsPerSecond}`);
  }
  const emu = await startGithubEmulator({
    host: '127.0.0.1',
    port: 0,
    seed: o.seed,
    scale: CHAOS_GITHUB_SCALE,
    rateLimit: GENEROUS_LIMIT,
    // The third repository is empty: its commits answer 409, which is zero commits.
    emptyRepos: [2],
  });
  const org = emu.data.org.login;
  let wasHostile = false;
  return {
    provider: 'github',
    url: emu.url,
    integration: {
      provider: 'github',
      sources: emu.data.repos.map((r) => `${org}/${r.name}`),
      datasets: [...DEMO_GITHUB_DATASETS],
      config: { baseUrl: emu.url },
      credential: emu.token,
    },
    hostile: (on) => {
      if (wasHostile && !on) removeSome(emu);
      wasHostile = on;
      hostile(emu, on, o.editsPerSecond);
    },
    settled: () => Promise.resolve(), // every read sees every edit at once
    truth: () => githubTruth(emu.data),
    stats: () => ({ ...emu.activity() }),
    close: () => emu.close(),
  };
}

function hostile(emu: GithubEmulator, on: boolean, editsPerSecond: number): void {
  emu.setFaults(on ? HOSTILE_GITHUB_FAULTS : []);
  emu.setChurn(on ? editsPerSecond : 0);
  emu.setListEdits(on ? LIST_EDITS : 0);
}

/**
 * As a hostile phase ends, a comment on an issue still there and a member's account are deleted
 * (the churn's own deletions are drawn, and a short run may make none): the runs so far have
 * stored them, and only a verify can find them gone. The first repository's last comment on a live
 * issue; the last collaborator who is not its owner.
 */
function removeSome(emu: GithubEmulator): void {
  const repo = emu.data.repos[0];
  if (!repo) return;
  const comment = repo.comments.filter((c) => !c.item.pull && c.item.deletedAt === undefined).at(-1);
  if (comment) emu.edit.removeComment(comment.id, repo);
  const member = repo.collaborators.filter((u) => u.association !== 'OWNER').at(-1);
  if (member) emu.edit.deleteAccount(member.id);
}

/** The truth tables a GitHub sync of DEMO_GITHUB_DATASETS writes, each keyed as the mapping keys it. */
interface Tables {
  repositories: TruthTable;
  members: TruthTable & { deleted: Set<string> };
  work_items: TruthTable & { deleted: Set<string> };
  work_item_comments: TruthTable & { deleted: Set<string> };
  work_item_events: TruthTable;
  pull_requests: TruthTable;
  pull_request_reviews: TruthTable;
  commits: TruthTable;
}

function table(name: TruthTableName, versioned: boolean): TruthTable {
  return { table: name, versionColumn: versioned ? 'updated_at' : null, rows: new Map() };
}

/** Deleted objects' keys, kept by their table (a verify run tombstones them). */
function withDeletions(t: TruthTable): TruthTable & { deleted: Set<string> } {
  return Object.assign(t, { deleted: new Set<string>() });
}

/**
 * What a correct reader stores for the organisation as it is now (src/providers/github/mapping.ts):
 * repositories by id at their `updated_at` (the last push, else creation); members by user id (the
 * repositories' assignable users; the accounts deleted are the members table's `deleted`, while a
 * user who only stopped being assignable somewhere is no deletion); issues and pull requests as
 * `owner/repo#number` at their `updated_at`; comments on issues (not on pull requests) by id at
 * their `updated_at`; events of issues (not of pull requests) by id; reviews by id; default-branch
 * commits by SHA. Deleted issues, and their comments and events, are gone from every list: not in
 * the rows; the issues' keys are the work-items table's `deleted`. A comment deleted on an issue
 * still there is the comments table's `deleted` (its issue's row holds it in the repository's
 * scope, so the verify confirms it); the comments of a deleted issue are held to neither (a comment
 * stored before its issue's row was belongs to no repository the store knows).
 */
export function githubTruth(data: OrgData): GroundTruth {
  const t: Tables = {
    repositories: table('repositories', true),
    members: withDeletions(table('members', false)),
    work_items: withDeletions(table('work_items', true)),
    work_item_comments: withDeletions(table('work_item_comments', true)),
    work_item_events: table('work_item_events', false),
    pull_requests: table('pull_requests', true),
    pull_request_reviews: table('pull_request_reviews', false),
    commits: table('commits', false),
  };
  for (const repo of data.repos) addRepository(t, `${data.org.login}/${repo.name}`, repo);
  for (const u of data.deletedUsers) t.members.deleted.add(String(u.id));
  return [
    t.repositories,
    t.members,
    t.work_items,
    t.work_item_comments,
    t.work_item_events,
    t.pull_requests,
    t.pull_request_reviews,
    t.commits,
  ];
}

function addRepository(t: Tables, full: string, repo: RepoRecord): void {
  t.repositories.rows.set(String(repo.id), repo.commits.at(-1)?.date ?? repo.createdAt);
  for (const u of repo.collaborators) t.members.rows.set(String(u.id), null);
  for (const item of repo.items) {
    const key = `${full}#${item.number}`;
    if (item.deletedAt !== undefined) {
      t.work_items.deleted.add(key);
      continue;
    }
    if (!item.pull) {
      t.work_items.rows.set(key, item.updatedAt);
      continue;
    }
    t.pull_requests.rows.set(key, item.updatedAt);
    for (const r of item.pull.reviews) t.pull_request_reviews.rows.set(String(r.id), null);
  }
  for (const c of repo.comments) {
    if (c.item.deletedAt === undefined && !c.item.pull) t.work_item_comments.rows.set(String(c.id), c.updatedAt);
  }
  for (const c of repo.deletedComments) {
    if (c.item.deletedAt === undefined && !c.item.pull) t.work_item_comments.deleted.add(String(c.id));
  }
  for (const e of repo.events) {
    if (e.item.deletedAt === undefined && !e.item.pull) t.work_item_events.rows.set(String(e.id), null);
  }
  if (!repo.empty) for (const c of repo.commits) t.commits.rows.set(c.sha, null);
}
