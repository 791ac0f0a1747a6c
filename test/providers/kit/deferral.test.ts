/**
 * The deferral policy of a rate-limited unit (SPEC §5.6, §9): `retrying` until the limit lifts plus
 * a jitter of a tenth of the wait, 250 ms to 5 s (at most the spread a budget hands it: Jira's
 * 0.5 s); SYNC_RATE_LIMIT_MAX_DEFERRALS and
 * SYNC_RATE_LIMIT_MAX_WAIT_SECONDS bound it.
 * The checkpoint a deferral carries reaches the next attempt; a success clears it; one over 4 KiB
 * is dropped with a warning and the unit is deferred all the same.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { RateLimitError } from '../../../src/errors.js';
import type { TaskMessage } from '../../../src/broker/types.js';
import { Harness, SECOND, T0 } from '../../crash/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function oneUnit(harness: Harness): Promise<{ runId: string; unitId: string; msg: TaskMessage }> {
  const integ = await harness.integration();
  const { syncRunId: runId } = await harness.backfill(integ, 7);
  await harness.pass();
  for (const m of await harness.take('dispatch_sync_run')) await harness.deliver(m);
  const [msg] = await harness.take('run_sync_unit');
  return { runId, unitId: msg!.payload.unitId!, msg: msg! };
}

/** Lets the deferred unit come due and delivers its next attempt; returns that attempt's outcome. */
async function nextAttempt(harness: Harness, unitId: string): Promise<unknown> {
  harness.clock.set((await harness.unit(unitId)).available_at!);
  await harness.pass();
  for (const m of await harness.take('dispatch_sync_run')) await harness.deliver(m);
  const [again] = await harness.take('run_sync_unit');
  return harness.deliver(again!);
}

describe('rate-limit deferral policy', () => {
  it('defers to the absolute lift time plus the jitter, a tenth of the wait within 250 ms to 5 s', async () => {
    h = await Harness.open({ random: () => 0.9 });
    const { unitId, msg } = await oneUnit(h);
    const liftsAt = new Date(T0 + 42 * 60 * SECOND); // a primary limit 42 min away: no 600 s chunk
    h.provider.throwOnce(unitId, new RateLimitError(999_999_999, 'limited', { liftsAt }));
    expect(await h.deliver(msg)).toBe('retrying');
    expect((await h.unit(unitId)).available_at!.getTime()).toBe(liftsAt.getTime() + 4500);

    h.provider.throwOnce(unitId, new RateLimitError(200));
    expect(await nextAttempt(h, unitId)).toBe('retrying');
    const u = await h.unit(unitId);
    expect(u.available_at!.getTime() - h.clock.now().getTime()).toBe(200 + 225); // 0.9 of 250 ms

    h.provider.throwOnce(unitId, new RateLimitError(20 * SECOND));
    expect(await nextAttempt(h, unitId)).toBe('retrying');
    const w = await h.unit(unitId);
    expect(w.available_at!.getTime() - h.clock.now().getTime()).toBe(20 * SECOND + 1800); // 0.9 of 2 s
    expect(w.rate_limit_deferrals).toBe(3);
  });

  it('a deferral with its own spread (a shared budget: its probe orders the units) jitters within it', async () => {
    h = await Harness.open({ random: () => 0.9 });
    const { unitId, msg } = await oneUnit(h);
    const liftsAt = new Date(T0 + 60 * SECOND);
    const spent = new RateLimitError(0, 'budget spent', { liftsAt, spreadMs: 500 });
    h.provider.throwOnce(unitId, spent.withCheckpoint(null));
    expect(await h.deliver(msg)).toBe('retrying');
    expect((await h.unit(unitId)).available_at!.getTime()).toBe(liftsAt.getTime() + 450);
  });

  it('SYNC_RATE_LIMIT_MAX_DEFERRALS: the deferral past the setting fails the unit rate_limit', async () => {
    h = await Harness.open({ settings: { rateLimitMaxDeferrals: 2 } });
    const { runId, unitId, msg } = await oneUnit(h);
    for (let i = 0; i < 3; i++) h.provider.throwOnce(unitId, new RateLimitError(10 * SECOND));
    expect(await h.deliver(msg)).toBe('retrying');
    expect(await nextAttempt(h, unitId)).toBe('retrying');
    expect(await nextAttempt(h, unitId)).toBe('failed');
    const failed = await h.unit(unitId);
    expect(failed).toMatchObject({ status: 'failed', rate_limit_deferrals: 2 });
    expect(failed.result).toMatchObject({ error_category: 'rate_limit' });
    expect((await h.settle(runId)).status).toBe('failed');
  });

  it('SYNC_RATE_LIMIT_MAX_WAIT_SECONDS: a deferral whose wait would pass the total fails at once', async () => {
    h = await Harness.open({ settings: { rateLimitMaxWaitMs: 600 * SECOND } });
    const { unitId, msg } = await oneUnit(h);
    h.provider.throwOnce(unitId, new RateLimitError(300 * SECOND));
    h.provider.throwOnce(unitId, new RateLimitError(299 * SECOND));
    h.provider.throwOnce(unitId, new RateLimitError(301 * SECOND));
    expect(await h.deliver(msg)).toBe('retrying'); // waits 300 s
    expect(await nextAttempt(h, unitId)).toBe('retrying'); // 300 s waited + 299 s ≤ 600 s
    expect(await nextAttempt(h, unitId)).toBe('failed'); // 599 s waited + 301 s > 600 s
    const failed = await h.unit(unitId);
    expect(failed.result).toMatchObject({ error_category: 'rate_limit' });
    expect(failed.rate_limit_deferrals).toBe(2);
  });
});

