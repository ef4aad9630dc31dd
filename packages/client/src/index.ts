/**
 * The platform's public API, checkout.v1, for Connect-ES clients: the
 * service descriptor (`CheckoutService`) to pass to `createClient` from
 * @connectrpc/connect, and every message's schema and type. Generated from
 * proto/checkout/v1/checkout.proto into @platform/proto by `npm run
 * generate`; src/gen is the build's copy of it (build.mjs).
 */
export * from "./gen/checkout/v1/checkout_pb.js";

/**
 * The request header that makes PlaceOrder safe to repeat: the same key with
 * the same request returns the same order; with a different request the
 * call fails with `already_exists`. 1-255 printable ASCII characters.
 */
export const idempotencyKeyHeader = "Idempotency-Key";

export { watchOrder, type OrderWatcher, type WatchOrderOptions } from "./watch-order.js";
