/**
 * The Linear target of `syncrelay chaos --provider linear`: the Linear emulator on 127.0.0.1 with a
 * small workspace (a few teams of ~150 issues each, their comments and history, cycles, projects,
 * members) whose data lies within the provider's first incremental depth, so one incremental run
 * with no watermark reads all of it.
 *
 * Hostile, it answers some requests with Linear's own faults (RATELIMITED limits as HTTP 429 and
 * 400 that lift within 2 s, 5xx, answers up to 400 ms slow, partial data) and changes issues while
 * they are read: edits (each moves its issue to the front of `orderBy: updatedAt`) and, among them,
 * archivals and deletions, made between two pages of issues. Quiet, it answers everything as asked.
 *
 * The ground truth is computed from the emulator's own records exactly as the Linear reader maps
 * them (src/providers/linear/mapping.ts): archived issues stay (the reader lists them with
 * `includeArchived`), deleted ones and their comments and history are gone. A comment deleted on
 * an issue still there (the emulator's `deleteComment`) is the comments table's `deleted`, which a
 * verify marks; the churn deletes comments as it deletes issues.
 */
import { Rng } from '../../emulators/core/random.js';
import {
  linearIntegrationFor,
  startLinearEmulator,
  type LinearEmulator,
  type LinearFaultSpec,
  type LinearRateLimit,
  type LinearRequestLogEntry,
  type LinearScale,
  type Workspace,
} from '../../emulators/linear/index.js';
import { ValidationError } from '../../errors.js';
import type { ChaosTarget, GroundTruth, TargetOptions, TruthTable, TruthTableName } from './target.js';

/** The workspace: 3 teams of 150 issues over 20 days (the provider's first incremental reads 30). */
export const LINEAR_CHAOS_SCALE: LinearScale = {
  teams: 3,
  issues: 450,
  users: 12,
  projects: 6,
  cycles: 4,
  maxComments: 4,
  maxLabels: 3,
  days: 20,
};

/**
 * Budgets no run spends (the faults supply the limit answers), over windows of 2 s: a bucket a
 * fault drains is full again, and the limit lifted, within 2 s.
 */
export const LINEAR_CHAOS_RATE_LIMIT: LinearRateLimit = {
  requests: { limit: 20_000, windowSeconds: 2 },
  complexity: { limit: 50_000_000, windowSeconds: 2 },
  status: 400,
};

/** Linear's faults while hostile, each at a low probability: the provider's retries absorb most. */
export const LINEAR_HOSTILE_FAULTS: readonly LinearFaultSpec[] = [
  { kind: 'too-many-requests', probability: 0.02 },
  { kind: 'ratelimited', probability: 0.02, status: 400 },
  { kind: 'server-error', probability: 0.02, status: 502 },
  { kind: 'server-error', probability: 0.01, status: 503 },
  { kind: 'partial', operation: 'Issue', probability: 0.03 },
  { kind: 'slow', probability: 0.05, delayMs: 400 },
];

/** The share of the changes asked for that archive or delete an issue, or delete a comment (the rest edit one). */
export const LINEAR_REMOVAL_SHARE = 0.1;

/** Most issues removed (archived or deleted) in all, as a share of the workspace: it never runs dry. */
export const LINEAR_MAX_REMOVED_SHARE = 0.2;

/** Most removals made between two pages (time owed while nothing was read is not paid at once). */
const MAX_REMOVALS_PER_PAGE = 2;

/** Archivals and deletions (of issues, and of comments) due by the clock, made between two pages of issues. */
class Removals {
  readonly archived: string[] = [];
  readonly deleted: string[] = [];
  readonly deletedComments: string[] = [];
  private readonly rng: Rng;
  private from: number | null = null;
  private done = 0;
  private rate = 0;

  constructor(
    private readonly emu: LinearEmulator,
    seed: number,
  ) {
    this.rng = new Rng(seed, 'chaos-removals');
  }

