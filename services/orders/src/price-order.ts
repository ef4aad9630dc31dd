import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { commonV1, ordersV1 } from "@platform/proto";

/** Builds the order from the request and pricing's answer: line totals and total in minor units. */
export function priceOrder(customerId: string, items: commonV1.OrderLineRequest[], products: commonV1.Product[]): ordersV1.Order {
  const bySku = new Map(products.map((p) => [p.sku, p]));
  const currencies = new Set(products.map((p) => p.unitPrice?.currencyCode));
  if (currencies.size !== 1) {
    throw new ConnectError("items are priced in different currencies; place one order per currency", Code.FailedPrecondition);
  }
  const currencyCode = [...currencies][0]!;
  let total = 0n;
  const lines = items.map((item) => {
    const product = bySku.get(item.sku);
    if (!product?.unitPrice) {
      // pricing answered without a SKU it was asked for: its bug, not the caller's.
      throw new ConnectError(`pricing returned no price for sku ${item.sku}`, Code.Internal);
    }
    const lineTotal = product.unitPrice.amountMinor * BigInt(item.quantity);
    total += lineTotal;
    return create(commonV1.OrderLineSchema, {
      sku: item.sku,
      name: product.name,
      quantity: item.quantity,
      unitPrice: product.unitPrice,
      lineTotal: { currencyCode, amountMinor: lineTotal },
    });
  });
  return create(ordersV1.OrderSchema, {
    id: randomUUID(),
    status: ordersV1.OrderStatus.PLACED,
    customerId,
    items: lines,
    total: { currencyCode, amountMinor: total },
  });
}
