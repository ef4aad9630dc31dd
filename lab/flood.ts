/**
 * A flood of clients that ignore pushback: closed-loop HTTP/1.1 clients,
 * one request at a time per connection, no think time, a refusal resent at
 * once. Goodput (PlaceOrder answered OK per second) at the connections
 * where the platform peaks (--peak, 64) and at four times as many (--flood,
 * 256), legs alternating; the flood's goodput as a share of the peak's is
 * what refusing costs.
 *
 *   npm run build && npm run bench:flood -- [--seconds 6] [--rounds 3] [--peak 64] [--flood 256]
 *
 * The platform as `npm start` runs it (shipped settings, services from
 * their build, their default log level). The load runs in a child process
 * of its own (lab/flood-load.ts), so the clients' event loop is not this
 * one's. Loopback only.
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startLabPlatform } from "./platform/lab-platform.js";
import type { FloodLegResult } from "./flood-load.js";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "6" },
    rounds: { type: "string", default: "3" },
    peak: { type: "string", default: "64" },
    flood: { type: "string", default: "256" },
  },
});
const seconds = positive(values.seconds, "seconds");
const rounds = positive(values.rounds, "rounds");
const legs = [positive(values.peak, "peak"), positive(values.flood, "flood")];

function positive(v: string | undefined, name: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

function runLeg(gatewayUrl: string, connections: number): Promise<FloodLegResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL("./flood-load.ts", import.meta.url)), [], { execArgv: ["--import", "tsx"] });
    child.once("message", (m) => resolve(m as FloodLegResult));
    child.once("error", reject);
    child.once("exit", (code) => code !== 0 && reject(new Error(`flood load exited with ${code}`)));
    child.send({ gatewayUrl, connections, seconds });
  });
}

const platform = await startLabPlatform("platform", { from: "build", logLevel: "shipped", faultInjection: false });
try {
  // Warm: the JIT and the pools, at the peak's connections.
  await runLeg(platform.gatewayUrl, legs[0]!);
  const goodput: Record<number, number[]> = { [legs[0]!]: [], [legs[1]!]: [] };
  console.log("connections  goodput/s  refused/s  other/s  p50 ms  p99 ms");
  for (let r = 0; r < rounds; r++) {
    for (const connections of r % 2 === 0 ? legs : [...legs].reverse()) {
      const leg = await runLeg(platform.gatewayUrl, connections);
      goodput[connections]!.push(leg.okPerSec);
      console.log(
        `${String(connections).padStart(11)}  ${leg.okPerSec.toFixed(0).padStart(9)}  ${leg.refusedPerSec.toFixed(0).padStart(9)}  ${leg.otherPerSec.toFixed(0).padStart(7)}  ${leg.p50Ms.toFixed(0).padStart(6)}  ${leg.p99Ms.toFixed(0).padStart(6)}`,
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const shares = goodput[legs[1]!]!.map((g, i) => g / goodput[legs[0]!]![i]!);
  console.log(
    `\ngoodput at ${legs[1]} connections / at ${legs[0]}: median ${median(shares).toFixed(2)} [${Math.min(...shares).toFixed(2)}-${Math.max(...shares).toFixed(2)}] over ${rounds} rounds`,
  );
} finally {
  await platform.close(undefined, { drain: false });
}
