/**
 * The emulator's root value: plain objects whose function fields graphql-js's default resolver
 * calls with the field's arguments. Connections are Relay connections (`nodes`, `edges`,
 * `pageInfo`) with opaque cursors, each tied to its item: the page after a cursor starts after the
 * item's place in the listing as it is now, and a cursor whose item has left the listing (edited
 * out of the filter, archived, deleted) is refused (`INVALID_INPUT`). Linear documents no more of
 * its cursors than "pass `endCursor` as `after`" (https://linear.app/developers/pagination), so a
 * reader may not count on one outliving a change to its item. `orderBy` is `createdAt` (default)
 * or `updatedAt`, newest first as Linear serves them ("to get most recently updated resources,
 * order by updatedAt").
 *
 * A request answered with partial data (the `partial` fault) carries a `PartialPlan` as its
 * context: the first nullable object field (an issue's assignee, creator, project, cycle or parent,
 * a comment's user, a history entry's actor) that has a value fails instead, so graphql-js answers
 * it as `null` with an error whose `path` names it, beside the rest of `data`.
 */
import { GraphQLError } from 'graphql';
import type {
  CommentRec,
  CycleRec,
  HistoryRec,
  IssueRec,
  ProjectRec,
  StateRec,
  TeamRec,
  UserRec,
  Workspace,
} from './generate.js';

const MAX_FIRST = 250;
const DEFAULT_FIRST = 50;

type Obj = Record<string, unknown>;

interface PageArgs {
  first?: number | null;
  after?: string | null;
  orderBy?: 'createdAt' | 'updatedAt' | null;
}

interface Sortable {
  id: string;
  createdAt: number;
  updatedAt?: number;
}

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

export function encodeCursor(key: number, id: string): string {
  return Buffer.from(`${key}:${id}`).toString('base64url');
}

function decodeCursor(cursor: string): { key: number; id: string } {
  const text = Buffer.from(cursor, 'base64url').toString();
  const i = text.indexOf(':');
  const key = Number(text.slice(0, i));
  if (i < 1 || !Number.isFinite(key)) {
    throw new GraphQLError('Invalid cursor', {
      extensions: { code: 'INVALID_INPUT', type: 'invalid input', userError: true },
    });
  }
  return { key, id: text.slice(i + 1) };
}

