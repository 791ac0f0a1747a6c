/**
 * The HTTP plumbing every emulator's front shares: numbering requests and turning a failed
 * handler into a 500, reading a body, writing an answer, keeping the request log bounded.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** An answer before it is written: a JSON-serialisable body, or a string sent as it is. */
export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  contentType?: string;
}

type Handle = (seq: number, req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * A request listener that numbers requests from 1 and runs `handle`; when it fails, `fail` answers
 * (unless headers went out already) and the connection is dropped.
 */
export function requestHandler(handle: Handle, fail: (seq: number, req: IncomingMessage, res: ServerResponse) => void) {
  let seq = 0;
  return (req: IncomingMessage, res: ServerResponse): void => {
    const n = ++seq;
    handle(n, req, res).catch((err: unknown) => {
      if (!res.headersSent) fail(n, req, res);
      res.destroy(err instanceof Error ? err : undefined);
    });
  };
}

/** The request body as text; null when it is longer than `maxBytes`. */
export async function readBody(req: IncomingMessage, maxBytes = Number.POSITIVE_INFINITY): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Writes `answer` over the `base` headers (its own headers win), with `contentType` unless the
 * answer names one, and a content length. A 304 and a HEAD request get no body.
 */
export function sendAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  answer: Answer,
  base: Record<string, string>,
  contentType: string,
): void {
  const text = answer.status === 304 ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
  const headers: Record<string, string | number> = {
    ...base,
    'content-type': answer.contentType ?? contentType,
    ...answer.headers,
  };
  if (answer.status !== 304) headers['content-length'] = Buffer.byteLength(text);
  res.writeHead(answer.status, headers);
  res.end(req.method === 'HEAD' || answer.status === 304 ? undefined : text);
}

/** Appends to a request log, dropping the oldest entries once it holds a tenth more than `limit`. */
export function appendLog<E>(log: E[], entry: E, limit: number): void {
  log.push(entry);
  if (log.length > limit * 1.1) log.splice(0, log.length - limit);
}

/** Adds one to `counts[key]`. */
export function tally(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}