  /** Starts counting afresh at `perSecond` (0: none), from the next page. */
  set(perSecond: number): void {
    this.rate = perSecond;
    this.from = null;
    this.done = 0;
  }

  /** Makes the removals owed by now, on issues other than those of the page just answered. */
  due(page: readonly string[]): void {
    if (this.rate <= 0) return;
    const now = Date.now();
    this.from ??= now;
    const owed = Math.floor(((now - this.from) / 1000) * this.rate) - this.done;
    if (owed <= 0) return;
    this.done += owed;
    const room = Math.floor(LINEAR_MAX_REMOVED_SHARE * LINEAR_CHAOS_SCALE.issues) - this.removed;
    const skip = new Set(page);
    for (let k = 0; k < Math.min(owed, MAX_REMOVALS_PER_PAGE, room); k++) this.removeOne(skip);
  }

  private get removed(): number {
    return this.archived.length + this.deleted.length;
  }

  /** Archives an issue, deletes one, deletes a comment of one (in turn), drawn from the seed. */
  private removeOne(skip: ReadonlySet<string>): void {
    const turn = this.removed + this.deletedComments.length;
    if (turn % 3 === 2) return this.removeComment(skip);
    const archive = this.removed % 2 === 0;
    const candidates = this.emu.data.issues.filter((i) => !skip.has(i.id) && !(archive && i.archivedAt));
    if (candidates.length === 0) return;
    const issue = this.rng.pick(candidates);
    if (archive) {
      this.emu.archiveIssue(issue.id);
      this.archived.push(issue.id);
    } else {
      this.emu.deleteIssue(issue.id);
      this.deleted.push(issue.id);
    }
  }

  /** Deletes one comment of an issue not on the page just answered (the issue stays). */
  private removeComment(skip: ReadonlySet<string>): void {
    const candidates = this.emu.data.issues.filter((i) => !skip.has(i.id) && i.comments.length > 0);
    if (candidates.length === 0) return;
    const comment = this.rng.pick(this.rng.pick(candidates).comments);
    this.emu.deleteComment(comment.id);
    this.deletedComments.push(comment.id);
  }
}

/** Running counts of the request log, tallied as it grows (entries it drops later stay counted). */
class LogTally {
  requests = 0;
  faults = 0;
  slow = 0;
  limited = 0;
  private last: LinearRequestLogEntry | null = null;

  constructor(private readonly emu: LinearEmulator) {}

  /** Counts the entries appended since the last one counted (all of them once that one is dropped). */
  update(): void {
    const log = this.emu.requestLog;
    let i = log.length - 1;
    while (i >= 0 && log[i] !== this.last) i--;
    for (let k = i + 1; k < log.length; k++) this.count(log[k]!);
    this.last = log[log.length - 1] ?? this.last;
  }

  private count(e: LinearRequestLogEntry): void {
    this.requests = Math.max(this.requests, e.seq);
    if (e.fault === 'slow') this.slow++;
    else if (e.fault !== null) this.faults++;
    if (e.status === 429 || e.errorCode === 'RATELIMITED') this.limited++;
  }
}

/**
 * Starts the Linear emulator (127.0.0.1, a free port, the real clock, `o.seed`) as a chaos target,
 * quiet until `hostile(true)`.
 */
