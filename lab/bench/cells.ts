/**
 * What the bench measures: every cell runs on both chains (platform and
 * plain) in every round, back to back.
 */
import { protocols, type Operation, type Protocol } from "./leg.js";

export type System = "platform" | "plain";
export const systems: readonly System[] = ["platform", "plain"];

export type Service = "gateway" | "checkout" | "orders" | "pricing";
/** Innermost first: the order in which hops add up. */
export const hopOrder: readonly Service[] = ["pricing", "orders", "checkout", "gateway"];

/** Off the request path, but doing each order's outbox work (the receipt's job and the mail) on both chains. */
export type OutboxService = "receipts" | "mailer";
/** Every process whose CPU the bench counts per request (with PostgreSQL). */
export type CountedService = Service | OutboxService;
export const countedServices: readonly CountedService[] = [...hopOrder, "receipts", "mailer"];

export type Method = "PlaceOrder" | "ListProducts" | "GetOrder";
export const methods: readonly Method[] = ["PlaceOrder", "ListProducts", "GetOrder"];

export interface Cell {
  id: string;
  /** Through the gateway (the public API), or one hop of a path in `hopPaths` called directly (the gateway's included: a cell of its own, measured as hops are). */
  kind: "gateway" | "hop";
  /** The service called. */
  service: Service;
  operation: Operation;
  protocol: Protocol;
  concurrency: number;
  /** For gateway cells. */
  method?: Method;
}

const gatewayOperation: Record<Method, Operation> = {
  PlaceOrder: "checkout.PlaceOrder",
  ListProducts: "checkout.ListProducts",
  GetOrder: "checkout.GetOrder",
};

/**
 * The paths whose hops are called directly with what their caller would
 * send, innermost first. PlaceOrder's crosses every service, but its p50
 * moves by a millisecond with PostgreSQL's commit, more than a hop's share;
 * ListProducts' (a read: pricing, checkout, gateway) resolves a tenth of
 * a millisecond.
 */
export const hopPaths = {
  PlaceOrder: [
    ["pricing", "pricing.GetPrices"],
    ["orders", "orders.CreateOrder"],
    ["checkout", "checkout.PlaceOrder"],
    ["gateway", "checkout.PlaceOrder"],
  ],
  ListProducts: [
    ["pricing", "pricing.ListProducts"],
    ["checkout", "checkout.ListProducts"],
    ["gateway", "checkout.ListProducts"],
  ],
} as const satisfies Partial<Record<Method, readonly (readonly [Service, Operation])[]>>;
export type HopPath = keyof typeof hopPaths;
/** `hopPaths` as [path, hops] pairs, in its order. */
export const hopPathEntries = Object.entries(hopPaths) as [HopPath, (typeof hopPaths)[HopPath]][];

export function gatewayCellId(method: Method, protocol: Protocol, concurrency: number): string {
  return `gateway ${method} ${protocol} x${concurrency}`;
}

export function hopCellId(service: Service, operation: Operation): string {
  return `hop ${service} ${operation} grpc-h2c x1`;
}

/**
 * What one leg measures: one cell, or two cells whose requests alternate
 * (one client, in blocks), so that both see exactly the same machine: the
 * one-client gRPC h2c and Connect JSON HTTP/1.1 cells of a method, whose
 * latency ratio is checked on noisy machines. A hop cell's leg alternates
 * the two chains instead (`pairsChains`).
 */
export type Measurement = readonly [Cell] | readonly [Cell, Cell];

/**
 * Which cells are measured on both chains in one leg, the chains taking
 * turns: a hop's cell (one client, in blocks of requests) and a cell at
 * high concurrency (every user switching chain together, in time slices
 * of `chainSliceMs`). Legs run one after the other differed by more than
 * what these cells compare whenever the machine's speed moved in between:
 * a hop's "added" latency came out between -0.8 and +1.5 ms from run to
 * run, and a 32-client ratio between 0.80 and 1.17, with one chain's rate
 * climbing round after round while the other's stayed flat.
 */
export function pairsChains(m: Measurement, sliced: boolean): boolean {
  return m.length === 1 && (m[0].kind === "hop" || (sliced && m[0].concurrency > 1));
}

/**
 * A high-concurrency leg's time slice per chain: long against a request
 * at 32 users (50-200 ms at p50 on 2 cores), so the calls a slice leaves in
 * flight are a small part of the next; short against the machine's drift.
 * Legs must hold several slices: the quick bench's quarter-second legs
 * cannot (a slice shorter than a request gave one chain 3 requests in a
 * leg), so it measures its 32-client cells leg after leg.
 */
export const chainSliceMs = 500;

/** Every cell, or only `only`'s (through the gateway, and the hops of its path where it has one). */
export function benchMeasurements(highConcurrency: number, withHops: boolean, only?: Method): Measurement[] {
  const gatewayCell = (method: Method, protocol: Protocol, concurrency: number): Cell => ({
    id: gatewayCellId(method, protocol, concurrency),
    kind: "gateway",
    service: "gateway",
    operation: gatewayOperation[method],
    protocol,
    concurrency,
    method,
  });
  const measurements: Measurement[] = [];
  for (const method of only ? [only] : methods) {
    const [first, second] = protocols.map((protocol) => gatewayCell(method, protocol, 1));
    measurements.push([first!, second!]);
    for (const protocol of protocols) measurements.push([gatewayCell(method, protocol, highConcurrency)]);
  }
  if (withHops) {
    for (const [path, hops] of hopPathEntries) {
      if (only && path !== only) continue;
      for (const [service, operation] of hops) {
        measurements.push([{ id: hopCellId(service, operation), kind: "hop", service, operation, protocol: "grpc-h2c", concurrency: 1 }]);
      }
    }
  }
  return measurements;
}
