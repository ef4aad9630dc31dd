/**
 * Server streams through a real serve() (h2c, gRPC clients): the watchdog
 * and the unary deadline cap leave a healthy stream alone; a stream without
 * a deadline ends at its lifetime with DEADLINE_EXCEEDED and a resume hint;
 * streams take slots of their own class, never the unary calls', and are
 * refused RESOURCE_EXHAUSTED with pushback beyond their limit; a shutdown
 * ends them at once with a resume hint instead of waiting out the drain.
 * orders.v1.OrdersService stands in for any API with a server stream.
 */
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { ordersV1 } from "@platform/proto";
import { grpcClient } from "@platform/test-support";
import { readEnv } from "../config/config.js";
import { readServerConfig } from "../config/server-config.js";
import { createLogger } from "../observability/logger.js";
import { serve, type RunningServer } from "./serve.js";

const orderId = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const running: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.shutdown("spec over")));
});

/** A WatchOrder that sends `count` messages `everyMs` apart (Infinity: until its signal ends it). */
function watcher(count: number, everyMs: number) {
  let open = 0;
  return {
    open: () => open,
    async *watchOrder(_req: ordersV1.WatchOrderRequest, ctx: HandlerContext) {
      open++;
      try {
        for (let i = 1; i <= count; i++) {
          yield { position: BigInt(i) };
          await new Promise<void>((resolve, reject) => {
            const t = setTimeout(resolve, everyMs);
            ctx.signal.addEventListener("abort", () => {
              clearTimeout(t);
              reject(ctx.signal.reason);
            });
          });
        }
      } finally {
        open--;
      }
    },
    getOrder: () => ({ order: { id: orderId } }),
    createOrder: () => ({}),
  };
}

async function start(env: Record<string, string>, impl: ReturnType<typeof watcher>) {
  const config = readEnv({ PORT: "0", ADMIN_PORT: "0", ...env }, (r) => readServerConfig(r, "streams-spec", { port: 0, adminPort: 0 }));
  const server = await serve({
    config,
    logger: createLogger("streams-spec", "silent"),
    services: [ordersV1.OrdersService],
    routes: (router) => router.service(ordersV1.OrdersService, impl),
  });
  running.push(server);
  await server.ready;
  return { server, client: grpcClient(ordersV1.OrdersService, server.port) };
}

/** Reads a stream to its end: the positions, and the error that ended it (undefined: OK). */
async function drain(messages: AsyncIterable<ordersV1.WatchOrderResponse>): Promise<{ positions: bigint[]; error: ConnectError | undefined }> {
  const positions: bigint[] = [];
  try {
    for await (const m of messages) positions.push(m.position);
    return { positions, error: undefined };
  } catch (e) {
    return { positions, error: ConnectError.from(e) };
  }
}

test("a healthy stream outlives the unary deadline's cap and the watchdog: every message, then OK", async () => {
  // Eight messages 150 ms apart: four times the longest deadline a unary call may have here.
  const { client } = await start({ DEADLINE_DEFAULT_MS: "300", DEADLINE_MAX_MS: "300" }, watcher(8, 150));
  const { positions, error } = await drain(client.watchOrder({ orderId }));
  assert.equal(error, undefined);
  assert.deepEqual(positions, [1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n]);
});

test("a stream with no deadline ends at its lifetime: DEADLINE_EXCEEDED with a resume hint, the handler ended", async () => {
  const impl = watcher(Number.POSITIVE_INFINITY, 100);
  const { client } = await start({ STREAM_MAX_LIFETIME_MS: "1000" }, impl);
  const { positions, error } = await drain(client.watchOrder({ orderId }));
  assert.ok(positions.length > 0, "messages flowed before the lifetime ended");
  assert.equal(error?.code, Code.DeadlineExceeded, error?.rawMessage);
  assert.match(error!.rawMessage, /resume after the last position received/);
  assert.equal(error!.metadata.get("stream-resume"), "resume-after-last-position");
  assert.equal(impl.open(), 0, "the handler's generator ended");
});

test("streams take their own slots: unary calls pass while they fill them; one more stream is refused RESOURCE_EXHAUSTED with pushback", async () => {
  const impl = watcher(Number.POSITIVE_INFINITY, 60_000);
  // One unary slot and no queue: a stream that took a unary slot would leave none.
  const { client } = await start({ ADMISSION_MAX_CONCURRENT: "1", ADMISSION_MAX_QUEUE: "0", STREAM_MAX_CONCURRENT: "2" }, impl);
  const abort = new AbortController();
  const open = [0, 1].map(() => client.watchOrder({ orderId }, { signal: abort.signal })[Symbol.asyncIterator]());
  for (const it of open) assert.equal((await it.next()).value?.position, 1n);
  for (let i = 0; i < 3; i++) assert.equal((await client.getOrder({ orderId })).order?.id, orderId);
  const refused = await drain(client.watchOrder({ orderId }));
  assert.equal(refused.error?.code, Code.ResourceExhausted, refused.error?.rawMessage);
  assert.match(refused.error!.rawMessage, /too many open streams \(2\)/);
  assert.ok(Number(refused.error!.metadata.get("grpc-retry-pushback-ms")) > 0, "a pushback hint");
  abort.abort();
  for (const it of open) await it.next().catch(() => {});
});

test("a shutdown ends open streams at once with UNAVAILABLE and a resume hint, long before its drain deadline", { timeout: 20_000 }, async () => {
  const impl = watcher(Number.POSITIVE_INFINITY, 60_000);
  // A drain deadline longer than this test may run: the stream must end before it.
  const { server, client } = await start({ DRAIN_TIMEOUT_MS: "120000" }, impl);
  const it = client.watchOrder({ orderId })[Symbol.asyncIterator]();
  assert.equal((await it.next()).value?.position, 1n);
  const shutdown = server.shutdown("spec");
  const ended = await it.next().then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  assert.equal(ended?.code, Code.Unavailable, ended?.rawMessage);
  assert.equal(ended!.metadata.get("stream-resume"), "resume-after-last-position");
  await shutdown;
  assert.equal(impl.open(), 0);
});

test("a stream's handler failing after its first message: the caller gets INTERNAL without internals, after the message", async () => {
  const impl = {
    ...watcher(1, 1),
    async *watchOrder() {
      yield { position: 1n };
      throw new Error("relation orders.secret does not exist");
    },
  };
  const { client } = await start({}, impl);
  const { positions, error } = await drain(client.watchOrder({ orderId }));
  assert.deepEqual(positions, [1n]);
  assert.equal(error?.code, Code.Internal);
  assert.match(error!.rawMessage, /^internal error \(request id [\w-]+\)$/);
});
