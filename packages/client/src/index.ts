/**
 * The platform's public API, checkout.v1, for Connect-ES clients: the
 * service descriptor (`CheckoutService`) to pass to `createClient` from
 * @connectrpc/connect, and every message's schema and type. Generated from
 * proto/checkout/v1/checkout.proto into @platform/proto by `npm run
 * generate`; src/gen is the build's copy of it (build.mjs).
 */
export * from "./gen/checkout/v1/checkout_pb.js";

/**
 * The platform's refusals in gRPC's richer error model (docs/errors.md):
 * `refusalReason(err)` is ErrorInfo's stable reason ("BULKHEAD_FULL",
 * "INVALID_REQUEST", ...), `retryInfoDelayMs(err)` RetryInfo's delay, and
 * `err.findDetails(BadRequestSchema)` the fields a request got wrong.
 */
export {
  BadRequestSchema,
  ErrorInfoSchema,
  QuotaFailureSchema,
  RetryInfoSchema,
  errorDomain,
  refusalReason,
  refusalReasons,
  retryInfoDelayMs,
  type BadRequest,
  type ErrorInfo,
  type QuotaFailure,
  type RefusalReason,
  type RetryInfo,
} from "./error-details.js";

/**
 * An interceptor for `createClient`'s transport that checks each request
 * against the rules declared in the proto before it is sent: a request the
 * server would refuse fails at once, with the same `invalid_argument` and
 * BadRequest, without a round trip.
 */
export { validationInterceptor as validateBeforeSending } from "./validation.js";

/**
 * The request header that makes PlaceOrder safe to repeat: the same key with
 * the same request returns the same order; with a different request the
 * call fails with `already_exists`. 1-255 printable ASCII characters.
 */
export const idempotencyKeyHeader = "Idempotency-Key";

export { watchOrder, type OrderWatcher, type WatchOrderOptions } from "./watch-order.js";
