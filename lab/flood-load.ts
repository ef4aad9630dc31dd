/**
 * One leg of lab/flood.ts, in a process of its own: `connections` HTTP/1.1
 * keep-alive connections, each sending PlaceOrder (Connect JSON) again the
 * moment its previous answer arrives, whatever it was. Sends its result
 * to the parent and exits.
 */
import * as http from "node:http";
import { assertLoopback } from "./load/loopback.js";

export interface FloodLegResult {
  connections: number;
  okPerSec: number;
  /** 429 and 503: refusals (resource_exhausted, unavailable). */
  refusedPerSec: number;
  otherPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

interface Leg {
  gatewayUrl: string;
  connections: number;
  seconds: number;
}

const body = JSON.stringify({ customerId: "flood", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });

async function run({ gatewayUrl, connections, seconds }: Leg): Promise<FloodLegResult> {
  assertLoopback(gatewayUrl, "flood");
  const url = new URL(`${gatewayUrl}/checkout.v1.CheckoutService/PlaceOrder`);
  const endAt = performance.now() + seconds * 1000;
  let ok = 0;
  let refused = 0;
  let other = 0;
  const okMs: number[] = [];
  const loop = async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    while (performance.now() < endAt) {
      const started = performance.now();
      const status = await post(url, agent);
      if (status === 200) {
        ok++;
        okMs.push(performance.now() - started);
      } else if (status === 429 || status === 503) refused++;
      else other++;
    }
    agent.destroy();
  };
  await Promise.all(Array.from({ length: connections }, loop));
  okMs.sort((a, b) => a - b);
  const at = (q: number) => okMs[Math.min(okMs.length - 1, Math.floor(q * okMs.length))] ?? 0;
  return { connections, okPerSec: ok / seconds, refusedPerSec: refused / seconds, otherPerSec: other / seconds, p50Ms: at(0.5), p99Ms: at(0.99) };
}

function post(url: URL, agent: http.Agent): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(url, { method: "POST", agent, headers: { "content-type": "application/json", "connect-timeout-ms": "2000" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", () => resolve(0));
    req.end(body);
  });
}

process.once("message", (leg: Leg) => {
  void run(leg).then((result) => {
    process.send?.(result, () => process.exit(0));
  });
});
