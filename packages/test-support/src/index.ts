/**
 * Test support shared by test/ (integration and end-to-end tests), the
 * unit specs that need a real service, and lab/ (the storm lab, the soak,
 * the bench): one module per concern, all re-exported here.
 */
export * from "./client-package.js";
export * from "./compose.js";
export * from "./counter-service.js";
export * from "./cpu-affinity.js";
export * from "./dockerfile.js";
export * from "./expect-code.js";
export * from "./platform.js";
export * from "./process-gone.js";
export * from "./retry-budget-bound.js";
export * from "./shared-platform.js";
export * from "./service-spec.js";
export * from "./service-under-test.js";
export * from "./services-form.js";
export { insertHeldOrders, sendHeldReceipt } from "./held-orders.js";
export * from "./test-certificates.js";
export * from "./test-token-issuer.js";
export { bufCurl } from "./buf-curl.js";
