/**
 * The adaptive limits under a saturating but healthy load, with and without
 * a quiet phase before it (docs/isolation.md, "The baseline learns from
 * calls, not from time"): the lab platform from its build, optionally 8 s of
 * one PlaceOrder client at a time, then 32 gRPC clients for 24 s; prints the
 * rate and the limits of gateway -> checkout, checkout -> orders and orders
 * -> pricing every 4 s.
 *
 *   npm run build && node --import tsx lab/profile/limits-after-quiet.ts [one-client-first|load-first]
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { checkoutV1 } from "@platform/proto";
import { clientFactory } from "../bench/bench-clients.js";
import { demoSkus } from "../load/request-mix.js";
import { startLabPlatform } from "../platform/lab-platform.js";

const quietFirst = (process.argv[2] ?? "one-client-first") === "one-client-first";
const p = await startLabPlatform("platform", { faultInjection: false, logLevel: "shipped", from: "build" });
const client = clientFactory(p.gatewayUrl, "grpc-h2c", 32).client(checkoutV1.CheckoutService);
let ok = 0;
let failed = 0;
let users = 0;
let stop = false;
let n = 0;
const placeOrder = () =>
  client.placeOrder({ customerId: `c-${n++}`, items: [{ sku: demoSkus[0]!, quantity: 1 }] }, { timeoutMs: 5000, headers: { "idempotency-key": randomUUID() } });
const user = async (i: number) => {
  while (!stop) {
    if (i >= users) {
      await sleep(20);
      continue;
    }
    await placeOrder().then(
      () => ok++,
      () => failed++,
    );
  }
};
const loops = Array.from({ length: 32 }, (_, i) => user(i));

const limits = async (): Promise<string> => {
  const out: string[] = [];
  for (const s of ["gateway", "checkout", "orders"] as const) {
    const text = await (await fetch(`${p.services[s].adminUrl}/metrics`)).text();
    for (const m of text.matchAll(/^bulkhead_limit\{dependency="(\w+)",class="(\w+)"\} (\S+)/gm)) {
      if (["PlaceOrder", "CreateOrder", "GetPrices"].includes(m[2]!)) out.push(`${s} -> ${m[1]} ${m[3]}`);
    }
  }
  return out.join(", ");
};

const phase = async (clients: number, windows: number) => {
  users = clients;
  for (let w = 0; w < windows; w++) {
    const before = ok;
    const t0 = performance.now();
    await sleep(4000);
    const rate = ((ok - before) / (performance.now() - t0)) * 1000;
    console.log(`${clients} client(s): ${rate.toFixed(0)} PlaceOrders/s, ${failed} failed so far; limits ${await limits()}`);
  }
};

try {
  if (quietFirst) await phase(1, 2);
  await phase(32, 6);
} finally {
  stop = true;
  await Promise.all(loops);
  await p.close();
}
process.exit(0);
