/**
 * One 'abort' listener per shutdown signal, however many units hold a lease under it. A worker
 * passes its one shutdown signal to every unit it runs; a listener per lease put
 * concurrency × units-per-message listeners on that signal at once (Node warns past 10:
 * MaxListenersExceededWarning). Each lease instead subscribes here, in a Set, and unsubscribes
 * when it stops; the signal itself carries a single listener that fans out to the current ones.
 */
type Subscriber = () => void;

/** Per signal, never shared between signals; dropped with the signal (a WeakMap). */
const fanouts = new WeakMap<AbortSignal, Set<Subscriber>>();

/**
 * Calls `fn` once when `signal` aborts, or at once if it already has. Returns the unsubscribe,
 * safe to call more than once.
 */
export function onShutdown(signal: AbortSignal, fn: Subscriber): () => void {
  if (signal.aborted) {
    fn();
    return () => undefined;
  }
  const subscribers = subscribersOf(signal);
  subscribers.add(fn);
  return () => subscribers.delete(fn);
}

function subscribersOf(signal: AbortSignal): Set<Subscriber> {
  let subscribers = fanouts.get(signal);
  if (!subscribers) {
    const set = new Set<Subscriber>();
    signal.addEventListener(
      'abort',
      () => {
        const current = [...set];
        set.clear();
        for (const fn of current) fn();
      },
      { once: true },
    );
    fanouts.set(signal, set);
    subscribers = set;
  }
  return subscribers;
}
