import type { Client } from "@connectrpc/connect";
import type { checkoutV1 } from "@platform/proto";
import type { RequestMix } from "./protocol.js";

export type RequestKind = keyof RequestMix;

/** The demo catalogue (services/pricing/migrations); refreshed from ListProducts when it answers. */
export const demoSkus = ["COFFEE-BEANS-1KG", "MUG-CERAMIC", "GRINDER-BURR", "FILTER-PAPER-100", "KETTLE-GOOSENECK"];

/**
 * Request n's kind, deterministic in n (weighted round robin over a cycle of
 * 20), so that both profiles see exactly the same sequence of requests.
 */
export function kindOf(n: number, mix: RequestMix): RequestKind {
  const total = mix.placeOrder + mix.listProducts + mix.getOrder;
  if (total <= 0) return "listProducts";
  // Spread each kind evenly over the cycle rather than in runs.
  const slot = ((n * 7) % 20) / 20;
  const p = mix.placeOrder / total;
  const l = mix.listProducts / total;
  return slot < p ? "placeOrder" : slot < p + l ? "listProducts" : "getOrder";
}

/** What one user operation sends; GetOrder reads an order placed earlier in the run. */
export interface Operation {
  kind: RequestKind;
  call(client: Client<typeof checkoutV1.CheckoutService>, opts: { timeoutMs: number; headers?: Record<string, string> }): Promise<unknown>;
  /** Set for PlaceOrder: the operation's unique customer_id. */
  customerId?: string;
  /** Set for PlaceOrder: receives the stored order's id on success. */
  onOrder?: (orderId: string) => void;
}

/** Ids of recently placed orders, for GetOrder. Bounded. */
export class RecentOrders {
  private readonly ids: string[] = [];
  constructor(private readonly max = 1000) {}
  add(id: string): void {
    if (this.ids.length >= this.max) this.ids.shift();
    this.ids.push(id);
  }
  pick(n: number): string | undefined {
    return this.ids.length === 0 ? undefined : this.ids[n % this.ids.length];
  }
}

export function operation(n: number, mix: RequestMix, customerPrefix: string, skus: string[], recent: RecentOrders): Operation {
  let kind = kindOf(n, mix);
  const orderId = kind === "getOrder" ? recent.pick(n) : undefined;
  // Nothing placed yet (start of a run, or every write failing): read the catalogue instead.
  if (kind === "getOrder" && orderId === undefined) kind = "listProducts";
  switch (kind) {
    case "placeOrder": {
      const customerId = `${customerPrefix}${n}`;
      const sku = skus[n % skus.length] ?? "MUG-CERAMIC";
      const items = [{ sku, quantity: 1 + (n % 3) }];
      const second = skus[(n + 2) % skus.length];
      if (n % 2 === 0 && second !== undefined && second !== sku) items.push({ sku: second, quantity: 1 });
      return {
        kind,
        customerId,
        onOrder: (id) => recent.add(id),
        call: (c, o) => c.placeOrder({ customerId, items }, o),
      };
    }
    case "getOrder":
      return { kind, call: (c, o) => c.getOrder({ orderId: orderId ?? "" }, o) };
    default:
      return { kind: "listProducts", call: (c, o) => c.listProducts({}, o) };
  }
}
