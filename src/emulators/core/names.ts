/** Word helpers the generators build names, titles and bodies with (draws from a seeded Rng). */
import type { Rng } from './random.js';

/** One word from each list, in order, joined by spaces: `phrase(rng, VERBS, OBJECTS)`. */
export function phrase(rng: Rng, ...lists: readonly (readonly string[])[]): string {
  return lists.map((list) => rng.pick(list)).join(' ');
}

/**
 * The `i`-th name of a list that repeats once used up: `names[i]` the first time round, then the
 * name with `suffix(round)` appended (round 1, 2, … for the second, third, … time through).
 */
export function nthName(names: readonly string[], i: number, suffix: (round: number) => string): string {
  const round = Math.floor(i / names.length);
  const base = names[i % names.length]!;
  return round === 0 ? base : `${base}${suffix(round)}`;
}
