/**
 * The emulator's HTTP front: `POST /graphql` with `{ query, variables, operationName }`. In order:
 * authentication, parsing and validation against the schema, churn due by the clock, the query's
 * complexity, a spent budget (RATELIMITED: requests, complexity or the root field's endpoint
 * bucket), injected faults, then execution (a `partial` fault runs it with a PartialPlan). Every
 * answer carries the budget headers and lands in the request log (the key's id, never the key);
 * an answered page of `issues` or of the root `comments` is handed to the churn hook before the next
 * request.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import {
  execute,
  Kind,
  OperationTypeNode,
  parse,
  validate,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import type { Clock } from '../../clock.js';
import type { FaultDeck } from '../core/faultDeck.js';
import { appendLog, readBody, requestHandler, sendAnswer } from '../core/http.js';
import { faultAnswer, gqlError, rateLimited, unauthenticated, type Answer } from './answers.js';
import { queryComplexity } from './complexity.js';
import type { LinearFaultKind, LinearFaultSpec } from './faults.js';
import type { LinearRateLimit } from './options.js';
import { rateHeaders, type EndpointState, type LeakyBucket, type WindowState } from './ratelimit.js';
import { PartialPlan } from './resolvers.js';

export interface EmulatorKey {
  /** Shown in the request log instead of the key. */
  id: string;
  /** Sent as `Authorization: <key>` (an API key) or `Authorization: Bearer <key>` (an OAuth token). */
  key: string;
  kind: 'api-key' | 'oauth';
}

/** One request as the log keeps it. */
export interface LinearRequestLogEntry {
  seq: number;
  /** The clock's time, ISO 8601. */
  at: string;
  operation: string | null;
  /** The `after` cursor the request asked to read from (its `after` variable), if any. */
  after: string | null;
  /** The upper `updatedAt` bound (`lte`) of its issue filter, if any: where a keyset read resumes. */
  upTo: string | null;
  keyId: string | null;
  status: number;
  /** The GraphQL error code answered, if any (RATELIMITED, QUERY_TOO_COMPLEX, …). */
  errorCode: string | null;
  fault: LinearFaultKind | null;
  complexity: number | null;
  requests: WindowState | null;
  /** Monotonic ms (performance.now) when the request arrived and when it was answered. */
  startedAt: number;
  endedAt: number;
}

/** An answered page of a root connection: its operation, its nodes' ids, the request's number. */
export interface ListedPage {
  operation: string | null;
  ids: string[];
  seq: number;
}

export interface ServerParts {
  clock: Clock;
  schema: GraphQLSchema;
  root: Record<string, unknown>;
  keys: readonly EmulatorKey[];
  requests: LeakyBucket;
  complexity: LeakyBucket;
  /** Endpoint buckets by root field. */
  endpoints: ReadonlyMap<string, LeakyBucket>;
  rateLimit: Required<LinearRateLimit>;
  /** Runs the edits due by the clock (churn), before a request is served. */
  churn: () => void;
  /** Hands an answered page of `issues` to the churn hook. */
  afterIssuesPage: (page: ListedPage) => void;
  /** Hands an answered page of the root `comments` connection to the churn hook. */
  afterCommentsPage: (page: ListedPage) => void;
  faults: FaultDeck<LinearFaultSpec>;
  log: LinearRequestLogEntry[];
  logLimit: number;
}

const MAX_BODY = 1_000_000;
const JSON_TYPE = 'application/json; charset=utf-8';

export function createHandler(parts: ServerParts): RequestListener {
  return requestHandler(
    (seq, req, res) => handle(parts, seq, req, res),
    (_seq, req, res) =>
      sendAnswer(req, res, { status: 500, body: { errors: [{ message: 'internal' }] } }, {}, 'application/json'),
  );
}

function keyOf(parts: ServerParts, header: string | undefined): EmulatorKey | null {
  if (!header) return null;
  const bearer = /^bearer\s+(\S+)\s*$/i.exec(header);
  const given = bearer ? bearer[1]! : header.trim();
  const key = parts.keys.find((k) => k.key === given);
  if (!key) return null;
  return (key.kind === 'oauth') === Boolean(bearer) ? key : null;
}

