/** A local webhook receiver (node:http on 127.0.0.1, a free port) that keeps every delivery it gets. */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** The body parsed (tests poke at it freely). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  /** What the receiver answered. */
  status: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Resolves once `n` deliveries arrived; throws after `ms`. */
  waitFor(n: number, ms?: number): Promise<void>;
  close(): Promise<void>;
}

/** Starts a receiver answering the `n`th request (0-based) with `status(n)` (default 202). */
export async function startReceiver(status: (n: number) => number = () => 202): Promise<Receiver> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const answer = status(received.length);
      received.push({ headers: req.headers, body, json: JSON.parse(body), status: answer });
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    waitFor: async (n, ms = 10_000) => {
      const deadline = Date.now() + ms;
      while (received.length < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} deliveries, got ${received.length}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Receivers started through the returned function, closed after each test of the calling file. */
export function receivers(): (status?: (n: number) => number) => Promise<Receiver> {
  let open: Receiver[] = [];
  afterEach(async () => {
    await Promise.all(open.map((r) => r.close()));
    open = [];
  });
  return async (status) => {
    const r = await startReceiver(status);
    open.push(r);
    return r;
  };
}

/** The deliveries grouped by id (`idHeader`): each id's bodies, in arrival order. */
export function byId(received: readonly Received[], idHeader: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of received) {
    const id = String(r.headers[idHeader]);
    out.set(id, [...(out.get(id) ?? []), r.body]);
  }
  return out;
}

/** A value's JSON type: `null`, `array`, or its typeof. */
export function jsonType(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

/**
 * The keys of `reference` that `ours` lacks, or holds with another JSON type (null on either side
 * matches anything: a nullable field), prefixed with `path`.
 */
export function shapeDiffs(reference: Record<string, unknown>, ours: Record<string, unknown>, path = ''): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(reference)) {
    if (!(k in ours)) out.push(`${path}${k}: missing`);
    else if (v !== null && ours[k] !== null && jsonType(v) !== jsonType(ours[k])) {
      out.push(`${path}${k}: ${jsonType(ours[k])}, expected ${jsonType(v)}`);
    }
  }
  return out;
}
