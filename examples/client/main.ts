/**
 * A TypeScript client of the platform's public API, written the way an
 * application outside this repository would: the published client package
 * (@platform/client: generated code compiled to JavaScript + .d.ts) with
 * Connect-ES. It needs a running platform:
 *
 *   npm start                # in another terminal
 *   npm run example:client   # GATEWAY_URL (default http://127.0.0.1:8080), API_KEY when auth is on
 */
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { CheckoutService, idempotencyKeyHeader, type Money } from "@platform/client";
import { adviceFor } from "../shared/checkout-errors.js";

const gatewayUrl = process.env["GATEWAY_URL"] ?? "http://127.0.0.1:8080";
const apiKey = process.env["API_KEY"];

const transport = createConnectTransport({
  baseUrl: gatewayUrl,
  httpVersion: "1.1", // or "2"; createGrpcTransport() from the same package speaks gRPC
  // ListProducts and GetOrder have no side effects: they go as HTTP GET (cacheable, see docs/connect-get.md).
  useHttpGet: true,
  ...(apiKey
    ? {
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${apiKey}`);
            return next(req);
          },
        ],
      }
    : {}),
});
const checkout = createClient(CheckoutService, transport);

const money = (m: Money | undefined) => (m ? `${(Number(m.amountMinor) / 100).toFixed(2)} ${m.currencyCode}` : "?");

/** Runs one call; a failure is printed with what to do about it, and returned. */
async function attempt<T>(what: string, call: () => Promise<T>): Promise<T | ConnectError> {
  try {
    return await call();
  } catch (e) {
    const err = ConnectError.from(e);
    const a = adviceFor(err);
    console.log(`${what}: ${a.code}: ${a.advice}${a.retryable ? " (retryable)" : ""}`);
    return err;
  }
}

/** connect-node reports a refused or unresolvable address as unavailable, with the socket error as its cause. */
function unreachable(err: ConnectError): string | undefined {
  if (err.code !== Code.Unavailable && err.code !== Code.Internal) return undefined;
  for (let c: unknown = err.cause; c instanceof Error; c = c.cause) {
    const code = (c as NodeJS.ErrnoException).code;
    if (code && ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ETIMEDOUT", "ECONNRESET"].includes(code)) return code;
  }
  return undefined;
}

// 1. The catalogue, with a deadline: every call should have one (timeoutMs is sent as connect-timeout-ms).
let products: Awaited<ReturnType<typeof checkout.listProducts>>["products"];
try {
  products = (await checkout.listProducts({}, { timeoutMs: 2000 })).products;
} catch (e) {
  const err = ConnectError.from(e);
  const why = unreachable(err);
  if (why) {
    console.error(`Cannot reach the gateway at ${gatewayUrl} (${why}).`);
    console.error("This example needs a running platform: start it with `npm start` in another terminal, or set GATEWAY_URL to your gateway.");
    process.exit(2);
  }
  console.error(`ListProducts failed: ${adviceFor(err).code}: ${adviceFor(err).advice}`);
  process.exit(1);
}
console.log(`products: ${products.length}`);
for (const p of products) console.log(`  ${p.sku.padEnd(16)} ${money(p.unitPrice).padStart(12)}  ${p.name}`);
const [first, second] = products;
if (!first || !second) throw new Error("the catalogue needs two products for this example");

// 2. An order, with an idempotency key and a deadline. Keep the key: a retry
// with it (after a timeout, a crash, a lost answer) never orders twice.
const key = randomUUID();
const request = {
  customerId: "example-client",
  items: [
    { sku: first.sku, quantity: 2 },
    { sku: second.sku, quantity: 1 },
  ],
};
const placed = await attempt("PlaceOrder", () => checkout.placeOrder(request, { timeoutMs: 3000, headers: { [idempotencyKeyHeader]: key } }));
if (placed instanceof ConnectError) process.exit(1);
const order = placed.order!;
console.log(`order placed: ${order.id} total ${money(order.total)}`);

// 3. The same key again (what a retry does): the same order, not a second one.
const again = await attempt("PlaceOrder again", () => checkout.placeOrder(request, { timeoutMs: 3000, headers: { [idempotencyKeyHeader]: key } }));
if (!(again instanceof ConnectError)) console.log(`same key, same order: ${again.order?.id === order.id ? "yes" : "NO"}`);

// 4. Reading it back (an HTTP GET, see above).
const read = await attempt("GetOrder", () => checkout.getOrder({ orderId: order.id }, { timeoutMs: 2000 }));
if (!(read instanceof ConnectError)) console.log(`order read back: ${read.order?.id} ${read.order?.items.length} items`);

// 5. Each error a client must handle, provoked on purpose.
await attempt("same key, different order", () =>
  checkout.placeOrder({ ...request, customerId: "someone-else" }, { timeoutMs: 3000, headers: { [idempotencyKeyHeader]: key } }),
);
await attempt("unknown SKU", () =>
  checkout.placeOrder(
    { customerId: "example-client", items: [{ sku: "NO-SUCH-SKU", quantity: 1 }] },
    { timeoutMs: 3000, headers: { [idempotencyKeyHeader]: randomUUID() } },
  ),
);
await attempt("unknown order", () => checkout.getOrder({ orderId: "00000000-0000-0000-0000-000000000000" }, { timeoutMs: 2000 }));
await attempt("a 1 ms deadline", () => checkout.placeOrder(request, { timeoutMs: 1, headers: { [idempotencyKeyHeader]: randomUUID() } }));
console.log("done");
