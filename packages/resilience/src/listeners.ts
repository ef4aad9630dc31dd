/**
 * A minimal listener list for metrics hooks.
 *
 * A listener that throws must not leave the component that emitted the event
 * half-updated (a bulkhead that stops draining its queue would hang every
 * waiter), so each listener runs isolated. Its error is not swallowed
 * either: it is rethrown from a microtask, where it surfaces as an uncaught
 * exception like any other bug.
 */
export class Listeners<E> {
  private readonly list = new Set<(event: E) => void>();

  constructor(private readonly onListenerError: (err: unknown) => void = rethrowLater) {}

  /** Adds `listener`; the returned function removes it. */
  add(listener: (event: E) => void): () => void {
    // Wrap so that adding the same function twice means two subscriptions.
    const entry = (event: E) => listener(event);
    this.list.add(entry);
    return () => {
      this.list.delete(entry);
    };
  }

  emit(event: E): void {
    for (const listener of this.list) {
      try {
        listener(event);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}

function rethrowLater(err: unknown): void {
  queueMicrotask(() => {
    throw err;
  });
}
