/**
 * Our own GraphQL queries (not the SDK's objects, which ask for every field and one request per
 * relation): only the fields the normalized rows need, Relay cursors (`first` / `after`), issues
 * ordered by `updatedAt` with their comments, history and labels nested in the same query.
 * test/providers/linear/queries.test.ts validates every one against the emulator's copy of
 * Linear's schema.
 */

const PAGE_INFO = 'pageInfo { hasNextPage endCursor }';

const USER = 'id name displayName email';
/** A user named on an issue, comment or history entry (complexity counts every field). */
const USER_REF = 'id name displayName';
const STATE = 'id name type';

const COMMENT_FIELDS = `id body createdAt updatedAt url user { ${USER_REF} }`;
const HISTORY_FIELDS =
  `id createdAt actor { ${USER_REF} } fromState { ${STATE} } toState { ${STATE} } ` +
  `fromAssignee { ${USER_REF} } toAssignee { ${USER_REF} } addedLabels { id name } removedLabels { id name }`;
const LABEL_FIELDS = 'id name';

/** The connections an issue may carry, by the dataset that needs them. */
export type NestedKind = 'comments' | 'history' | 'labels';

const NESTED_FIELDS: Record<NestedKind, string> = {
  comments: COMMENT_FIELDS,
  history: HISTORY_FIELDS,
  labels: LABEL_FIELDS,
};

const ISSUE_CORE = 'id identifier updatedAt';
const ISSUE_FIELDS =
  `${ISSUE_CORE} number title url priority createdAt startedAt completedAt canceledAt archivedAt ` +
  `state { ${STATE} } assignee { ${USER_REF} } parent { id identifier } project { id name } ` +
  'cycle { id number name } team { id key }';

function nested(kind: NestedKind): string {
  return `${kind}(first: $nested) { nodes { ${NESTED_FIELDS[kind]} } ${PAGE_INFO} }`;
}

/** The operation name of the issues query for a set of connections (e.g. `SyncIssuesCommentsHistory`). */
export function issuesQueryName(full: boolean, kinds: readonly NestedKind[]): string {
  const part = (k: string) => k[0]!.toUpperCase() + k.slice(1);
  return `SyncIssues${full ? '' : 'Ids'}${kinds.map(part).join('')}`;
}

/**
 * Issues matching `$filter` — built by `issueFilter`: `{ team: { key: { in: teams } }, updatedAt:
 * { gte: since, lt: before, lte: upTo } }` — latest update first (Linear's `orderBy: updatedAt`);
 * `full` asks for the fields of a work_items row, else only the issue's ids; `kinds` the nested
 * connections.
 */
export function issuesQuery(full: boolean, kinds: readonly NestedKind[]): { name: string; text: string } {
  const name = issuesQueryName(full, kinds);
  const nestedVar = kinds.length > 0 ? ', $nested: Int!' : '';
  const text = `query ${name}($filter: IssueFilter!, $first: Int!, $after: String${nestedVar}) {
  issues(filter: $filter, orderBy: updatedAt, first: $first, after: $after, includeArchived: true) {
    nodes { ${full ? ISSUE_FIELDS : ISSUE_CORE} ${kinds.map(nested).join(' ')} }
    ${PAGE_INFO}
  }
}`;
  return { name, text };
}

/**
 * The issues filter of some teams' issues updated in `[since, before)` (an absent bound is left out)
 * and, for a keyset read resuming below what it has read, at or before `upTo` (Linear's own text).
 */
export function issueFilter(
  teams: readonly string[],
  since: Date | null,
  before: Date | null,
  upTo: string | null = null,
): Record<string, unknown> {
  const updatedAt: Record<string, string> = {};
  if (since) updatedAt.gte = since.toISOString();
  if (before) updatedAt.lt = before.toISOString();
  if (upTo) updatedAt.lte = upTo;
  return { team: { key: { in: [...teams] } }, ...(Object.keys(updatedAt).length > 0 ? { updatedAt } : {}) };
}

/** The issues filter of these issues (by id), whatever their team. */
export function issueIdsFilter(ids: readonly string[]): Record<string, unknown> {
  return { id: { in: [...ids] } };
}

/** What a verify lists of an issue: its id and times, no connection (about 1.3 points an issue). */
const VERIFY_FIELDS = 'id updatedAt archivedAt';

/**
 * A verify's listing of some teams' issues, archived ones included (an archive is not a delete),
 * latest update first; `$filter` is `issueFilter(teams, null, null, upTo)`.
 */
export const VERIFY_LIST_QUERY = {
  name: 'SyncIssuesVerifyList',
  text: `query SyncIssuesVerifyList($filter: IssueFilter!, $first: Int!, $after: String) {
  issues(filter: $filter, orderBy: updatedAt, first: $first, after: $after, includeArchived: true) {
    nodes { ${VERIFY_FIELDS} }
    ${PAGE_INFO}
  }
}`,
};

/** Of some issue ids, those Linear has now (archived ones included), in one page of `$first`. */
export const VERIFY_CONFIRM_QUERY = {
  name: 'SyncIssuesVerifyConfirm',
  text: `query SyncIssuesVerifyConfirm($ids: [ID!]!, $first: Int!) {
  issues(filter: { id: { in: $ids } }, first: $first, includeArchived: true) {
    nodes { ${VERIFY_FIELDS} }
    ${PAGE_INFO}
  }
}`,
};

