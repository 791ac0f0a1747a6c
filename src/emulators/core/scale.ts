/** Emulator scales: a named preset or `key=value,…` over the small preset, each value bounded. */
import { ValidationError } from '../../errors.js';

/** `small`, `medium`, `bench` (any preset name) or `issues=20000,teams=4` over `presets.small`. */
export function parseScaleText<S extends Record<keyof S, number>>(
  text: string,
  presets: Readonly<Record<string, S>> & { readonly small: S },
  validate: (scale: S) => S,
): S {
  if (Object.hasOwn(presets, text)) return { ...presets[text]! };
  const scale: S = { ...presets.small };
  for (const part of text.split(',')) {
    const [key, raw] = part.split('=').map((s) => s.trim());
    if (!key || !(key in scale) || raw === undefined) {
      throw new ValidationError('scale', `unknown entry "${part}" (keys: ${Object.keys(scale).join(', ')})`);
    }
    scale[key as keyof S] = Number(raw) as S[keyof S];
  }
  return validate(scale);
}

/** Every key of `max` an integer from its minimum (1 for `atLeastOne`, else 0) to its maximum. */
export function checkScaleBounds<S extends Record<keyof S, number>>(
  scale: S,
  max: Readonly<S>,
  atLeastOne: readonly (keyof S)[],
): S {
  for (const key of Object.keys(max) as (keyof S)[]) {
    const v = scale[key];
    const min = atLeastOne.includes(key) ? 1 : 0;
    if (!Number.isInteger(v) || v < min || v > max[key]) {
      throw new ValidationError(`scale.${String(key)}`, `expected an integer from ${min} to ${max[key]}, got ${v}`);
    }
  }
  return scale;
}
