import { serviceCounter } from "@platform/runtime";
import type { DeliveryOutcome } from "./receipt-statements.js";

/**
 * Counts each batch's written outcomes in receipts_deliveries_total: a send
 * whose receipt another relay had marked sent first is `already_done`;
 * released receipts were not attempted and are not counted.
 */
export function deliveryCounter(): (outcomes: readonly DeliveryOutcome[], written: ReadonlySet<string> | undefined) => void {
  const deliveries = serviceCounter(
    "receipts_deliveries_total",
    "Receipt delivery attempts by outcome: sent, already_done (the mail went out, and another relay had recorded it first), retry_scheduled, failed (retry budget spent), unrecorded (the outcome could not be written; the receipt is claimed again when its lease ends).",
    ["outcome"],
  );
  return (outcomes, written) => {
    for (const o of outcomes) {
      if (o.kind === "released") continue;
      if (written === undefined) deliveries.inc({ outcome: "unrecorded" });
      else if (o.kind === "sent") deliveries.inc({ outcome: written.has(o.orderId) ? "sent" : "already_done" });
      else if (written.has(o.orderId)) deliveries.inc({ outcome: o.kind === "retry" ? "retry_scheduled" : "failed" });
    }
  };
}
