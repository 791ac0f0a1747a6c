/** Emulator scales: a named preset or `key=value,…` over the small preset, each value bounded. */
import { ValidationError } from '../../errors.js';

/** What every emulator's scale has (each adds its own containers and counts). */
export interface CommonScale {
  /** Issues in all, split over the repositories, projects or teams. */
  issues: number;
  /** Most comments one issue gets (uniform from 0). */
  maxComments: number;
  /** Days before `now` the data spreads over. */
  days: number;
}

/** One emulator's scales: its presets, each key's maximum, and the keys that must be at least 1. */
export interface ScaleRules<S extends Record<keyof S, number>> {
  presets: Readonly<Record<string, S>> & { readonly small: S };
  max: Readonly<S>;
  atLeastOne: readonly (keyof S)[];
}

/** `small`, `medium`, `bench` (any preset name) or `issues=20000,teams=4` over `presets.small`. */
export function parseScaleText<S extends Record<keyof S, number>>(text: string, rules: ScaleRules<S>): S {
  if (Object.hasOwn(rules.presets, text)) return { ...rules.presets[text]! };
  const scale: S = { ...rules.presets.small };
  for (const part of text.split(',')) {
    const [key, raw] = part.split('=').map((s) => s.trim());
    if (!key || !(key in scale) || raw === undefined) {
      throw new ValidationError('scale', `unknown entry "${part}" (keys: ${Object.keys(scale).join(', ')})`);
    }
    scale[key as keyof S] = Number(raw) as S[keyof S];
  }
  return checkScale(scale, rules);
}

/** Every key an integer from its minimum (1 for `atLeastOne`, else 0) to its maximum. */
export function checkScale<S extends Record<keyof S, number>>(scale: S, rules: ScaleRules<S>): S {
  for (const key of Object.keys(rules.max) as (keyof S)[]) {
    const v = scale[key];
    const min = rules.atLeastOne.includes(key) ? 1 : 0;
    if (!Number.isInteger(v) || v < min || v > rules.max[key]) {
      throw new ValidationError(
        `scale.${String(key)}`,
        `expected an integer from ${min} to ${rules.max[key]}, got ${v}`,
      );
    }
  }
  return scale;
}

/** The `scale` option: the small preset when absent, text parsed, a partial scale over the small preset. */
export function resolveScale<S extends Record<keyof S, number>>(
  given: Partial<S> | string | undefined,
  rules: ScaleRules<S>,
): S {
  if (given === undefined) return { ...rules.presets.small };
  if (typeof given === 'string') return parseScaleText(given, rules);
  return checkScale({ ...rules.presets.small, ...given }, rules);
}

/**
 * Scale rules written as a table: `columns` names the keys in order; each row is a preset
 * (`small` is required and the base of `key=value` text) or `max`, the bounds; `atLeastOne` lists
 * the keys that must be 1 or more.
 */
export function scaleTable<S extends Record<keyof S, number>, P extends string>(
  columns: readonly (keyof S)[],
  rows: Readonly<Record<P | 'small' | 'max', readonly number[]>>,
  atLeastOne: readonly (keyof S)[],
): ScaleRules<S> & { presets: Readonly<Record<P | 'small', S>> } {
  const scaleOf = (name: string, values: readonly number[]): S => {
    if (values.length !== columns.length) throw new Error(`scale row ${name} needs ${columns.length} values`);
    return Object.fromEntries(columns.map((key, i) => [key, values[i]])) as S;
  };
  const presets = Object.fromEntries(
    Object.entries<readonly number[]>(rows)
      .filter(([name]) => name !== 'max')
      .map(([name, values]) => [name, scaleOf(name, values)]),
  ) as Record<P | 'small', S>;
  return { presets, max: scaleOf('max', rows.max), atLeastOne };
}
