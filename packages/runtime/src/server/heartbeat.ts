/**
 * `messages`, with `heartbeat()` sent in between whenever `intervalMs`
 * passes without one (0: never). An empty message rather than an HTTP/2
 * PING: proxies time out idle streams by the data they carry (nginx's
 * proxy_read_timeout, an AWS ALB's idle timeout, Envoy's stream idle
 * timeout), and a PING is neither data of the stream nor available over
 * HTTP/1.1, where browsers' Connect streams run (docs/streams.md).
 */
export async function* withHeartbeat<M>(messages: AsyncIterable<M>, intervalMs: number, heartbeat: () => M): AsyncGenerator<M> {
  if (intervalMs <= 0) {
    yield* messages;
    return;
  }
  const it = messages[Symbol.asyncIterator]();
  let pending = it.next();
  let done = false;
  try {
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<"idle">((resolve) => {
        timer = setTimeout(() => resolve("idle"), intervalMs);
      });
      const r = await Promise.race([pending, idle]).finally(() => clearTimeout(timer));
      if (r === "idle") {
        yield heartbeat();
        continue;
      }
      if (r.done) {
        done = true;
        return;
      }
      yield r.value;
      pending = it.next();
    }
  } finally {
    if (!done) {
      // The consumer left (or the stream failed): end the source once its pending step settles.
      pending.catch(() => {});
      it.return?.(undefined).catch(() => {});
    }
  }
}
