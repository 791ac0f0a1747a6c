/**
 * The gated call loop every provider client runs through: budgets gated in order (and released when
 * a later one refuses), transient failures retried then `provider_error`, an abort ending the call
 * with its reason, a limit signal ending in `RateLimitError`, and every answer's figures observed.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock.js';
import { classifyError, NonRetryableError, RateLimitError } from '../../../src/errors.js';
import {
  createCaller,
  type Answer,
  type AnswerRules,
  type CallBudget,
  type ClientOptions,
  type Send,
} from '../../../src/providers/kit/call.js';
import { numberHeader } from '../../../src/providers/kit/headers.js';
import type { BudgetObservation } from '../../../src/store/rateBudgets.js';

const T0 = Date.UTC(2026, 2, 2, 12);
const LIFTS = new Date(T0 + 90_000);

/** A budget that writes what the loop does with it into a shared log. */
function budget(name: string, log: string[], refuse?: Error) {
  const seen: BudgetObservation[] = [];
  const b: CallBudget = {
    gate: () => {
      log.push(`gate ${name}`);
      return refuse ? Promise.reject(refuse) : Promise.resolve();
    },
    done: () => void log.push(`done ${name}`),
    observe: (o) => {
      log.push(`observe ${name}`);
      seen.push(o);
      return Promise.resolve();
    },
  };
  return { b, seen };
}

/** A test provider: the body's text is the value of a 2xx; a 429 with `retry-after` is a limit. */
const rules: AnswerRules<null, string> = {
  judge: (a, now) => {
    if (a.status < 300) return { ok: true, value: a.body as string };
    const after = numberHeader(a.headers, 'retry-after');
    const limit = after === null ? null : { kind: 'primary' as const, liftsAt: new Date(now.getTime() + after * 1000) };
    return { ok: false, status: a.status, limit, says: String(a.body) };
  },
  // The first budget reads `remaining`; the second only `cost`, when sent.
  observations: (h, now, limit) => [
    {
      remaining: numberHeader(h, 'remaining'),
      limit: 100,
      resetAt: null,
      limitedUntil: limit?.liftsAt ?? null,
      observedAt: now,
    },
    numberHeader(h, 'cost') === null
      ? null
      : { remaining: numberHeader(h, 'cost'), limit: null, resetAt: null, limitedUntil: null, observedAt: now },
  ],
};

function client(signal = new AbortController().signal): ClientOptions {
  return {
    subject: 'test integration "acme"',
    clock: new ManualClock(T0),
    signal,
    logger: pino({ level: 'silent' }),
    retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 },
  };
}

type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | Error;

/** A send answering `replies` in turn (an Error: no answer); it counts its calls. */
function sender(replies: Reply[], log: string[] = []) {
  const sent = { count: 0 };
  const send: Send<null> = () => {
    sent.count++;
    log.push('send');
    const r = replies.shift() ?? { status: 200, body: 'default' };
    if (r instanceof Error) return Promise.reject(r);
    const answer: Answer<null> = { status: r.status, headers: new Headers(r.headers), body: r.body ?? null, raw: null };
    return Promise.resolve(answer);
  };
  return { send, sent };
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => expect.fail('expected the call to fail'),
    (e: unknown) => e,
  );
}

