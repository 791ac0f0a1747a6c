import type { Sink } from '../../src/sdk/types.js';

/** `inner`, recording into `into` the external id of every row a write to `surface` carries, in order. */
export function recordingSink(inner: Sink, surface: string, into: string[]): Sink {
  return {
    ...inner,
    write: (guard, to, rows) => {
      if (to === surface) into.push(...rows.map((r) => r.external_id as string));
      return inner.write(guard, to, rows);
    },
  };
}