/** One page of `items` (sorted here newest first by the order's key, then id) as a Relay connection. */
export function connection<T extends Sortable>(
  items: readonly T[],
  args: PageArgs,
  view: (t: T) => Obj,
  presorted = false,
): Obj {
  const first = args.first ?? DEFAULT_FIRST;
  if (!Number.isInteger(first) || first < 0 || first > MAX_FIRST) {
    throw new GraphQLError(`first must be between 0 and ${MAX_FIRST}`, {
      extensions: { code: 'INVALID_INPUT', type: 'invalid input', userError: true },
    });
  }
  const keyOf = (t: T) => (args.orderBy === 'updatedAt' ? (t.updatedAt ?? t.createdAt) : t.createdAt);
  const sorted = presorted ? items : [...items].sort((a, b) => keyOf(b) - keyOf(a) || cmp(b.id, a.id));
  let start = 0;
  if (args.after) {
    const c = decodeCursor(args.after);
    const at = sorted.findIndex((t) => t.id === c.id);
    if (at < 0) {
      throw new GraphQLError('Invalid cursor: its item is no longer in this listing', {
        extensions: { code: 'INVALID_INPUT', type: 'invalid input', userError: true },
      });
    }
    start = at + 1;
  }
  const page = sorted.slice(start, start + first);
  const cursors = page.map((t) => encodeCursor(keyOf(t), t.id));
  return {
    nodes: page.map(view),
    edges: page.map((t, i) => ({ cursor: cursors[i], node: view(t) })),
    pageInfo: {
      hasNextPage: start + page.length < sorted.length,
      hasPreviousPage: start > 0,
      startCursor: cursors[0] ?? null,
      endCursor: cursors[cursors.length - 1] ?? null,
    },
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Which field of a partial answer fails: the first nullable one with a value, once. */
export class PartialPlan {
  failed: string | null = null;

  /** Throws (once) for a nullable field `name` that has a value, so it answers null with an error. */
  check(name: string, has: unknown): void {
    if (this.failed !== null || has === null || has === undefined) return;
    this.failed = name;
    throw new GraphQLError(`Internal error resolving ${name}`, {
      extensions: { code: 'INTERNAL_SERVER_ERROR', type: 'internal error', userError: false },
    });
  }
}

/** A nullable field's resolver that fails when the request's context is a partial plan. */
function nullable<T>(name: string, has: unknown, value: () => T): (_args: unknown, ctx: unknown) => T {
  return (_args, ctx) => {
    if (ctx instanceof PartialPlan) ctx.check(name, has);
    return value();
  };
}

export class Views {
  /** Views of the records that never change (teams, users, states, labels, projects, cycles). */
  private readonly cache = new Map<string, Obj | null>();
  private readonly states: Map<string, StateRec>;
  private readonly users: Map<string, UserRec>;
  private readonly teams: Map<string, TeamRec>;
  private readonly labels: Map<string, { id: string; name: string; color: string }>;
  private readonly projects: Map<string, ProjectRec>;
  private readonly cycles: Map<string, CycleRec>;

  constructor(
    readonly ws: Workspace,
    readonly baseUrl: () => string,
  ) {
    this.states = new Map(ws.states.map((s) => [s.id, s]));
    this.users = new Map(ws.users.map((u) => [u.id, u]));
    this.teams = new Map(ws.teams.map((t) => [t.id, t]));
    this.labels = new Map(ws.labels.map((l) => [l.id, l]));
    this.projects = new Map(ws.projects.map((p) => [p.id, p]));
    this.cycles = new Map(ws.cycles.map((c) => [c.id, c]));
  }

  private cached(kind: string, id: string | null | undefined, make: () => Obj | null): Obj | null {
    const k = `${kind}:${id ?? ''}`;
    let v = this.cache.get(k);
    if (v === undefined) {
      v = make();
      this.cache.set(k, v);
    }
    return v;
  }

  team(id: string): Obj {
    return this.cached('team', id, () => this.makeTeam(id))!;
  }

  private makeTeam(id: string): Obj {
    const t = this.teams.get(id)!;
    return {
      id: t.id,
      key: t.key,
      name: t.name,
      description: null,
      createdAt: iso(t.createdAt),
      updatedAt: iso(t.createdAt),
    };
  }

  user(id: string | null | undefined): Obj | null {
    return id ? this.cached('user', id, () => this.makeUser(id)) : null;
  }

  private makeUser(id: string): Obj | null {
    const u = this.users.get(id);
    if (!u) return null;
    const at = iso(u.createdAt);
    return { ...u, avatarUrl: null, active: true, createdAt: at, updatedAt: at };
  }

  state(id: string | null | undefined): Obj | null {
    return id ? this.cached('state', id, () => this.makeState(id)) : null;
  }

  private makeState(id: string): Obj | null {
    const s = this.states.get(id);
    if (!s) return null;
    const at = iso(this.teams.get(s.teamId)!.createdAt);
    return {
      id: s.id,
      name: s.name,
      type: s.type,
      color: s.color,
      position: s.position,
      team: () => this.team(s.teamId),
      createdAt: at,
      updatedAt: at,
    };
  }

  label(id: string): Obj {
    return this.cached('label', id, () => this.makeLabel(id))!;
  }

  private makeLabel(id: string): Obj {
    const l = this.labels.get(id)!;
    return { id: l.id, name: l.name, color: l.color };
  }

  project(id: string | null): Obj | null {
    return id ? this.cached('project', id, () => this.makeProject(id)) : null;
  }

  private makeProject(id: string): Obj | null {
    const p = this.projects.get(id);
    if (!p) return null;
    return {
      id: p.id,
      name: p.name,
      description: '',
      url: `${this.baseUrl()}/project/${p.id}`,
      lead: () => this.user(p.leadId),
      status: { id: `status-${p.statusType}`, name: p.statusType, type: p.statusType },
      startedAt: null,
      completedAt: p.statusType === 'completed' ? iso(p.updatedAt) : null,
      canceledAt: p.statusType === 'canceled' ? iso(p.updatedAt) : null,
      createdAt: iso(p.createdAt),
      updatedAt: iso(p.updatedAt),
    };
  }

  cycle(id: string | null): Obj | null {
    return id ? this.cached('cycle', id, () => this.makeCycle(id)) : null;
  }

  private makeCycle(id: string): Obj | null {
    const c = this.cycles.get(id);
    if (!c) return null;
    return {
      id: c.id,
      number: c.number,
      name: null,
      startsAt: iso(c.startsAt),
      endsAt: iso(c.endsAt),
      completedAt: iso(c.completedAt),
      team: () => this.team(c.teamId),
      createdAt: iso(c.startsAt - 86_400_000),
      updatedAt: iso(c.completedAt ?? c.startsAt),
    };
  }

  identifier(i: IssueRec): string {
    return `${this.teams.get(i.teamId)!.key}-${i.number}`;
  }

  issue(i: IssueRec): Obj {
    const identifier = this.identifier(i);
    return {
      id: i.id,
      identifier,
      number: i.number,
      title: i.title,
      url: `${this.baseUrl()}/issue/${identifier}`,
      priority: i.priority,
      estimate: null,
      createdAt: iso(i.createdAt),
      updatedAt: iso(i.updatedAt),
      startedAt: iso(i.startedAt),
      completedAt: iso(i.completedAt),
      canceledAt: iso(i.canceledAt),
      archivedAt: iso(i.archivedAt),
      state: () => this.state(i.stateId),
      assignee: nullable('assignee', i.assigneeId, () => this.user(i.assigneeId)),
      creator: nullable('creator', i.creatorId, () => this.user(i.creatorId)),
      parent: nullable('parent', i.parentId, () => {
        const p = i.parentId ? this.ws.issueById.get(i.parentId) : undefined;
        return p ? this.issue(p) : null;
      }),
      project: nullable('project', i.projectId, () => this.project(i.projectId)),
      cycle: nullable('cycle', i.cycleId, () => this.cycle(i.cycleId)),
      team: () => this.team(i.teamId),
      labels: (args: PageArgs) =>
        connection(
          i.labelIds.map((id, n) => ({ id, createdAt: n })),
          { ...args, orderBy: 'createdAt' },
          (l) => this.label(l.id),
        ),
      comments: (args: PageArgs) => connection(i.comments, args, (c) => this.comment(c, i)),
      history: (args: PageArgs) => connection(i.history, args, (h) => this.history(h, i)),
    };
  }

  comment(c: CommentRec, i: IssueRec): Obj {
    return {
      id: c.id,
      body: c.body,
      createdAt: iso(c.createdAt),
      updatedAt: iso(c.updatedAt),
      url: `${this.baseUrl()}/issue/${this.identifier(i)}#comment-${c.id.slice(0, 8)}`,
      // Archived with its issue (root.ts): Linear documents no rule of its own.
      archivedAt: iso(i.archivedAt),
      user: nullable('user', c.userId, () => this.user(c.userId)),
      issue: () => this.issue(i),
      issueId: i.id,
    };
  }

  history(h: HistoryRec, i: IssueRec): Obj {
    return {
      id: h.id,
      createdAt: iso(h.createdAt),
      updatedAt: iso(h.createdAt),
      actor: nullable('actor', h.actorId, () => this.user(h.actorId)),
      fromState: () => this.state(h.fromStateId),
      toState: () => this.state(h.toStateId),
      fromAssignee: () => this.user(h.fromAssigneeId),
      toAssignee: () => this.user(h.toAssigneeId),
      addedLabelIds: h.addedLabelIds ?? null,
      removedLabelIds: h.removedLabelIds ?? null,
      addedLabels: () => h.addedLabelIds?.map((id) => this.label(id)) ?? null,
      removedLabels: () => h.removedLabelIds?.map((id) => this.label(id)) ?? null,
      issue: () => this.issue(i),
    };
  }
}

export type { CycleRec, ProjectRec, TeamRec, UserRec };
