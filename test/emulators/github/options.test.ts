/** Bad emulator options are refused before anything listens, with a ValidationError naming the field. */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/errors.js';
import { parseScale, SCALES, startGithubEmulator } from '../../../src/emulators/github/index.js';

describe('emulator options', () => {
  it('parses scale presets and key=value lists over the small preset', () => {
    expect(parseScale('bench')).toEqual(SCALES.bench);
    expect(parseScale('issues=500,pulls=100')).toEqual({ ...SCALES.small, issues: 500, pulls: 100 });
    expect(() => parseScale('issues=lots')).toThrow(/scale\.issues/);
    expect(() => parseScale('bugs=3')).toThrow(/scale: unknown entry "bugs=3"/);
    expect(() => parseScale('repos=0')).toThrow(/scale\.repos/);
  });

  it.each([
    [{ rateLimit: { limit: 0, windowSeconds: 10 } }, 'rateLimit.limit'],
    [{ rateLimit: { limit: 10, windowSeconds: 10, status: 500 as 403 } }, 'rateLimit.status'],
    [{ rateLimit: '10 per minute' }, 'rateLimit'],
    [{ seed: 1.5 }, 'seed'],
    [{ scale: { issues: -1 } }, 'scale.issues'],
    [{ tokens: [] }, 'tokens'],
    [
      {
        tokens: [
          { id: 'a', token: 't1' },
          { id: 'a', token: 't2' },
        ],
      },
      'tokens[1]',
    ],
    [{ faults: [{ kind: 'slow' as const, delayMs: -5 }] }, 'faults[0].delayMs'],
  ])('refuses %j naming %s', async (opts, field) => {
    const err: unknown = await startGithubEmulator(opts).then(
      async (e) => {
        await e.close();
        return null;
      },
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe(field);
  });
});
