/**
 * What a request's context and call scope cost at a hop (serve()'s
 * `createRequestContext` with its deadline timer, the deadline
 * interceptor's `scopeFor`, then both disposed), this tree against another
 * checkout's, in one process: CPU time per request, rounds alternating
 * (alternating-rounds.ts). The in-process measure of the per-request
 * allocations hop-ablation.ts cannot resolve on a loaded machine.
 *
 *   node --import tsx lab/profile/context-cost.ts <other checkout> [requests per round] [rounds]
 *
 * Prints one JSON line: ns per request, platform = this tree, plain = the
 * other one.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { alternatingRounds } from "./alternating-rounds.js";

const other = process.argv[2];
const n = Number(process.argv[3] ?? 100_000);
const rounds = Number(process.argv[4] ?? 7);
if (!other || ![n, rounds].every((x) => Number.isInteger(x) && x > 0)) throw new Error("usage: context-cost.ts <other checkout> [requests per round] [rounds]");

type ContextModule = typeof import("../../packages/runtime/src/server/request-context.js");
type DeadlineModule = typeof import("../../packages/runtime/src/deadline/deadline-interceptor.js");
async function load(root: string): Promise<{ ctx: ContextModule; dl: DeadlineModule }> {
  const at = (file: string) => pathToFileURL(join(root, "packages", "runtime", "src", file)).href;
  return { ctx: await import(at("request-context.ts")), dl: await import(at("deadline-interceptor.ts")) };
}
const here = await load(join(import.meta.dirname, "..", ".."));
const there = await load(other);

const headers: Record<string, string> = { "grpc-timeout": "2900m", "x-request-id": "bench-1", "x-caller-id": "gateway" };
const header = (name: string) => headers[name];
const deadline = { defaultMs: 3000, maxMs: 30_000, hopReserveMs: 5 };
const parents = [new AbortController().signal, new AbortController().signal];

function measure(side: "platform" | "plain", count: number): Promise<number> {
  const { ctx, dl } = side === "platform" ? here : there;
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const context = ctx.createRequestContext({ header, procedure: "/x.v1.X/Get", arrivedAt: performance.now(), deadline, trustCaller: true });
    const scope = dl.scopeFor(context, parents);
    scope.dispose();
    context.dispose();
  }
  const used = process.cpuUsage(before);
  return Promise.resolve(((used.user + used.system) * 1000) / count);
}

const result = await alternatingRounds(measure, { n, warmupN: Math.min(n, 20_000), rounds });
process.stdout.write(
  `${JSON.stringify({ thisTreeNs: result.platformUs, otherTreeNs: result.plainUs, differenceNs: result.addedUs, rounds: result.rounds })}\n`,
);
