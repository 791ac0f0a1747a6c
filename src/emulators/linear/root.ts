/**
 * The Query root: issues, comments, teams, users, projects, cycles and workflow states with the
 * filters syncrelay uses — `team: { key | id: { eq, in, neq, nin } }`, an issue's or a comment's
 * `id: { eq, in }` and `updatedAt: { eq, gt, gte, lt, lte }` (ISO-8601 times; a null bound is no
 * bound), a comment's `issue` (an issue filter; `null: true` for comments on no issue, which the
 * emulator has none of), combined with `and`. Linear documents no rule for a comment of an archived
 * issue; the emulator takes it as archived with its issue (left out unless `includeArchived`).
 */
import { GraphQLError } from 'graphql';
import type { CommentRec, IssueRec, Workspace } from './generate.js';
import { connection, type Views } from './resolvers.js';

type Obj = Record<string, unknown>;

interface StringCmp {
  eq?: string | null;
  in?: string[] | null;
  neq?: string | null;
  nin?: string[] | null;
}

interface DateCmp {
  eq?: string | null;
  gt?: string | null;
  gte?: string | null;
  lt?: string | null;
  lte?: string | null;
}

interface TeamFilter {
  key?: StringCmp | null;
  id?: StringCmp | null;
}

interface IssueFilter {
  id?: StringCmp | null;
  team?: TeamFilter | null;
  updatedAt?: DateCmp | null;
  and?: IssueFilter[] | null;
}

interface NullableIssueFilter extends IssueFilter {
  null?: boolean | null;
}

interface CommentFilter {
  id?: StringCmp | null;
  issue?: NullableIssueFilter | null;
  updatedAt?: DateCmp | null;
  and?: CommentFilter[] | null;
}

/** A comment with its issue, sortable by the connection. */
interface CommentOf {
  id: string;
  createdAt: number;
  updatedAt: number;
  comment: CommentRec;
  issue: IssueRec;
}

interface ListArgs {
  includeArchived?: boolean | null;
  first?: number | null;
  after?: string | null;
  orderBy?: 'createdAt' | 'updatedAt' | null;
  filter?: { team?: TeamFilter | null; key?: StringCmp | null; id?: StringCmp | null } | null;
}

function invalid(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'INVALID_INPUT', type: 'invalid input', userError: true } });
}

function matchString(c: StringCmp | null | undefined, v: string): boolean {
  if (!c) return true;
  if (c.eq != null && v !== c.eq) return false;
  if (c.neq != null && v === c.neq) return false;
  if (c.in != null && !c.in.includes(v)) return false;
  if (c.nin != null && c.nin.includes(v)) return false;
  return true;
}

function time(v: string): number {
  const t = Date.parse(v);
  if (!Number.isFinite(t)) throw invalid(`Invalid date: ${JSON.stringify(v).slice(0, 60)}`);
  return t;
}

/** A date comparator as a test of epoch ms (each bound parsed once). */
function dateTest(c: DateCmp | null | undefined): (v: number) => boolean {
  if (!c) return () => true;
  const at = (v: string | null | undefined) => (v == null ? null : time(v));
  const [eq, gt, gte, lt, lte] = [at(c.eq), at(c.gt), at(c.gte), at(c.lt), at(c.lte)];
  return (v) =>
    (eq === null || v === eq) &&
    (gt === null || v > gt) &&
    (gte === null || v >= gte) &&
    (lt === null || v < lt) &&
    (lte === null || v <= lte);
}

export function rootValue(ws: Workspace, views: Views): Obj {
  const teams = new Map(ws.teams.map((t) => [t.id, t]));
  const teamMatches = (f: TeamFilter | null | undefined, teamId: string) => {
    if (!f) return true;
    const t = teams.get(teamId)!;
    return matchString(f.key, t.key) && matchString(f.id, t.id);
  };
  const issueTest = (f: IssueFilter | null | undefined): ((i: IssueRec) => boolean) => {
    if (!f) return () => true;
    const updated = dateTest(f.updatedAt);
    const all = (f.and ?? []).map(issueTest);
    return (i) =>
      matchString(f.id, i.id) && teamMatches(f.team, i.teamId) && updated(i.updatedAt) && all.every((g) => g(i));
  };
  const commentTest = (f: CommentFilter | null | undefined): ((c: CommentOf) => boolean) => {
    if (!f) return () => true;
    const updated = dateTest(f.updatedAt);
    const issue = f.issue ? issueTest(f.issue) : () => true;
    const all = (f.and ?? []).map(commentTest);
    const onNone = f.issue?.null === true; // every comment here is on an issue
    return (c) =>
      !onNone && matchString(f.id, c.id) && updated(c.updatedAt) && issue(c.issue) && all.every((g) => g(c));
  };
  return {
    issues: (args: ListArgs & { filter?: IssueFilter | null }) => {
      // ws.issues is kept oldest update first: reversed, it is the newest-first order served.
      const test = issueTest(args.filter);
      const items = ws.issues.filter((i) => (args.includeArchived || !i.archivedAt) && test(i));
      if (args.orderBy === 'updatedAt') items.reverse();
      return connection(items, args, (i) => views.issue(i), args.orderBy === 'updatedAt');
    },
    comments: (args: ListArgs & { filter?: CommentFilter | null }) => {
      const test = commentTest(args.filter);
      const items = ws.issues
        .filter((i) => args.includeArchived || !i.archivedAt)
        .flatMap((issue) => issue.comments.map((comment) => commentOf(issue, comment)))
        .filter(test);
      return connection(items, args, (c) => views.comment(c.comment, c.issue));
    },
    issue: (args: { id: string }) => {
      const i = ws.issueById.get(args.id) ?? ws.issues.find((x) => views.identifier(x) === args.id);
      if (!i) {
        throw new GraphQLError('Entity not found: Issue', {
          extensions: { code: 'INVALID_INPUT', type: 'invalid input', userError: true },
        });
      }
      return views.issue(i);
    },
    teams: (args: ListArgs) =>
      connection(
        ws.teams.filter((t) => teamMatches(args.filter as TeamFilter | null, t.id)),
        args,
        (t) => views.team(t.id),
      ),
    users: (args: ListArgs) => connection(ws.users, args, (u) => views.user(u.id)!),
    viewer: () => views.user(ws.users[0]!.id),
    projects: (args: ListArgs) => connection(ws.projects, args, (p) => views.project(p.id)!),
    cycles: (args: ListArgs) =>
      connection(
        ws.cycles
          .filter((c) => teamMatches(args.filter?.team, c.teamId))
          .map((c) => ({ ...c, createdAt: c.startsAt - 86_400_000 })),
        args,
        (c) => views.cycle(c.id)!,
      ),
    workflowStates: (args: ListArgs) =>
      connection(
        ws.states
          .filter((s) => teamMatches(args.filter?.team, s.teamId))
          .map((s) => ({ id: s.id, createdAt: s.position })),
        args,
        (s) => views.state(s.id)!,
      ),
  };
}

function commentOf(issue: IssueRec, comment: CommentRec): CommentOf {
  return { id: comment.id, createdAt: comment.createdAt, updatedAt: comment.updatedAt, comment, issue };
}
