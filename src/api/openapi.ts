/** The OpenAPI 3.1 document, generated from the contract table (JSON Schema 2020-12 by zod). */
import { z } from 'zod';
import { ErrorBody } from './contracts/common.js';
import type { Endpoint } from './contracts/endpoint.js';
import { endpoints } from './contracts/endpoints.js';

type Json = Record<string, unknown>;

const STATUS_TEXT: Record<number, string> = {
  400: 'invalid input (details.field names it); nothing was written',
  401: 'missing, invalid or revoked API token',
  403: 'the token lacks the required scope',
  404: "no such resource in the token's org",
  409:
    'run_conflict: a run of this integration and mode has not finished (details.existing_run_id); ' +
    'too_many_live_runs: the integration has SYNC_INTEGRATION_MAX_LIVE_RUNS live runs',
  413: 'request body too large',
  415: 'request body is not application/json (text/plain and every other type are refused)',
  422:
    'Idempotency-Key reused with a different request; or run_too_large: the run would plan more units than ' +
    'SYNC_RUN_MAX_UNITS (details name the count, the cap and how to narrow the request)',
  429: "rate limit of the token, or of the client address's failed authentications, exceeded (see Retry-After)",
  503: 'not ready (details.checks names what is down)',
};

/** Converts a schema, moving its named sub-schemas into `components` and pointing refs there. */
function toSchema(schema: z.ZodType, io: 'input' | 'output', components: Json): Json {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
  const defs = (json.$defs ?? {}) as Record<string, Json>;
  delete json.$defs;
  delete json.$schema;
  for (const [id, def] of Object.entries(defs)) components[id] ??= rewriteRefs(def);
  const rewritten = rewriteRefs(json) as Json;
  const id = z.globalRegistry.get(schema)?.id;
  if (typeof id !== 'string') return rewritten;
  delete rewritten.id;
  components[id] ??= rewritten;
  return { $ref: `#/components/schemas/${id}` };
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = k === '$ref' && typeof v === 'string' ? v.replace('#/$defs/', '#/components/schemas/') : rewriteRefs(v);
  }
  return out;
}

function parameters(e: Endpoint, components: Json): Json[] {
  const out: Json[] = [];
  for (const [where, schema] of [
    ['path', e.params],
    ['query', e.query],
  ] as const) {
    const json = toSchema(schema, 'input', components);
    const required = new Set((json.required as string[] | undefined) ?? []);
    for (const [name, s] of Object.entries((json.properties ?? {}) as Record<string, Json>)) {
      out.push({ name, in: where, required: where === 'path' || required.has(name), schema: s });
    }
  }
  if (e.idempotent) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Replays the first successful answer for the same key and body (header Idempotent-Replayed: true); ' +
        'the same key with another body is a 422.',
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
    });
  }
  return out;
}

function operation(e: Endpoint, components: Json): Json {
  const responses: Json = {
    [e.success.status]: {
      description: e.success.description,
      content: { 'application/json': { schema: toSchema(e.success.schema, 'output', components) } },
    },
  };
  for (const status of e.errors) {
    responses[status] = {
      description: STATUS_TEXT[status] ?? 'error',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }
  const op: Json = {
    operationId: e.operationId,
    summary: e.summary,
    tags: e.tags,
    parameters: parameters(e, components),
    responses,
  };
  if (e.description) op.description = e.description;
  if (e.body) {
    const optional = e.body.safeParse(undefined).success;
    op.requestBody = {
      required: !optional,
      content: { 'application/json': { schema: toSchema(e.body, 'input', components) } },
    };
  }
  op.security = e.scope === 'public' ? [] : [{ bearer: [] }];
  if (e.scope !== 'public') op['x-required-scope'] = e.scope;
  return op;
}

/** Builds the document (call once; it is plain JSON). */
export function buildOpenApiDocument(info: { version: string; serverUrl?: string }): Json {
  const components: Json = {};
  toSchema(ErrorBody, 'output', components);
  const paths: Record<string, Json> = {};
  for (const e of Object.values(endpoints) as Endpoint[]) {
    const path = e.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    paths[path] ??= {};
    paths[path][e.method.toLowerCase()] = operation(e, components);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'syncrelay',
      version: info.version,
      description:
        'Durable sync engine API. Bearer API tokens are scoped to one org and carry scopes (read, trigger, ' +
        "admin; admin holds all). Another org's ids answer 404. Every error answers " +
        '{"error":{"code","message","details"}}, including those given before any route: a path no route has ' +
        '(404 not_found), a known path with another method (405 method_not_allowed, with an Allow header), a ' +
        'URL that is not valid percent-encoded UTF-8 (400 invalid_url), an over-long path segment (414 ' +
        'uri_too_long). Request bodies are JSON only (415 unsupported_media_type otherwise). No error message ' +
        'repeats the URL or body that was sent.',
    },
    ...(info.serverUrl ? { servers: [{ url: info.serverUrl }] } : {}),
    components: {
      schemas: components,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'an API token: sr_…' } },
    },
    paths,
  };
}
