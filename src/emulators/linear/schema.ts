/**
 * The GraphQL schema the emulator serves: the subset of Linear's public API schema
 * (linear/linear, packages/sdk/src/schema.graphql) that syncrelay reads — field names, types,
 * nullability and connection shapes as Linear publishes them, descriptions left out. Requests are
 * parsed and validated against it; a query asking for anything else fails validation, as an unknown
 * field would on Linear.
 */
import { buildSchema, type GraphQLSchema } from 'graphql';

export const LINEAR_SDL = /* GraphQL */ `
  type Comment implements Node {
    archivedAt: DateTime
    body: String!
    createdAt: DateTime!
    id: ID!
    issue: Issue
    issueId: String
    updatedAt: DateTime!
    url: String!
    user: User
  }

  type CommentConnection {
    edges: [CommentEdge!]!
    nodes: [Comment!]!
    pageInfo: PageInfo!
  }

  type CommentEdge {
    cursor: String!
    node: Comment!
  }

  input CommentFilter {
    and: [CommentFilter!]
    id: IDComparator
    issue: NullableIssueFilter
    updatedAt: DateComparator
  }

  type Cycle implements Node {
    completedAt: DateTime
    createdAt: DateTime!
    endsAt: DateTime!
    id: ID!
    name: String
    number: Float!
    startsAt: DateTime!
    team: Team!
    updatedAt: DateTime!
  }

  type CycleConnection {
    edges: [CycleEdge!]!
    nodes: [Cycle!]!
    pageInfo: PageInfo!
  }

  type CycleEdge {
    cursor: String!
    node: Cycle!
  }

  input CycleFilter {
    team: TeamFilter
    updatedAt: DateComparator
  }

  input DateComparator {
    eq: DateTimeOrDuration
    gt: DateTimeOrDuration
    gte: DateTimeOrDuration
    lt: DateTimeOrDuration
    lte: DateTimeOrDuration
  }

  scalar DateTime

  scalar DateTimeOrDuration

  input IDComparator {
    eq: ID
    in: [ID!]
  }

  type Issue implements Node {
    archivedAt: DateTime
    assignee: User
    canceledAt: DateTime
    comments(after: String, first: Int, includeArchived: Boolean, orderBy: PaginationOrderBy): CommentConnection!
    completedAt: DateTime
    createdAt: DateTime!
    creator: User
    cycle: Cycle
    estimate: Float
    history(after: String, first: Int, includeArchived: Boolean, orderBy: PaginationOrderBy): IssueHistoryConnection!
    id: ID!
    identifier: String!
    labels(after: String, first: Int, includeArchived: Boolean, orderBy: PaginationOrderBy): IssueLabelConnection!
    number: Float!
    parent: Issue
    priority: Float!
    project: Project
    startedAt: DateTime
    state: WorkflowState!
    team: Team!
    title: String!
    updatedAt: DateTime!
    url: String!
  }

  type IssueConnection {
    edges: [IssueEdge!]!
    nodes: [Issue!]!
    pageInfo: PageInfo!
  }

  type IssueEdge {
    cursor: String!
    node: Issue!
  }

  input IssueFilter {
    and: [IssueFilter!]
    id: IssueIDComparator
    team: TeamFilter
    updatedAt: DateComparator
  }

  input IssueIDComparator {
    eq: ID
    in: [ID!]
    neq: ID
    nin: [ID!]
  }

  type IssueHistory implements Node {
    actor: User
    addedLabelIds: [String!]
    addedLabels: [IssueLabel!]
    createdAt: DateTime!
    fromAssignee: User
    fromState: WorkflowState
    id: ID!
    issue: Issue!
    removedLabelIds: [String!]
    removedLabels: [IssueLabel!]
    toAssignee: User
    toState: WorkflowState
    updatedAt: DateTime!
  }

  type IssueHistoryConnection {
    edges: [IssueHistoryEdge!]!
    nodes: [IssueHistory!]!
    pageInfo: PageInfo!
  }

  type IssueHistoryEdge {
    cursor: String!
    node: IssueHistory!
  }

  type IssueLabel implements Node {
    color: String!
    id: ID!
    name: String!
  }

  type IssueLabelConnection {
    edges: [IssueLabelEdge!]!
    nodes: [IssueLabel!]!
    pageInfo: PageInfo!
  }

  type IssueLabelEdge {
    cursor: String!
    node: IssueLabel!
  }

  input NullableIssueFilter {
    and: [NullableIssueFilter!]
    id: IssueIDComparator
    null: Boolean
    team: TeamFilter
    updatedAt: DateComparator
  }

  interface Node {
    id: ID!
  }

  type PageInfo {
    endCursor: String
    hasNextPage: Boolean!
    hasPreviousPage: Boolean!
    startCursor: String
  }

  enum PaginationOrderBy {
    createdAt
    updatedAt
  }

  type Project implements Node {
    canceledAt: DateTime
    completedAt: DateTime
    createdAt: DateTime!
    description: String!
    id: ID!
    lead: User
    name: String!
    startedAt: DateTime
    status: ProjectStatus!
    updatedAt: DateTime!
    url: String!
  }

  type ProjectConnection {
    edges: [ProjectEdge!]!
    nodes: [Project!]!
    pageInfo: PageInfo!
  }

  type ProjectEdge {
    cursor: String!
    node: Project!
  }

  input ProjectFilter {
    updatedAt: DateComparator
  }

  type ProjectStatus implements Node {
    id: ID!
    name: String!
    type: ProjectStatusType!
  }

  enum ProjectStatusType {
    backlog
    canceled
    completed
    paused
    planned
    started
  }

  type Query {
    comments(
      after: String
      filter: CommentFilter
      first: Int
      includeArchived: Boolean
      orderBy: PaginationOrderBy
    ): CommentConnection!
    cycles(
      after: String
      filter: CycleFilter
      first: Int
      includeArchived: Boolean
      orderBy: PaginationOrderBy
    ): CycleConnection!
    issue(id: String!): Issue!
    issues(
      after: String
      filter: IssueFilter
      first: Int
      includeArchived: Boolean
      orderBy: PaginationOrderBy
    ): IssueConnection!
    projects(
      after: String
      filter: ProjectFilter
      first: Int
      includeArchived: Boolean
      orderBy: PaginationOrderBy
    ): ProjectConnection!
    teams(
      after: String
      filter: TeamFilter
      first: Int
      includeArchived: Boolean
      orderBy: PaginationOrderBy
    ): TeamConnection!
    users(after: String, first: Int, includeArchived: Boolean, orderBy: PaginationOrderBy): UserConnection!
    viewer: User!
    workflowStates(
      after: String
      filter: WorkflowStateFilter
      first: Int
      includeArchived: Boolean
      orderBy: PaginationOrderBy
    ): WorkflowStateConnection!
  }

  input StringComparator {
    eq: String
    in: [String!]
    neq: String
    nin: [String!]
  }

  type Team implements Node {
    createdAt: DateTime!
    description: String
    id: ID!
    key: String!
    name: String!
    updatedAt: DateTime!
  }

  type TeamConnection {
    edges: [TeamEdge!]!
    nodes: [Team!]!
    pageInfo: PageInfo!
  }

  type TeamEdge {
    cursor: String!
    node: Team!
  }

  input TeamFilter {
    id: IDComparator
    key: StringComparator
  }

  scalar TimelessDate

  type User implements Node {
    active: Boolean!
    admin: Boolean!
    avatarUrl: String
    createdAt: DateTime!
    displayName: String!
    email: String!
    id: ID!
    name: String!
    updatedAt: DateTime!
  }

  type UserConnection {
    edges: [UserEdge!]!
    nodes: [User!]!
    pageInfo: PageInfo!
  }

  type UserEdge {
    cursor: String!
    node: User!
  }

  type WorkflowState implements Node {
    color: String!
    createdAt: DateTime!
    id: ID!
    name: String!
    position: Float!
    team: Team!
    type: String!
    updatedAt: DateTime!
  }

  type WorkflowStateConnection {
    edges: [WorkflowStateEdge!]!
    nodes: [WorkflowState!]!
    pageInfo: PageInfo!
  }

  type WorkflowStateEdge {
    cursor: String!
    node: WorkflowState!
  }

  input WorkflowStateFilter {
    team: TeamFilter
    updatedAt: DateComparator
  }
`;

let built: GraphQLSchema | null = null;

/** The schema, built once. */
export function linearSchema(): GraphQLSchema {
  built ??= buildSchema(LINEAR_SDL);
  return built;
}
