/** The one error shape, `{"error":{"code","message","details"}}`, and how every failure maps to it. */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { IntegrationBusyError, NotFoundError, RunConflictError, SyncRelayError, ValidationError } from '../errors.js';
import { SecretError } from '../secrets/errors.js';
import type { ErrorBodyT } from './contracts/common.js';

/** A failure the API answers with `status`; `code` is stable, `details` is JSON. */
export class ApiError extends SyncRelayError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/** Where a bad value was found. */
export type InputLocation = 'params' | 'query' | 'body' | 'header';

/** A 400 naming the field. */
export function invalidInput(field: string, message: string, location: InputLocation): ApiError {
  return new ApiError(400, 'invalid_input', `${field}: ${message}`, { field, location });
}

/** What an unknown key must look like to be named in an answer: a plausible field name. */
const FIELD_NAME_RE = /^[A-Za-z][A-Za-z0-9_-]{0,31}$/;

/** The first zod issue as a 400 naming its field (`a.b.0`; an unknown key names the key). */
export function fromZodError(err: z.ZodError, location: InputLocation): ApiError {
  const issue = err.issues[0]!;
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    // A key is client text too: one that does not look like a field name (a pasted token?) is not echoed.
    if (!FIELD_NAME_RE.test(key)) {
      return invalidInput(path.length > 0 ? path.join('.') : location, 'has a field that is not known', location);
    }
    return invalidInput([...path, key].join('.'), 'is not a known field', location);
  }
  const field = path.length > 0 ? path.join('.') : location;
  return invalidInput(field, issue.message, location);
}

/**
 * Fastify's own 4xx errors (routing, content-type parsing, body size) by code. Their messages are
 * fixed: none repeats the URL, the content type or any other part of the request.
 */
const FRAMEWORK_ERRORS: Record<string, { status: number; code: string; message: string; field?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', message: 'request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'unsupported_media_type',
    message: 'request body must be application/json',
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    code: 'invalid_json',
    message: 'body: must not be empty with content-type application/json',
    field: 'body',
  },
  FST_ERR_CTP_INVALID_JSON_BODY: {
    status: 400,
    code: 'invalid_json',
    message: 'body: is not valid JSON',
    field: 'body',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    code: 'invalid_request',
    message: 'content-length does not match the body',
  },
  FST_ERR_BAD_URL: { status: 400, code: 'invalid_url', message: 'the URL is not valid percent-encoded UTF-8' },
  FST_ERR_INVALID_URL: { status: 400, code: 'invalid_url', message: 'the URL is not valid' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, code: 'uri_too_long', message: 'a segment of the path is too long' },
};

/** Maps anything thrown while handling a request to the status and body the client sees. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof ValidationError) {
    return new ApiError(400, 'invalid_input', err.message, { field: err.field }, { cause: err });
  }
  if (err instanceof NotFoundError) {
    return new ApiError(
      404,
      'not_found',
      `${err.entity} not found`,
      { entity: err.entity, id: err.id },
      { cause: err },
    );
  }
  if (err instanceof RunConflictError) {
    return new ApiError(
      409,
      'run_conflict',
      `a ${err.mode} run of this integration has not finished; cancel it, wait, or send "force": true`,
      { existing_run_id: err.existingRunId, mode: err.mode },
      { cause: err },
    );
  }
  if (err instanceof IntegrationBusyError) {
    return new ApiError(409, 'integration_busy', err.message, { live_runs: err.liveRuns }, { cause: err });
  }
  if (err instanceof SecretError && err.code === 'secret_key_missing') {
    // The server's setting, not the request, is missing; the message names it and nothing secret.
    return new ApiError(422, err.code, err.message, { field: 'credential' }, { cause: err });
  }
  const fe = err as Partial<FastifyError> | null;
  const known = typeof fe?.code === 'string' ? FRAMEWORK_ERRORS[fe.code] : undefined;
  if (known) {
    return new ApiError(known.status, known.code, known.message, known.field ? { field: known.field } : {}, {
      cause: err,
    });
  }
  if (err instanceof SyntaxError && fe?.statusCode === 400) {
    return new ApiError(400, 'invalid_json', 'body: is not valid JSON', { field: 'body' }, { cause: err });
  }
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status >= 400 && status < 500) {
    // Another framework 4xx: its own message may quote the request, so it is not passed on.
    return new ApiError(status, 'invalid_request', 'invalid request', {}, { cause: err });
  }
  return new ApiError(
    500,
    'internal_error',
    'internal error; the request id is in the x-request-id header',
    {},
    { cause: err },
  );
}

export function errorBody(e: ApiError): ErrorBodyT {
  return { error: { code: e.code, message: e.message, details: e.details } };
}

/** Fastify's error handler: one shape, no stack traces, 5xx logged with the request id. */
export function handleError(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const e = toApiError(err);
  if (e.status >= 500) {
    request.log.error({ err }, 'request failed');
    e.details.request_id = request.id;
  } else {
    request.log.info({ code: e.code, status: e.status }, e.message);
  }
  if (e.status === 401) reply.header('www-authenticate', 'Bearer');
  void reply.status(e.status).type('application/json; charset=utf-8').send(errorBody(e));
}
