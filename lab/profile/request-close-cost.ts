/**
 * What ending a request's signal costs when its stream closes, the way
 * connect-node does it (`abortController.abort()`: a DOMException made, with
 * its stack, per request) against serve()'s adapter now (connect-adapter.ts
 * `closedCleanly`: the reset code checked, the shared `requestClosed`). Each
 * request: an emitter's "close" event whose listener ends a fresh
 * controller's signal, which one listener follows (as the adapter's request
 * signal is followed by Connect's handler context). Alternating rounds, CPU
 * time per request.
 *
 *   node --import tsx lab/profile/request-close-cost.ts [requests per round] [rounds]
 */
import { EventEmitter } from "node:events";
import { requestClosed } from "../../packages/runtime/src/server/connect-adapter.js";
import { median } from "../stats.js";

const n = Number(process.argv[2] ?? 200_000);
const rounds = Number(process.argv[3] ?? 7);
const stream = { rstCode: 0 };

function run(variant: "domException" | "shared", count: number): number {
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const closing = new EventEmitter();
    const controller = new AbortController();
    controller.signal.addEventListener("abort", () => {}, { once: true });
    if (variant === "domException") closing.once("close", () => controller.abort());
    else closing.once("close", () => (stream.rstCode === 0 ? controller.abort(requestClosed) : controller.abort()));
    closing.emit("close");
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

run("domException", n);
run("shared", n);
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < rounds; r++) {
  a.push(run("domException", n));
  b.push(run("shared", n));
}
const f = (x: number) => Math.round(x * 1000) / 1000;
process.stderr.write(
  `${JSON.stringify({ domExceptionUs: f(median(a)), sharedUs: f(median(b)), savedUs: f(median(a.map((x, i) => x - b[i]!))), rounds: a.map((x, i) => [f(x), f(b[i]!)]) })}\n`,
);