describe('the checkpoint a deferral carries', () => {
  const CP = { v: 1, after: 'cursor-2', pages: 2, counts: { work_items: 20 } };

  it('reaches the next attempt (and only it); a success clears it', async () => {
    h = await Harness.open();
    const { unitId, msg } = await oneUnit(h);
    h.provider.throwOnce(unitId, new RateLimitError(10 * SECOND, 'limited', { checkpoint: CP }));
    expect(await h.deliver(msg)).toBe('retrying');
    expect((await h.unit(unitId)).resume_checkpoint).toEqual(CP);

    expect(await nextAttempt(h, unitId)).toBe('success');
    expect(h.provider.calls.map((c) => [c.attempt, c.checkpoint])).toEqual([
      [1, null],
      [2, CP],
    ]);
    expect(await h.unit(unitId)).toMatchObject({ status: 'success', resume_checkpoint: null });
  });

  it('a later deferral without one starts the attempt after it over', async () => {
    h = await Harness.open();
    const { unitId, msg } = await oneUnit(h);
    h.provider.throwOnce(unitId, new RateLimitError(10 * SECOND, 'limited', { checkpoint: CP }));
    h.provider.throwOnce(unitId, new RateLimitError(10 * SECOND));
    expect(await h.deliver(msg)).toBe('retrying');
    expect(await nextAttempt(h, unitId)).toBe('retrying');
    expect((await h.unit(unitId)).resume_checkpoint).toBeNull();
    expect(await nextAttempt(h, unitId)).toBe('success');
    expect(h.provider.calls.map((c) => c.checkpoint)).toEqual([null, CP, null]);
  });

  it('one over 4 KiB is dropped with a warning; the unit is deferred all the same', async () => {
    h = await Harness.open();
    const lines: string[] = [];
    h.ctx.logger = pino({ level: 'warn' }, { write: (l: string) => void lines.push(l) });
    const { unitId, msg } = await oneUnit(h);
    const big = { v: 1, after: 'x'.repeat(4096) };
    h.provider.throwOnce(unitId, new RateLimitError(10 * SECOND, 'limited', { checkpoint: big }));
    expect(await h.deliver(msg)).toBe('retrying');
    expect(await h.unit(unitId)).toMatchObject({
      status: 'retrying',
      rate_limit_deferrals: 1,
      resume_checkpoint: null,
    });
    const warned = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'unit checkpoint dropped');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({
      unitId,
      reason: 'too_large',
      bytes: Buffer.byteLength(JSON.stringify(big)),
      limit: 4096,
    });
    expect(lines.join('\n')).not.toContain('x'.repeat(100)); // its size is logged, never its content
    expect(await nextAttempt(h, unitId)).toBe('success');
    expect(h.provider.calls.map((c) => c.checkpoint)).toEqual([null, null]);
  });
});
