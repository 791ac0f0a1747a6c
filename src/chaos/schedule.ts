/** The seeded fault schedule: every requested kind at least once, then more of them, spread over the duration. */
import type { FaultKind } from './options.js';
import type { Rng } from './random.js';

export interface PlannedFault {
  /** ms after the start of the fault phase. */
  at: number;
  kind: FaultKind;
}

/** About one fault every `everyMs`; none starts in the last `tailMs`, so every fault has ended by the end. */
export function planFaults(
  kinds: readonly FaultKind[],
  durationMs: number,
  rng: Rng,
  everyMs = 4000,
  tailMs = 7000,
): PlannedFault[] {
  if (kinds.length === 0) return [];
  const start = Math.min(3000, durationMs * 0.05);
  const end = Math.max(start + 1, durationMs - tailMs);
  const count = Math.max(kinds.length, Math.floor((end - start) / everyMs));
  const order = [...rng.shuffle(kinds)];
  while (order.length < count) order.push(rng.pick(kinds));
  const slot = (end - start) / count;
  return order.map((kind, i) => ({ at: Math.round(start + (i + rng.between(0.1, 0.9)) * slot), kind }));
}
