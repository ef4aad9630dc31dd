import { createHash } from "node:crypto";
import type { ordersV1 } from "@platform/proto";

/**
 * A fingerprint of what an order request asks for (not of its key), so that
 * a repeated key can be told apart from a reused one.
 */
export function requestHash(req: Pick<ordersV1.CreateOrderRequest, "customerId" | "items">): string {
  const canonical = JSON.stringify([req.customerId, req.items.map((i) => [i.sku, i.quantity])]);
  return createHash("sha256").update(canonical).digest("hex");
}
