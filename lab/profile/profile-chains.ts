/**
 * CPU profiles of both chains as the bench runs them (the platform from its
 * dist/, the plain chain type-stripped: lab/bench/compiled-chains.ts), under
 * the same load, one window per method and chain, alternating: what each
 * platform service spends per request beside what the plain one does.
 * Every service has lab/profile/cpu-profile.mjs preloaded in signal mode
 * (with --heap, lab/profile/heap-profile.mjs: bytes allocated instead of CPU).
 *
 *   npm run build && node --import tsx lab/profile/profile-chains.ts [--seconds 6] [--concurrency 32] [--rounds 1] [--method ListProducts]
 *     [--protocol grpc-h2c|connect-json-http1] [--heap] [--out reports/profile/chains-<time>]
 *
 * Prints, per method, chain and service, busy CPU per request and the top
 * self-time places and functions (summarize-profile.ts), or with --heap the
 * KiB allocated per request by place (summarize-heap-profile.ts); keeps the
 * files. The sampling heap profiler slows every allocation: under --heap the
 * rates mean nothing, the bytes per request do.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { hopOrder, type System } from "../bench/cells.js";
import { buildChains } from "../bench/compiled-chains.js";
import type { LegSpec, Operation } from "../bench/leg.js";
import { LoadWorker } from "../bench/load-worker-client.js";
import { startSystems } from "../bench/systems.js";
import { type HeapProfile, renderHeapSummary, summarizeHeapProfile } from "./summarize-heap-profile.js";
import { renderSummary, summarizeProfile } from "./summarize-profile.js";

const methods: Array<[string, Operation]> = [
  ["PlaceOrder", "checkout.PlaceOrder"],
  ["ListProducts", "checkout.ListProducts"],
  ["GetOrder", "checkout.GetOrder"],
];

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string", default: "6" },
      concurrency: { type: "string", default: "32" },
      rounds: { type: "string", default: "1" },
      method: { type: "string" },
      protocol: { type: "string", default: "grpc-h2c" },
      heap: { type: "boolean", default: false },
      out: { type: "string" },
    },
    strict: true,
  });
  const seconds = Number(values.seconds);
  const concurrency = Number(values.concurrency);
  const rounds = Number(values.rounds);
  const heap = values.heap;
  const preload = fileURLToPath(new URL(heap ? "./heap-profile.mjs" : "./cpu-profile.mjs", import.meta.url));
  const out = values.out ?? join(process.cwd(), "reports", "profile", `chains-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  mkdirSync(out, { recursive: true });
  const plainCompiledDir = buildChains((l) => console.log(l), { platformBuilt: true });
  // Every service process inherits these (the launcher and the plain chain's starter pass the environment on).
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --import ${preload}`.trim();
  process.env.CPU_PROFILE_DIR = out;
  process.env.CPU_PROFILE_ON_SIGNAL = "1";
  const sys = await startSystems((l) => console.log(l), { from: "build", plainCompiledDir });
  delete process.env.CPU_PROFILE_DIR;
  const worker = LoadWorker.start();
  const windows = new Map<number, number>();
  const report: string[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [method, operation] of methods) {
        if (values.method && values.method !== method) continue;
        for (const system of ["platform", "plain"] as System[]) {
          const target = sys.target(system, { method: method as never, protocol: values.protocol, clients: concurrency, service: "gateway" } as never);
          const leg: LegSpec = {
            target,
            operation,
            concurrency,
            durationMs: seconds * 1000,
            maxRequests: 10_000_000,
            minRequests: 0,
            maxDurationMs: seconds * 2000,
            timeoutMs: 5000,
            label: `profile-${system}-${method}`,
          };
          await worker.prepare({ ...leg, durationMs: 1500, label: `${leg.label}-warm` });
          await worker.go({ ...leg, durationMs: 1500, label: `${leg.label}-warm` });
          await sys.drainReceipts(system);
          await worker.prepare(leg);
          const pids = hopOrder.map((s) => sys.pid(system, s)!);
          for (const pid of pids) process.kill(pid, "SIGUSR2");
          const result = await worker.go(leg);
          for (const pid of pids) process.kill(pid, "SIGUSR2");
          await sleep(1000);
          const failed = Object.values(result.failed).reduce((a, b) => a + b, 0);
          report.push(
            `## ${method} ${system} round ${round + 1}: ${result.succeeded} ok, ${failed} failed, ${((result.succeeded / result.elapsedMs) * 1000).toFixed(0)}/s`,
          );
          for (const [k, s] of hopOrder.entries()) {
            const pid = pids[k]!;
            const n = (windows.get(pid) ?? 0) + 1;
            windows.set(pid, n);
            const file = join(out, `${pid}-${n}.${heap ? "heapprofile" : "cpuprofile"}`);
            const profile = JSON.parse(readFileSync(file, "utf8"));
            report.push(
              heap
                ? renderHeapSummary(`${system} ${s} (${file})`, summarizeHeapProfile(profile as HeapProfile), result.succeeded)
                : renderSummary(`${system} ${s} (${file})`, summarizeProfile(profile), result.succeeded),
            );
          }
          console.log(report.slice(-hopOrder.length - 1).join("\n\n"));
        }
      }
    }
  } finally {
    worker.stop();
    await sys.close();
  }
  writeFileSync(join(out, "summary.txt"), `${report.join("\n\n")}\n`);
  console.log(`wrote ${out}/summary.txt`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : e);
    process.exit(1);
  },
);
