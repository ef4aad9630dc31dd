import { ordersV1 } from "@platform/proto";

/**
 * Where an order stands in its life, as WatchOrder's `position`: 1 once it
 * is placed with its receipt pending, 2 once the receipt is final (SENT or
 * FAILED). Its status and its receipt's state only ever move forward, so
 * the position read from the order itself increases by change, and a
 * stream resumed after position p sends exactly the changes past p: none
 * missed, none twice, with no log of changes to keep. (A FAILED receipt an
 * operator re-queues starts a new life no stream follows: every stream of
 * the order had ended at FAILED.)
 */
export function watchPosition(order: ordersV1.Order): bigint {
  return finalReceipt(order) ? 2n : 1n;
}

/** The highest position an order reaches. */
export const lastWatchPosition = 2n;

/**
 * Nothing will change any more: the receipt was sent or gave up (an order
 * from before receipts has none, and will never have one).
 */
export function finalReceipt(order: ordersV1.Order): boolean {
  const state = order.receipt?.state;
  return state === undefined || state === ordersV1.ReceiptState.SENT || state === ordersV1.ReceiptState.FAILED;
}