/** What a verify lists of a comment: its id and update time (about 1.2 complexity points a comment). */
const COMMENT_VERIFY_FIELDS = 'id updatedAt';

/**
 * The comments filter of the comments on some teams' issues, at or before `upTo` (Linear's own text
 * of a time; null: no bound): Linear's `CommentFilter` names a comment's issue by a `NullableIssueFilter`.
 */
export function commentFilter(teams: readonly string[], upTo: string | null): Record<string, unknown> {
  const issue = { team: { key: { in: [...teams] } } };
  return upTo ? { issue, updatedAt: { lte: upTo } } : { issue };
}

/**
 * A verify's listing of the comments on some teams' issues, archived ones included (an archive is
 * not a delete), latest update first; `$filter` is `commentFilter(teams, upTo)`.
 */
export const COMMENTS_VERIFY_LIST_QUERY = {
  name: 'SyncCommentsVerifyList',
  text: `query SyncCommentsVerifyList($filter: CommentFilter!, $first: Int!, $after: String) {
  comments(filter: $filter, orderBy: updatedAt, first: $first, after: $after, includeArchived: true) {
    nodes { ${COMMENT_VERIFY_FIELDS} }
    ${PAGE_INFO}
  }
}`,
};

/** Of some comment ids, those Linear has now (archived ones included), in one page of `$first`. */
export const COMMENTS_VERIFY_CONFIRM_QUERY = {
  name: 'SyncCommentsVerifyConfirm',
  text: `query SyncCommentsVerifyConfirm($ids: [ID!]!, $first: Int!) {
  comments(filter: { id: { in: $ids } }, first: $first, includeArchived: true) {
    nodes { ${COMMENT_VERIFY_FIELDS} }
    ${PAGE_INFO}
  }
}`,
};

/**
 * Some comments by id (archived ones included) with the fields a family read writes of a comment,
 * and their issue's id (`issueId`: null for a comment on no issue).
 */
export const COMMENTS_BY_IDS_QUERY = {
  name: 'SyncCommentsByIds',
  text: `query SyncCommentsByIds($ids: [ID!]!, $first: Int!, $after: String) {
  comments(filter: { id: { in: $ids } }, first: $first, after: $after, includeArchived: true) {
    nodes { ${COMMENT_FIELDS} issueId }
    ${PAGE_INFO}
  }
}`,
};

/** The next page of one issue's nested connection (when the issues query's page overflowed). */
export function issueConnectionQuery(kind: NestedKind): { name: string; text: string } {
  const name = `SyncIssue${kind[0]!.toUpperCase()}${kind.slice(1)}Page`;
  const text = `query ${name}($id: String!, $first: Int!, $after: String) {
  issue(id: $id) { id ${kind}(first: $first, after: $after) { nodes { ${NESTED_FIELDS[kind]} } ${PAGE_INFO} } }
}`;
  return { name, text };
}

export const TEAMS_QUERY = {
  name: 'SyncTeams',
  text: `query SyncTeams($teams: [String!]!, $first: Int!, $after: String) {
  teams(filter: { key: { in: $teams } }, first: $first, after: $after) {
    nodes { id key name description }
    ${PAGE_INFO}
  }
}`,
};

export const USERS_QUERY = {
  name: 'SyncUsers',
  text: `query SyncUsers($first: Int!, $after: String) {
  users(first: $first, after: $after, includeArchived: true) {
    nodes { ${USER} avatarUrl active admin }
    ${PAGE_INFO}
  }
}`,
};

export const PROJECTS_QUERY = {
  name: 'SyncProjects',
  text: `query SyncProjects($first: Int!, $after: String) {
  projects(first: $first, after: $after, includeArchived: true) {
    nodes { id name description url createdAt updatedAt lead { ${USER} } status { id name type } }
    ${PAGE_INFO}
  }
}`,
};

export const CYCLES_QUERY = {
  name: 'SyncCycles',
  text: `query SyncCycles($teams: [String!]!, $first: Int!, $after: String) {
  cycles(filter: { team: { key: { in: $teams } } }, first: $first, after: $after, includeArchived: true) {
    nodes { id number name startsAt endsAt completedAt team { id key } }
    ${PAGE_INFO}
  }
}`,
};

/** Every query this provider sends (for the schema test). */
export function allQueries(): { name: string; text: string }[] {
  const kinds: NestedKind[] = ['comments', 'history', 'labels'];
  const subsets: NestedKind[][] = [[], ...kinds.map((k) => [k]), kinds, ['history', 'labels']];
  return [
    ...subsets.map((s) => issuesQuery(true, s)),
    ...kinds.map((k) => issuesQuery(false, [k])),
    ...kinds.map(issueConnectionQuery),
    VERIFY_LIST_QUERY,
    VERIFY_CONFIRM_QUERY,
    COMMENTS_VERIFY_LIST_QUERY,
    COMMENTS_VERIFY_CONFIRM_QUERY,
    COMMENTS_BY_IDS_QUERY,
    TEAMS_QUERY,
    USERS_QUERY,
    PROJECTS_QUERY,
    CYCLES_QUERY,
  ];
}
