import { Code, ConnectError } from "@connectrpc/connect";
import type { commonV1 } from "@platform/proto";
import { checkIdempotencyKey, maxIdempotencyKeyLength } from "@platform/resilience";

export const limits = {
  maxItems: 50,
  maxQuantity: 1000,
  maxCustomerIdLength: 128,
  maxIdempotencyKeyLength,
} as const;

const skuPattern = /^[A-Z0-9][A-Z0-9-]{0,63}$/;
const customerIdPattern = /^[A-Za-z0-9._:@-]+$/;
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function invalid(message: string): never {
  throw new ConnectError(message, Code.InvalidArgument);
}

/** Rejects a bad order before anything is priced or written, naming the first problem. */
export function validateOrderInput(customerId: string, items: commonV1.OrderLineRequest[]): void {
  if (customerId === "") invalid("customer_id is required");
  if (customerId.length > limits.maxCustomerIdLength) invalid(`customer_id must be at most ${limits.maxCustomerIdLength} characters`);
  if (!customerIdPattern.test(customerId)) invalid("customer_id may contain only letters, digits and . _ : @ -");
  if (items.length === 0) invalid("items must not be empty");
  if (items.length > limits.maxItems) invalid(`at most ${limits.maxItems} items per order, got ${items.length}`);
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (!skuPattern.test(item.sku)) invalid(`items[${i}].sku ${JSON.stringify(item.sku.slice(0, 70))} is not a valid sku`);
    if (seen.has(item.sku)) invalid(`items[${i}].sku ${item.sku} appears twice; combine the quantities`);
    seen.add(item.sku);
    if (item.quantity <= 0) invalid(`items[${i}].quantity must be positive, got ${item.quantity}`);
    if (item.quantity > limits.maxQuantity) invalid(`items[${i}].quantity must be at most ${limits.maxQuantity}, got ${item.quantity}`);
  });
}

/** The platform's key rule (shared with the gateway); "" means the caller sent no key. */
export function validateIdempotencyKey(key: string): void {
  if (key !== "") checkIdempotencyKey(key, "idempotency key");
}

export function validateOrderId(id: string): void {
  if (id === "") invalid("order_id is required");
  if (!uuidPattern.test(id)) invalid("order_id must be a UUID");
}
