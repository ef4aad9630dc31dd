import { create } from "@bufbuild/protobuf";
import * as checkoutV1 from "./gen/checkout/v1/checkout_pb.js";
import * as ordersV1 from "./gen/orders/v1/orders_pb.js";
import * as commonV1 from "./gen/platform/common/v1/common_pb.js";

/**
 * The internal APIs speak platform.common.v1 and orders.v1; the public API
 * speaks checkout.v1. The types are twins (same field numbers, names and
 * kinds: test/proto-twins.test.ts checks), and these functions map one to
 * the other at the one place they meet, the checkout service.
 */

const publicStatus: Record<ordersV1.OrderStatus, checkoutV1.OrderStatus> = {
  [ordersV1.OrderStatus.UNSPECIFIED]: checkoutV1.OrderStatus.UNSPECIFIED,
  [ordersV1.OrderStatus.PLACED]: checkoutV1.OrderStatus.PLACED,
};

const publicReceiptState: Record<ordersV1.ReceiptState, checkoutV1.ReceiptState> = {
  [ordersV1.ReceiptState.UNSPECIFIED]: checkoutV1.ReceiptState.UNSPECIFIED,
  [ordersV1.ReceiptState.PENDING]: checkoutV1.ReceiptState.PENDING,
  [ordersV1.ReceiptState.SENT]: checkoutV1.ReceiptState.SENT,
  [ordersV1.ReceiptState.FAILED]: checkoutV1.ReceiptState.FAILED,
};

export function publicReceipt(r: ordersV1.Receipt): checkoutV1.Receipt {
  return create(checkoutV1.ReceiptSchema, { state: publicReceiptState[r.state] ?? (r.state as number as checkoutV1.ReceiptState), attempts: r.attempts });
}

export function publicMoney(m: commonV1.Money): checkoutV1.Money {
  return create(checkoutV1.MoneySchema, { currencyCode: m.currencyCode, amountMinor: m.amountMinor });
}

function optionalMoney(m: commonV1.Money | undefined): checkoutV1.Money | undefined {
  return m === undefined ? undefined : publicMoney(m);
}

export function publicProduct(p: commonV1.Product): checkoutV1.Product {
  return create(checkoutV1.ProductSchema, { sku: p.sku, name: p.name, unitPrice: optionalMoney(p.unitPrice) });
}

export function publicOrderItem(l: commonV1.OrderLine): checkoutV1.OrderItem {
  return create(checkoutV1.OrderItemSchema, {
    sku: l.sku,
    name: l.name,
    quantity: l.quantity,
    unitPrice: optionalMoney(l.unitPrice),
    lineTotal: optionalMoney(l.lineTotal),
  });
}

export function publicOrder(o: ordersV1.Order): checkoutV1.Order {
  return create(checkoutV1.OrderSchema, {
    id: o.id,
    // An enum value this build does not know (a newer orders) stays as its number, as protobuf does for open enums.
    status: publicStatus[o.status] ?? (o.status as number as checkoutV1.OrderStatus),
    customerId: o.customerId,
    items: o.items.map(publicOrderItem),
    total: optionalMoney(o.total),
    createdAt: o.createdAt,
    receipt: o.receipt === undefined ? undefined : publicReceipt(o.receipt),
  });
}

/** The public request lines as the internal API takes them. */
export function orderLineRequests(items: readonly checkoutV1.OrderItemRequest[]): commonV1.OrderLineRequest[] {
  return items.map((i) => create(commonV1.OrderLineRequestSchema, { sku: i.sku, quantity: i.quantity }));
}
