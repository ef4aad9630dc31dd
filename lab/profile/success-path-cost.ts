/**
 * What the success-path hunks of the connect-es patches save (patches/README.md:
 * no DOMException or ConnectError made per successful call), measured alone:
 * a plain connect-node server (connectNodeAdapter on http2.createServer) and
 * a gRPC client (createGrpcTransport) in one process, one unary call after
 * another at a fixed concurrency, CPU time (user + system) of that process
 * per call. Two variants, each in a process of its own, alternating rounds:
 * "patched" loads connect-es from the repository's node_modules (as the
 * platform does), "npm" from the copy with the patches reversed that the
 * bench's plain chain runs on (lab/bench/compiled-chains.ts `pristineConnect`).
 *
 *   node --import tsx lab/profile/success-path-cost.ts [calls per round] [concurrency] [rounds]
 */
import { fork } from "node:child_process";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { median } from "../stats.js";
import { alternatingVariants, cpuPerCall, medianDifference } from "./alternating-rounds.js";
import { plainChainBuildDir, pristineConnect } from "../bench/compiled-chains.js";

type Variant = "patched" | "npm";

async function child(modulesDir: string): Promise<void> {
  // connect-node resolves @connectrpc/connect next to itself: both from one copy.
  const connect = (await import(pathToFileURL(join(modulesDir, "@connectrpc/connect/dist/esm/index.js")).href)) as typeof import("@connectrpc/connect");
  const node = (await import(pathToFileURL(join(modulesDir, "@connectrpc/connect-node/dist/esm/index.js")).href)) as typeof import("@connectrpc/connect-node");
  const { Counter } = await import("@platform/test-support");
  const server = http2.createServer(node.connectNodeAdapter({ routes: (r) => r.service(Counter, { get: () => ({}), async *count() {} } as never) }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const transport = node.createGrpcTransport({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  const client = connect.createClient(Counter, transport) as unknown as { get(req: object): Promise<unknown> };
  process.on("message", async (m: { n: number; concurrency: number }) => {
    process.send!({ us: await cpuPerCall(m.n, m.concurrency, () => client.get({})) });
  });
  process.send!({ ready: true });
}

async function main(): Promise<void> {
  const [n = 4000, concurrency = 8, rounds = 7] = process.argv.slice(2).map(Number);
  const root = process.cwd();
  pristineConnect(root, plainChainBuildDir(root));
  const dirs: Record<Variant, string> = { patched: join(root, "node_modules"), npm: join(plainChainBuildDir(root), "node_modules") };
  const self = fileURLToPath(import.meta.url);
  const procs = Object.fromEntries(
    await Promise.all(
      (Object.keys(dirs) as Variant[]).map(async (v) => {
        const p = fork(self, [], { env: { ...process.env, SUCCESS_PATH_MODULES: dirs[v] }, execArgv: ["--import", "tsx"] });
        await new Promise<void>((resolve) => p.once("message", () => resolve()));
        return [v, p] as const;
      }),
    ),
  ) as Record<Variant, ReturnType<typeof fork>>;
  const measure = (v: Variant, count: number) =>
    new Promise<number>((resolve) => {
      procs[v].once("message", (m: { us: number }) => resolve(m.us));
      procs[v].send({ n: count, concurrency });
    });
  const out = await alternatingVariants(["patched", "npm"] as const, measure, { n, warmupN: n, rounds });
  for (const p of Object.values(procs)) p.kill();
  const saved = out.npm.map((u, i) => u - out.patched[i]!);
  const savedUs = medianDifference(out.npm, out.patched);
  console.log(`calls of a unary method, server and client in one process, ${n} per round at ${concurrency} concurrent, ${rounds} rounds`);
  console.log(`CPU µs per call: patched ${median(out.patched).toFixed(1)}, as npm ships it ${median(out.npm).toFixed(1)}`);
  console.log(`saved per call (median of per-round differences): ${savedUs.toFixed(1)} µs; rounds: ${saved.map((s) => s.toFixed(1)).join(", ")}`);
}

if (process.env.SUCCESS_PATH_MODULES) await child(process.env.SUCCESS_PATH_MODULES);
else await main();
