// generated from proto/ by npm run generate:services; do not edit.
// One namespace per API package (proto/), so that `checkout.v1` and
// `orders.v1` message names never collide.
export * as checkoutV1 from "./gen/checkout/v1/checkout_pb.js";
export * as exampleEchoV1 from "./gen/example_echo/v1/example_echo_pb.js";
export * as exampleNotesV1 from "./gen/example_notes/v1/example_notes_pb.js";
export * as healthV1 from "./gen/grpc/health/v1/health_pb.js";
export * as reflectionV1 from "./gen/grpc/reflection/v1/reflection_pb.js";
export * as reflectionV1alpha from "./gen/grpc/reflection/v1alpha/reflection_pb.js";
export * as mailerV1 from "./gen/mailer/v1/mailer_pb.js";
export * as ordersV1 from "./gen/orders/v1/orders_pb.js";
export * as commonV1 from "./gen/platform/common/v1/common_pb.js";
export * as pricingV1 from "./gen/pricing/v1/pricing_pb.js";
