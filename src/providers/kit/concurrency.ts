/** Bounded concurrency for the requests a unit makes per object (details, long nested lists). */
import { abortReason } from './sleep.js';

/**
 * `fn` over every item, the results in the items' order, with at most `limit` calls in flight at
 * all times (a slow call holds up only its own slot). After the first failure, or once `signal`
 * aborts, no further call starts; the first failure (or the abort's reason) is thrown once the
 * calls in flight have settled, so nothing the unit started outlives it.
 */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
  signal?: AbortSignal,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  const failures: unknown[] = [];
  let next = 0;
  const slot = async () => {
    while (next < items.length && failures.length === 0) {
      if (signal?.aborted) {
        failures.push(abortReason(signal));
        return;
      }
      const i = next++;
      try {
        out[i] = await fn(items[i]!);
      } catch (err) {
        failures.push(err);
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(items.length, Math.max(1, limit)) }, slot));
  if (failures.length > 0) throw failures[0];
  return out;
}