describe('the gated call loop', () => {
  it('gates each budget in order, observes each, and only then releases them (in flight until counted)', async () => {
    const log: string[] = [];
    const first = budget('requests', log);
    const second = budget('complexity', log);
    const call = createCaller(client(), [first.b, second.b], rules);
    const stream = new Response('the value').body;
    const { send } = sender([{ status: 200, body: stream, headers: { remaining: '41', cost: '7' } }], log);
    expect(await call('GET /x', send)).toBe('the value');
    expect(log).toEqual([
      'gate requests',
      'gate complexity',
      'send',
      'observe requests',
      'observe complexity',
      'done requests',
      'done complexity',
    ]);
    expect(first.seen[0]).toMatchObject({ remaining: 41, limitedUntil: null, observedAt: new Date(T0) });
    expect(second.seen[0]).toMatchObject({ remaining: 7 });
  });

  it('a later budget refusing releases the earlier ones and sends nothing', async () => {
    const log: string[] = [];
    const refusal = new RateLimitError(5000, 'complexity spent');
    const call = createCaller(client(), [budget('requests', log).b, budget('complexity', log, refusal).b], rules);
    const { send, sent } = sender([]);
    expect(await rejection(call('GET /x', send))).toBe(refusal);
    expect(log).toEqual(['gate requests', 'gate complexity', 'done requests']);
    expect(sent.count).toBe(0);
  });

  it('retries no answer and 5xx in place, each attempt gated, then ends as provider_error', async () => {
    const log: string[] = [];
    const call = createCaller(client(), [budget('requests', log).b], rules);
    const flaky = sender([
      new TypeError('fetch failed'),
      { status: 502, body: 'bad gateway' },
      { status: 200, body: 'ok' },
    ]);
    expect(await call('GET /x', flaky.send)).toBe('ok');
    expect(flaky.sent.count).toBe(3);
    expect(log.filter((l) => l === 'gate requests')).toHaveLength(3);
    expect(log.filter((l) => l === 'done requests')).toHaveLength(3);

    const down = sender([{ status: 503, body: 'a' }, new TypeError('fetch failed'), { status: 500, body: 'last' }]);
    const err = await rejection(call('GET /down', down.send));
    expect(err).toBeInstanceOf(NonRetryableError);
    expect(classifyError(err)).toBe('provider_error');
    expect((err as Error).message).toBe('test integration "acme": GET /down: provider unavailable after retries');
    expect(((err as Error).cause as Error).message).toBe('HTTP 500: last');
    expect(down.sent.count).toBe(3);
  });

  it('a body that cannot be read counts as no answer: retried', async () => {
    const broken = new ReadableStream<Uint8Array>({ pull: (c) => c.error(new Error('connection reset')) });
    const call = createCaller(client(), [], rules);
    const { send, sent } = sender([
      { status: 200, body: broken },
      { status: 200, body: 'second' },
    ]);
    expect(await call('GET /x', send)).toBe('second');
    expect(sent.count).toBe(2);
  });

  it('a limit signal ends the call with RateLimitError at once, the limit observed', async () => {
    const log: string[] = [];
    const requests = budget('requests', log);
    const call = createCaller(client(), [requests.b], rules);
    const { send, sent } = sender([
      { status: 429, body: 'slow down', headers: { 'retry-after': '90', remaining: '0' } },
    ]);
    const err = await rejection(call('GET /x', send));
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).liftsAt).toEqual(LIFTS);
    expect((err as RateLimitError).retryAfterMs).toBe(90_000);
    expect(sent.count).toBe(1);
    expect(requests.seen).toEqual([
      { remaining: 0, limit: 100, resetAt: null, limitedUntil: LIFTS, observedAt: new Date(T0) },
    ]);
  });

  it('other refusals: the provider’s own error when it gives one, else provider_error; not retried', async () => {
    const log: string[] = [];
    const requests = budget('requests', log);
    const call = createCaller(client(), [requests.b], rules);
    const plain = sender([{ status: 422, body: 'no', headers: { remaining: '12' } }]);
    const err = await rejection(call('POST /y', plain.send));
    expect(classifyError(err)).toBe('provider_error');
    expect((err as Error).message).toBe('test integration "acme": POST /y: the provider refused the request');
    expect(plain.sent.count).toBe(1);
    expect(requests.seen[0]).toMatchObject({ remaining: 12, limitedUntil: null });

    const own = new Error('the provider’s own words');
    const refusing = createCaller(client(), [], {
      ...rules,
      judge: (a) => ({ ok: false, status: a.status, limit: null, refused: () => own }),
    });
    expect(await rejection(refusing('POST /y', sender([{ status: 409 }]).send))).toBe(own);
    const auth = await rejection(refusing('POST /y', sender([{ status: 401 }]).send));
    expect(classifyError(auth)).toBe('auth');
  });

  it('an abort ends the call in flight with the signal’s reason, the budget released', async () => {
    const log: string[] = [];
    const ac = new AbortController();
    const call = createCaller(client(ac.signal), [budget('requests', log).b], rules);
    const reason = new Error('unit cancelled');
    const hanging: Send<null> = (signal) =>
      new Promise((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
        ac.abort(reason);
      });
    expect(await rejection(call('GET /slow', hanging))).toBe(reason);
    expect(log).toEqual(['gate requests', 'done requests']);
  });
});