export async function startLinearTarget(o: TargetOptions): Promise<ChaosTarget> {
  if (!Number.isFinite(o.editsPerSecond) || o.editsPerSecond < 0) {
    throw new ValidationError('editsPerSecond', `expected a number of at least 0, got ${o.editsPerSecond}`);
  }
  const emu = await startLinearEmulator({
    host: '127.0.0.1',
    port: 0,
    seed: o.seed,
    scale: LINEAR_CHAOS_SCALE,
    rateLimit: LINEAR_CHAOS_RATE_LIMIT,
    logLimit: 20_000,
  });
  const removals = new Removals(emu, o.seed);
  const log = new LogTally(emu);
  return {
    provider: 'linear',
    url: emu.url,
    integration: linearIntegrationFor(emu),
    hostile(on) {
      log.update();
      if (!on) {
        emu.setFaults([]);
        emu.setChurn({});
        removals.set(0);
        return;
      }
      emu.setFaults([...LINEAR_HOSTILE_FAULTS]);
      removals.set(o.editsPerSecond * LINEAR_REMOVAL_SHARE);
      emu.setChurn({
        editsPerSecond: o.editsPerSecond * (1 - LINEAR_REMOVAL_SHARE),
        afterIssuesPage: (page) => {
          log.update();
          removals.due(page.ids);
        },
      });
    },
    settled: () => Promise.resolve(),
    truth: () => linearTruth(emu.data, removals.deleted),
    stats() {
      log.update();
      const { requests, faults, slow, limited } = log;
      const changes = { edits: emu.churned.length, archived: removals.archived.length };
      const deletions = removals.deleted.length;
      return {
        requests,
        faults,
        slow,
        limited,
        ...changes,
        deletions,
        commentDeletions: removals.deletedComments.length,
      };
    },
    close: () => emu.close(),
  };
}

type Issue = Workspace['issues'][number];
type History = Issue['history'][number];

/**
 * What a complete read of `ws` stores, table by table (the reader's external ids; `updated_at` where
 * the mapping writes Linear's `updatedAt`); `deleted`, the ids of the issues deleted from it, are
 * the work-items table's `deleted`. The comments deleted on issues still there (`ws.deletedComments`)
 * are the comments table's `deleted`; those of a deleted issue are held to
 * neither (gone with their issue, whose row a verify marks).
 */
export function linearTruth(ws: Workspace, deleted: readonly string[] = []): GroundTruth {
  const events = eventIdsOf(ws);
  const comments = table(
    'work_item_comments',
    'updated_at',
    ws.issues.flatMap((i) => i.comments),
    (c) => c.updatedAt,
  );
  const goneComments = ws.deletedComments.filter((c) => ws.issueById.has(c.issueId)).map((c) => c.id);
  return [
    table('teams', null, ws.teams, () => null),
    table('members', null, ws.users, () => null),
    table('projects', 'updated_at', ws.projects, (p) => p.updatedAt),
    table('sprints', null, ws.cycles, () => null),
    { ...table('work_items', 'updated_at', ws.issues, (i) => i.updatedAt), deleted: new Set(deleted) },
    { ...comments, deleted: new Set(goneComments) },
    table(
      'work_item_events',
      null,
      ws.issues.flatMap((i) => i.history.flatMap(events)),
      () => null,
    ),
  ];
}

function table<T extends { id: string }>(
  name: TruthTableName,
  versionColumn: TruthTable['versionColumn'],
  items: readonly T[],
  version: (t: T) => number | null,
): TruthTable {
  return { table: name, versionColumn, rows: new Map(items.map((t) => [t.id, version(t)])) };
}

/**
 * The events one history entry yields, as mapping.ts `eventRows` keys them: the entry's id for a
 * state change, `:assignee` for an assignee change (a user on either side), one per label added or
 * removed.
 */
function eventIdsOf(ws: Workspace): (h: History) => { id: string }[] {
  const users = new Set(ws.users.map((u) => u.id));
  const states = new Set(ws.states.map((s) => s.id));
  const known = (set: ReadonlySet<string>, id: string | null | undefined) => id != null && set.has(id);
  return (h) => {
    const ids: string[] = [];
    if (known(states, h.fromStateId) || known(states, h.toStateId)) ids.push(h.id);
    if (known(users, h.fromAssigneeId) || known(users, h.toAssigneeId)) ids.push(`${h.id}:assignee`);
    for (const l of h.addedLabelIds ?? []) ids.push(`${h.id}:label+${l}`);
    for (const l of h.removedLabelIds ?? []) ids.push(`${h.id}:label-${l}`);
    return ids.map((id) => ({ id }));
  };
}
