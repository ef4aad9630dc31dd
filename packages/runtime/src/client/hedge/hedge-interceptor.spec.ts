/**
 * Hedged reads over Connect's in-memory transport: a slow read gets a
 * second attempt, the first answer wins and the loser's server sees its
 * call cancelled; the retry budget pays for each hedge; writes are never
 * hedged; a read that fails before its hedge is due fails as it would
 * alone.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { checkoutV1 } from "@platform/proto";
import { RetryBudget, systemClock } from "@platform/resilience";
import { hedgeInterceptor } from "./hedge-interceptor.js";

const { CheckoutService } = checkoutV1;

interface Server {
  /** ListProducts calls arrived, and how each ended. */
  arrived: number;
  cancelled: number;
  /** Holds the reads whose number (1-based) is in here until their caller leaves. */
  hold: Set<number>;
  failNext: boolean;
}

function setup(budget: RetryBudget) {
  const s: Server = { arrived: 0, cancelled: 0, hold: new Set(), failNext: false };
  const transport = createRouterTransport(
    (router) =>
      router.service(CheckoutService, {
        async listProducts(_req, ctx) {
          const n = ++s.arrived;
          if (s.failNext) {
            s.failNext = false;
            throw new ConnectError("down", Code.Unavailable);
          }
          if (s.hold.has(n)) {
            await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
            s.cancelled++;
            throw new ConnectError("cancelled", Code.Canceled);
          }
          return { products: [] };
        },
        async placeOrder() {
          // A held write answers late (50 ms, far beyond its p95), but answers.
          if (s.hold.has(++s.arrived)) await new Promise((resolve) => setTimeout(resolve, 50));
          return {};
        },
      }),
    { transport: { interceptors: [hedgeInterceptor({ dependency: "checkout", budget, quantile: 0.95 })] } },
  );
  return { s, client: createClient(CheckoutService, transport) };
}

const generous = () => new RetryBudget({ percentCanRetry: 1, minRetriesPerSec: 10, ttlMs: 10_000, clock: systemClock });
const empty = () => new RetryBudget({ percentCanRetry: 0, minRetriesPerSec: 0, ttlMs: 10_000, clock: systemClock });

async function warm(client: ReturnType<typeof setup>["client"], n = 30): Promise<void> {
  for (let i = 0; i < n; i++) await client.listProducts({});
}

test("a read slower than its recent p95 is hedged: the second attempt answers, the first is cancelled at its server", async () => {
  const { s, client } = setup(generous());
  await warm(client);
  s.hold.add(s.arrived + 1);
  await client.listProducts({});
  assert.equal(s.arrived, 32, "30 warm-up calls, the held one and its hedge");
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(s.cancelled, 1, "the held attempt's server saw it cancelled");
});

test("with the retry budget spent, no hedge: the read waits for its one attempt", async () => {
  const { s, client } = setup(empty());
  await warm(client);
  s.hold.add(s.arrived + 1);
  const controller = new AbortController();
  const call = client.listProducts({}, { signal: controller.signal }).then(
    () => "answered",
    (e: unknown) => ConnectError.from(e).code,
  );
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(s.arrived, 31, "no second attempt");
  controller.abort();
  assert.equal(await call, Code.Canceled);
});

test("a write is never hedged", async () => {
  const { s, client } = setup(generous());
  for (let i = 0; i < 30; i++) await client.placeOrder({});
  s.hold.add(s.arrived + 1);
  await client.placeOrder({});
  assert.equal(s.arrived, 31);
});

test("a read that fails before its hedge is due fails at once with its own error (the retry loop outside decides)", async () => {
  const { s, client } = setup(generous());
  await warm(client);
  s.failNext = true;
  await assert.rejects(client.listProducts({}), (e: unknown) => ConnectError.from(e).code === Code.Unavailable);
  assert.equal(s.arrived, 31, "no hedge after the failure");
});