interface Request {
  doc: DocumentNode;
  op: OperationDefinitionNode;
  name: string | null;
  variables: Record<string, unknown>;
  /** The operation's first root field (`issues`, `issue`, …): its endpoint. */
  root: string | null;
}

/** The first root field an operation selects. */
function rootField(op: OperationDefinitionNode): string | null {
  const first = op.selectionSet.selections.find((s) => s.kind === Kind.FIELD);
  return first && first.kind === Kind.FIELD ? first.name.value : null;
}

/** The `lte` bound of an issue filter's `updatedAt` (or of one of its `and` members). */
function upToOf(filter: unknown): string | null {
  if (!filter || typeof filter !== 'object') return null;
  const f = filter as { updatedAt?: { lte?: unknown }; and?: unknown };
  if (typeof f.updatedAt?.lte === 'string') return f.updatedAt.lte;
  if (!Array.isArray(f.and)) return null;
  for (const m of f.and) {
    const found = upToOf(m);
    if (found) return found;
  }
  return null;
}

/** The request parsed and validated, or the error answer. */
function parseRequest(parts: ServerParts, text: string | null): Request | Answer {
  let payload: { query?: unknown; variables?: unknown; operationName?: unknown };
  try {
    payload = JSON.parse(text ?? '') as typeof payload;
  } catch {
    return gqlError(400, 'BAD_REQUEST', 'invalid input', 'Body must be JSON with a query');
  }
  if (typeof payload?.query !== 'string') return gqlError(400, 'BAD_REQUEST', 'invalid input', 'Missing query');
  let doc: DocumentNode;
  try {
    doc = parse(payload.query);
  } catch (err) {
    return gqlError(400, 'GRAPHQL_PARSE_FAILED', 'graphql error', (err as Error).message);
  }
  const errors = validate(parts.schema, doc);
  if (errors.length > 0) {
    return gqlError(400, 'GRAPHQL_VALIDATION_FAILED', 'graphql error', errors.map((e) => e.message).join('; '));
  }
  const ops = doc.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const wanted = typeof payload.operationName === 'string' ? payload.operationName : null;
  const op = wanted ? ops.find((o) => o.name?.value === wanted) : ops.length === 1 ? ops[0] : undefined;
  if (!op) return gqlError(400, 'BAD_REQUEST', 'invalid input', 'Unknown or ambiguous operation');
  if (op.operation !== OperationTypeNode.QUERY)
    return gqlError(400, 'BAD_REQUEST', 'invalid input', 'Only queries are served');
  const variables = (payload.variables && typeof payload.variables === 'object' ? payload.variables : {}) as Record<
    string,
    unknown
  >;
  return { doc, op, name: op.name?.value ?? null, variables, root: rootField(op) };
}

