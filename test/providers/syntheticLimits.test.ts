/**
 * The synthetic provider's config bounds and its fault-injection gate: every numeric knob has an
 * upper bound, `impersonate` is a provider name, and the fault knobs pass `validateConfig` only
 * with `allowFaultInjection` (stored configs are still read with them).
 */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors.js';
import {
  createSyntheticProvider,
  FAULT_KNOBS,
  parseSyntheticConfig,
  SYNTHETIC_LIMITS,
  validateSyntheticConfig,
} from '../../src/providers/synthetic.js';

const provider = createSyntheticProvider();

function fieldOf(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).field;
  }
}

describe('synthetic config bounds', () => {
  it.each([
    ['itemsPerDay', SYNTHETIC_LIMITS.itemsPerDay, 1000],
    ['latencyMs', SYNTHETIC_LIMITS.latencyMs, 600_000],
    ['hangMs', SYNTHETIC_LIMITS.hangMs, 600_000],
    ['rateLimitRetryAfterMs', SYNTHETIC_LIMITS.rateLimitRetryAfterMs, 3_600_000],
    ['seed', SYNTHETIC_LIMITS.seed, 2 ** 31 - 1],
  ] as const)('%s accepts its maximum and refuses one more', (knob, limit, documented) => {
    expect(limit).toBe(documented);
    expect(parseSyntheticConfig({ [knob]: limit })[knob]).toBe(limit);
    expect(fieldOf(() => parseSyntheticConfig({ [knob]: limit + 1 }))).toBe(`config.${knob}`);
  });

  it.each([
    ['itemsPerDay', 2 ** 53 - 1],
    ['hangMs', 1e12],
    ['latencyMs', Number.POSITIVE_INFINITY],
    ['seed', -(2 ** 31) - 1],
    ['seed', Number.MAX_SAFE_INTEGER],
  ])('refuses %s = %d', (knob, value) => {
    expect(fieldOf(() => parseSyntheticConfig({ [knob]: value }))).toBe(`config.${knob}`);
  });

  it('impersonate is a provider name of at most 64 characters', () => {
    const longest = `a${'b'.repeat(63)}`;
    expect(parseSyntheticConfig({ impersonate: longest }).impersonate).toBe(longest);
    expect(parseSyntheticConfig({ impersonate: 'git-hub_2' }).impersonate).toBe('git-hub_2');
    for (const bad of [`${longest}c`, 'x'.repeat(10_000), 'Linear', '9lives', 'a b', 'linear\u0000', 'linear\n', 7]) {
      expect(fieldOf(() => parseSyntheticConfig({ impersonate: bad }))).toBe('config.impersonate');
    }
  });
});

describe('the fault-injection gate', () => {
  it('names the fault knobs', () => {
    expect([...FAULT_KNOBS].sort()).toEqual(['failRate', 'hangMs', 'hangRate', 'rateLimitRate']);
  });

  it.each(FAULT_KNOBS.map((k) => [k]))('validateConfig refuses %s without allowFaultInjection', (knob) => {
    const config = { itemsPerDay: 2, [knob]: knob === 'hangMs' ? 100 : 0.5 };
    expect(fieldOf(() => provider.validateConfig!(config))).toBe(`config.${knob}`);
    expect(fieldOf(() => provider.validateConfig!(config, { allowFaultInjection: false }))).toBe(`config.${knob}`);
    expect(fieldOf(() => provider.validateConfig!(config, { allowFaultInjection: true }))).toBeNull();
    // A stored config is read as it is: the gate is at creation.
    expect(parseSyntheticConfig(config)[knob]).toBe(config[knob]);
  });

  it('the refusal says how to allow it', () => {
    expect(() => validateSyntheticConfig({ failRate: 0.1 }, { allowFaultInjection: false })).toThrow(
      /config\.failRate: .*SYNCRELAY_ALLOW_FAULT_INJECTION=true/,
    );
  });

  it('configs without fault knobs pass either way', () => {
    const config = { itemsPerDay: 3, latencyMs: 5, seed: 9, impersonate: 'linear', rateLimitRetryAfterMs: 10 };
    expect(fieldOf(() => provider.validateConfig!(config))).toBeNull();
    expect(fieldOf(() => provider.validateConfig!(config, { allowFaultInjection: true }))).toBeNull();
  });

  it('bounds are checked before the gate, with fault injection allowed too', () => {
    expect(fieldOf(() => provider.validateConfig!({ hangMs: 1e12 }, { allowFaultInjection: true }))).toBe(
      'config.hangMs',
    );
  });
});
