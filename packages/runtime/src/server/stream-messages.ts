import type { StreamResponse, UnaryResponse } from "@connectrpc/connect";

/**
 * Server streams through interceptors: `next(req)` answers a stream as soon
 * as the handler has started, long before its last message, so whatever an
 * interceptor does "when the call is over" (end the call scope, write the log
 * line, release a link to the caller's signal) must wait for the messages'
 * end instead. These helpers run that once the stream is over, however it
 * ends: its last message, an error, or its consumer leaving.
 */
export function isStream(res: UnaryResponse | StreamResponse): res is StreamResponse {
  return res.stream;
}

/** `res` whose messages run `onEnd` once they are over, with the error that ended them, if any. */
export function onStreamEnd<T extends StreamResponse>(res: T, onEnd: (error: unknown) => void): T {
  return { ...res, message: ended(res.message, onEnd) };
}

async function* ended<M>(messages: AsyncIterable<M>, onEnd: (error: unknown) => void): AsyncGenerator<M> {
  let error: unknown;
  try {
    yield* messages;
  } catch (e) {
    error = e;
    throw e;
  } finally {
    onEnd(error);
  }
}

/** `res` whose failure, while its messages are read, is `map(error)` instead. */
export function mapStreamFailure<T extends StreamResponse>(res: T, map: (error: unknown) => unknown): T {
  return { ...res, message: failingAs(res.message, map) };
}

async function* failingAs<M>(messages: AsyncIterable<M>, map: (error: unknown) => unknown): AsyncGenerator<M> {
  try {
    yield* messages;
  } catch (e) {
    throw map(e);
  }
}

/**
 * `res` once its first message has arrived (or its end): a failure before it
 * is thrown here, where a retry loop sees it, rather than while the caller
 * reads. gRPC sends a failure before any message as trailers only, after
 * the call has already "answered".
 */
export async function withFirstMessage<T extends StreamResponse>(res: T): Promise<T> {
  const it = res.message[Symbol.asyncIterator]();
  const first = await it.next();
  return { ...res, message: startingWith(first, it) };
}

async function* startingWith<M>(first: IteratorResult<M>, rest: AsyncIterator<M>): AsyncGenerator<M> {
  if (first.done) return;
  yield first.value;
  yield* { [Symbol.asyncIterator]: () => rest };
}