async function handle(parts: ServerParts, seq: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const startedAt = performance.now();
  const key = keyOf(parts, req.headers.authorization);
  const text = req.method === 'POST' ? await readBody(req, MAX_BODY) : null;
  parts.churn();
  const seen: Seen = { operation: null, after: null, upTo: null, complexity: null, fault: null, endpoint: null };
  const finish = (a: Answer, headers: Record<string, string>) => {
    sendAnswer(req, res, { status: a.status, body: a.body, headers: { ...headers, ...a.headers } }, {}, JSON_TYPE);
    const requests = key ? parts.requests.peek(key.id) : null;
    const { operation, after, upTo, complexity, fault } = seen;
    const entry = { seq, at: parts.clock.now().toISOString(), operation, after, upTo, keyId: key?.id ?? null };
    const outcome = { status: a.status, errorCode: a.code, fault, complexity, requests };
    appendLog(parts.log, { ...entry, ...outcome, startedAt, endedAt: performance.now() }, parts.logLimit);
    if (a.status === 200) listedPage(parts, seq, seen.operation, a.body);
  };
  if (!key) return finish(unauthenticated(), {});
  const parsed = parseRequest(parts, text);
  const headersNow = (cost: number | null) => {
    const ep = seen.endpoint;
    const endpoint: EndpointState | null = ep ? { name: ep.name, ...ep.bucket.peek(key.id) } : null;
    return rateHeaders(parts.requests.peek(key.id), parts.complexity.peek(key.id), cost, endpoint);
  };
  if ('status' in parsed) {
    parts.requests.spend(key.id, 1);
    return finish(parsed, headersNow(null));
  }
  seen.operation = parsed.name;
  seen.after = typeof parsed.variables.after === 'string' ? parsed.variables.after : null;
  seen.upTo = upToOf(parsed.variables.filter);
  const bucket = parsed.root ? parts.endpoints.get(parsed.root) : undefined;
  if (bucket && parsed.root) seen.endpoint = { name: parsed.root, bucket };
  const fragments = parsed.doc.definitions.filter(
    (d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION,
  );
  const complexity = queryComplexity(parts.schema, parsed.op, fragments, parsed.variables);
  seen.complexity = complexity;
  const stopped = await gatekeep(parts, key, seen, complexity);
  seen.fault = stopped.fault;
  if (stopped.answer) return finish(stopped.answer, headersNow(complexity));
  parts.requests.spend(key.id, 1);
  parts.complexity.spend(key.id, complexity);
  seen.endpoint?.bucket.spend(key.id, 1);
  finish(await run(parts, parsed, stopped.partial), headersNow(complexity));
}

/** What the log and the headers need of a request, filled in as it is read. */
interface Seen {
  operation: string | null;
  after: string | null;
  upTo: string | null;
  complexity: number | null;
  fault: LinearFaultKind | null;
  endpoint: { name: string; bucket: LeakyBucket } | null;
}

type Nodes = { nodes?: { id?: unknown }[] } | undefined;

/** Hands the ids of an answered page of `issues` (or of the root `comments`) to its churn hook. */
function listedPage(parts: ServerParts, seq: number, operation: string | null, body: unknown): void {
  const data = (body as { data?: { issues?: Nodes; comments?: Nodes } } | null)?.data;
  const ids = (nodes: Nodes) =>
    (nodes?.nodes ?? []).map((n) => n?.id).filter((id): id is string => typeof id === 'string');
  if (Array.isArray(data?.issues?.nodes)) parts.afterIssuesPage({ operation, ids: ids(data.issues), seq });
  else if (Array.isArray(data?.comments?.nodes)) parts.afterCommentsPage({ operation, ids: ids(data.comments), seq });
}

/** What answers a parsed request before it runs: too complex, a spent budget, an injected fault. */
async function gatekeep(
  parts: ServerParts,
  key: EmulatorKey,
  seen: Seen,
  complexity: number,
): Promise<{ answer: Answer | null; fault: LinearFaultKind | null; partial: boolean }> {
  const max = parts.rateLimit.maxQueryComplexity;
  if (complexity > max) {
    parts.requests.spend(key.id, 1);
    const msg = `Query too complex: complexity ${complexity} is over the maximum of ${max}`;
    return { answer: gqlError(400, 'QUERY_TOO_COMPLEX', 'graphql error', msg), fault: null, partial: false };
  }
  // A spent budget answers before any fault is drawn, so a counted fault is not used up unseen.
  const waitMs = Math.max(
    parts.requests.waitMs(key.id, 1),
    parts.complexity.waitMs(key.id, complexity),
    seen.endpoint?.bucket.waitMs(key.id, 1) ?? 0,
  );
  if (waitMs > 0) return { answer: rateLimited(parts.rateLimit.status, waitMs), fault: null, partial: false };
  const { fault, injected } = await parts.faults.meet(seen.operation ?? '');
  const drain = (holdSeconds?: number) => {
    parts.requests.drain(key.id, holdSeconds);
    return parts.requests.waitMs(key.id, 1);
  };
  if (fault?.kind === 'partial') return { answer: null, fault: injected, partial: true };
  return { answer: fault ? faultAnswer(fault, drain) : null, fault: injected, partial: false };
}

async function run(parts: ServerParts, req: Request, partial: boolean): Promise<Answer> {
  const result = await execute({
    schema: parts.schema,
    document: req.doc,
    rootValue: parts.root,
    contextValue: partial ? new PartialPlan() : undefined,
    variableValues: req.variables,
    operationName: req.name,
  });
  const code = result.errors?.[0]?.extensions?.code;
  return {
    status: result.errors && !result.data ? 400 : 200,
    body: result,
    code: typeof code === 'string' ? code : null,
  };
}
