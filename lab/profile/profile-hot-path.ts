/**
 * CPU profiles of every service of the platform under load, one window per
 * method: the platform as `npm start` runs it (shipped log level, no fault
 * injection), each service with lab/profile/cpu-profile.mjs preloaded in
 * signal mode; for each of PlaceOrder, ListProducts and GetOrder, the bench's
 * load worker sends `--concurrency` gRPC streams through the gateway for
 * `--seconds`, with every service sampling only while it runs. Prints, per
 * method and service, busy CPU and the top self-time places and functions
 * per request (summarize-profile.ts), and keeps the .cpuprofile files.
 *
 *   node --import tsx lab/profile/profile-hot-path.ts [--seconds 10] [--concurrency 32] [--out reports/profile/<time>]
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { hopOrder } from "../bench/cells.js";
import type { LegSpec, Operation } from "../bench/leg.js";
import { LoadWorker } from "../bench/load-worker-client.js";
import { startLabPlatform } from "../platform/lab-platform.js";
import { renderSummary, summarizeProfile } from "./summarize-profile.js";

const preload = fileURLToPath(new URL("./cpu-profile.mjs", import.meta.url));
const methods: Array<[string, Operation]> = [
  ["PlaceOrder", "checkout.PlaceOrder"],
  ["ListProducts", "checkout.ListProducts"],
  ["GetOrder", "checkout.GetOrder"],
];
const profiled = [...hopOrder, "receipts", "mailer"] as const;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { seconds: { type: "string", default: "10" }, concurrency: { type: "string", default: "32" }, out: { type: "string" } },
    strict: true,
  });
  const seconds = Number(values.seconds);
  const concurrency = Number(values.concurrency);
  if (!(seconds > 0) || !(Number.isInteger(concurrency) && concurrency > 0)) throw new Error("--seconds must be > 0 and --concurrency a positive integer");
  const out = values.out ?? join(process.cwd(), "reports", "profile", new Date().toISOString().replace(/[:.]/g, "-"));
  mkdirSync(out, { recursive: true });
  const platform = await startLabPlatform("platform", {
    faultInjection: false,
    logLevel: "shipped",
    env: { NODE_OPTIONS: `--import ${preload}`, CPU_PROFILE_DIR: out, CPU_PROFILE_ON_SIGNAL: "1" },
    onProgress: (l) => console.log(`platform: ${l}`),
  });
  const worker = LoadWorker.start();
  const report: string[] = [];
  try {
    for (const [i, [method, operation]] of methods.entries()) {
      const leg: LegSpec = {
        target: { kind: "rpc", baseUrl: platform.gatewayUrl, protocol: "grpc-h2c", idempotencyHeader: false },
        operation,
        concurrency,
        durationMs: seconds * 1000,
        maxRequests: 10_000_000,
        minRequests: 0,
        maxDurationMs: seconds * 2000,
        timeoutMs: 5000,
        label: `profile-${method}`,
      };
      // A short unprofiled leg first: JIT and connections warm.
      await worker.prepare({ ...leg, durationMs: 2000, label: `${leg.label}-warm` });
      await worker.go({ ...leg, durationMs: 2000, label: `${leg.label}-warm` });
      await worker.prepare(leg);
      const pids = profiled.map((s) => platform.services[s].process.pid!);
      for (const pid of pids) process.kill(pid, "SIGUSR2");
      const result = await worker.go(leg);
      // The receipts worker catches up after the leg: its window stays open a little longer.
      await sleep(1500);
      for (const pid of pids) process.kill(pid, "SIGUSR2");
      await sleep(1500);
      const failed = Object.values(result.failed).reduce((a, b) => a + b, 0);
      report.push(`## ${method}: ${result.succeeded} ok, ${failed} failed, ${((result.succeeded / result.elapsedMs) * 1000).toFixed(0)}/s`);
      for (const [k, s] of profiled.entries()) {
        const file = join(out, `${pids[k]}-${i + 1}.cpuprofile`);
        const summary = summarizeProfile(JSON.parse(readFileSync(file, "utf8")));
        report.push(renderSummary(`${s} (${file})`, summary, result.succeeded));
      }
      console.log(report.slice(-profiled.length - 1).join("\n\n"));
    }
  } finally {
    worker.stop();
    await platform.close();
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
