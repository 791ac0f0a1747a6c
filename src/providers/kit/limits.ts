/**
 * Bounds on what a provider returns, for every provider on the kit:
 * - `maxResponseBytes`: one answer's body. The loop's fetch counts it as it streams in (decoded
 *   bytes, what would be held in memory) and stops reading, closing the connection, as soon as the
 *   count passes the bound (at once when `content-length` already says so). Bodies Octokit reads
 *   itself (its error bodies) go through the same fetch. The call then ends as a non-retryable
 *   `provider_error` naming the integration and the request, never the body.
 * - `unitMaxPages`: the pages one unit reads, over all its listings (pages.ts).
 */
import { providerError, type CallSubject } from './errors.js';

/** What a provider may return, per answer and per unit (SYNC_PROVIDER_MAX_RESPONSE_BYTES, SYNC_UNIT_MAX_PAGES). */
export interface ProviderLimits {
  /** Bytes of one answer's body. @default 32 MiB */
  maxResponseBytes: number;
  /** Pages one unit reads over all its listings. @default 10000 */
  unitMaxPages: number;
}

export const DEFAULT_PROVIDER_LIMITS: Readonly<ProviderLimits> = {
  maxResponseBytes: 32 * 1024 * 1024,
  unitMaxPages: 10_000,
};

/** An answer's body passed the bound: reading it stopped there. */
export class ResponseTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the answer is larger than ${limit} bytes`);
  }
}

/** Statuses whose Response has no body (a Response made with one would throw). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The bound on the bodies of one attempt's answers: `around(fetch)` is the fetch the attempt sends
 * with; `check(subject)` throws the call's `provider_error` once a body passed the bound (a sender
 * that swallows the read error, as Octokit does for error bodies, cannot hide it).
 */
export class ResponseBound {
  private passed: ResponseTooLargeError | null = null;

  constructor(readonly limit: number = DEFAULT_PROVIDER_LIMITS.maxResponseBytes) {}

  /** `fetchFn` whose answers' bodies are counted against the bound. */
  around(fetchFn: typeof globalThis.fetch): typeof globalThis.fetch {
    return async (input, init) => this.bounded(await fetchFn(input, init));
  }

  /** Throws the non-retryable `provider_error` of a body that passed the bound; else nothing. */
  check(subject: () => CallSubject): void {
    if (!this.passed) return;
    const detail = `: the answer is larger than ${this.limit} bytes (SYNC_PROVIDER_MAX_RESPONSE_BYTES)`;
    throw providerError(subject(), detail, this.passed);
  }

  private bounded(res: Response): Response {
    if (res.body === null || NULL_BODY.has(res.status)) return res;
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > this.limit) {
      const err = this.pass();
      void res.body.cancel(err).catch(() => {});
      throw err;
    }
    const out = new Response(this.counted(res.body), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
    // What a sender may read of the answer besides its body (Octokit: `url`).
    Object.defineProperty(out, 'url', { value: res.url });
    Object.defineProperty(out, 'redirected', { value: res.redirected });
    return out;
  }

  private pass(): ResponseTooLargeError {
    this.passed ??= new ResponseTooLargeError(this.limit);
    return this.passed;
  }

  /** `body` read on demand and counted; past the bound the source is cancelled and the read fails. */
  private counted(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    const reader = body.getReader();
    let bytes = 0;
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          const { done, value } = await reader.read();
          if (done) return controller.close();
          bytes += value.byteLength;
          if (bytes <= this.limit) return controller.enqueue(value);
          const err = this.pass();
          controller.error(err);
          await reader.cancel(err).catch(() => {});
        },
        cancel: (reason) => reader.cancel(reason),
      },
      { highWaterMark: 0 },
    );
  }
}
