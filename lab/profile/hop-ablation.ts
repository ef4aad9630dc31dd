/**
 * Where the server side of a hop spends its CPU, layer by layer: serve()'s
 * request path put together from its own pieces (the listener, the request
 * context with its deadline timer, the RPC adapter, the request gate with
 * admission, the watchdog and the edge's checks, the server interceptors
 * with their log line and metrics; the gateway's configuration and edge),
 * once with every layer and once without each layer in turn, beside
 * serve() itself and plain `connectNodeAdapter`. The layers are composed
 * here, not switched by flags in serve(): production code pays nothing for
 * this tool.
 *
 * Each variant is a server in a process of its own (so that no variant's
 * code shapes another's JIT state), answering test.v1.Counter's Get with
 * nothing; this process is the load (one gRPC client per server,
 * createGrpcTransport, h2c). Rounds measure every variant once, in the same
 * order, so the machine's other load falls on all alike; a server's cost is
 * its own process's CPU time (user + system) per request, and a layer's
 * price is the median over the rounds of (every layer - every layer but
 * this one).
 *
 *   node --import tsx lab/profile/hop-ablation.ts [requests per round] [concurrency] [rounds] [variants] [before-tree]
 *
 * `variants`: comma-separated subset (default: all; "all" and "plain" are
 * always among them). `before-tree`: another checkout of this repository
 * (with this tool; node_modules may be a link to ours); each variant also
 * runs from there as "<variant>@before", in the same rounds, and the table
 * gets a column for it: a change's before and after, layer by layer, in
 * one run.
 *
 * Two layers are switched off without recomposing anything: the log line
 * (the same logger at level warn: the line is built, pino drops it) and
 * prom-client (every `inc`, `dec`, `set` and `observe` a no-op in that
 * variant's process, by patching prom-client's prototypes there; the metric
 * cells' plain counts still run). Request log lines go to stdout, as in a
 * service: send them to /dev/null. Prints the table on stderr, then one
 * JSON line.
 */
import { fork, type ChildProcess } from "node:child_process";
import * as http2 from "node:http2";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AddressInfo } from "node:net";
import { Code, createClient, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { Counter as PromCounter, Gauge as PromGauge, Histogram as PromHistogram } from "prom-client";
import { Counter } from "@platform/test-support";
import { createAdmissionGate, propagatedCriticality, type AdmissionGate } from "../../packages/runtime/src/server/admission-gate.js";
import { createRpcAdapter } from "../../packages/runtime/src/server/connect-adapter.js";
import { createEdge } from "../../packages/runtime/src/edge/edge.js";
import { HealthState } from "../../packages/runtime/src/server/health.js";
import { dispatchEndpoint, probeEndpoints } from "../../packages/runtime/src/server/http-endpoints.js";
import { listen } from "../../packages/runtime/src/server/listen.js";
import { createLogger } from "../../packages/runtime/src/observability/logger.js";
import { requestCompressions } from "../../packages/runtime/src/server/request-compression.js";
import { createRequestContext, nodeHeader } from "../../packages/runtime/src/server/request-context.js";
import { createRequestGate } from "../../packages/runtime/src/server/request-gate.js";
import { watchRequest } from "../../packages/runtime/src/server/request-watchdog.js";
import { serve } from "../../packages/runtime/src/server/serve.js";
import { inOrder, serverInterceptors, type ServerInterceptors } from "../../packages/runtime/src/server/server-interceptors.js";
import { loadConfig } from "../../services/gateway/src/config.js";
import { median } from "../stats.js";
import { alternatingVariants, medianDifference } from "./alternating-rounds.js";

const requests = Number(process.argv[2] ?? 2_000);
const concurrency = Number(process.argv[3] ?? 8);
const rounds = Number(process.argv[4] ?? 5);
if (![requests, concurrency, rounds].every((n) => Number.isInteger(n) && n > 0)) {
  throw new Error("usage: hop-ablation.ts [requests per round] [concurrency] [rounds]");
}

// --- prom-client off, for one variant at a time -------------------------------------------
let promClientOff = false;
function silence<T extends object>(proto: T, names: (keyof T)[]): void {
  for (const name of names) {
    const original = proto[name] as (...a: unknown[]) => unknown;
    (proto as Record<string, unknown>)[name as string] = function (this: unknown, ...args: unknown[]) {
      return promClientOff ? undefined : original.apply(this, args);
    };
  }
}
// Histogram's constructor copies observeWithoutExemplar into the instance's `observe`: patched before any histogram exists.
silence(PromHistogram.prototype as unknown as Record<string, unknown>, ["observeWithoutExemplar"]);
silence(PromCounter.prototype, ["inc"]);
silence(PromGauge.prototype, ["inc", "dec", "set"]);

// --- the layers ----------------------------------------------------------------------------
/** What each layer buys, for the table. */
const layers = {
  logLine: "one JSON line per request (npm start's logs, the storm lab's attribution, e2e tests)",
  promClient: "prom-client's inc/observe on the request path (duration histograms, deadline and admission metrics)",
  requestLog: "the request log interceptor whole: log line, RPC metrics, in-flight, intake outcome",
  requestId: "x-request-id on every answer",
  deadline: "call scope (AsyncLocalStorage), handler raced against the deadline / cancel / shutdown (invariants 1, 3)",
  tracing: "server span when exported or a traceparent came (here: neither, so the check only)",
  errors: "every failure a deliberate ConnectError, internals hidden (invariant 8)",
  validation: "the request's rules declared in the proto (protovalidate), before the handler",
  faults: "injected handler faults (the check when none are set)",
  cors: "CORS preflight answered at the edge (the check on every request)",
  edgeCheck: "API keys and the per-client rate limit (edge)",
  admission: "admission control and load shedding before the body is read (incl. the watchdog)",
  watchdog: "the deadline bounds the body read and the answer's write (slowloris, stalled writes)",
  requestGate: "the whole request gate: timeout-header refusal, criticality, edge check, starting, admission, watchdog",
} as const;
type Layer = keyof typeof layers;
const layerNames = Object.keys(layers) as Layer[];

const interceptorLayers = ["requestLog", "requestId", "deadline", "tracing", "errors", "validation", "faults"] as const satisfies readonly (Layer &
  keyof ServerInterceptors)[];
const passThrough: Interceptor = (next) => next;

const routes = (router: ConnectRouter) => router.service(Counter, { get: () => ({}), async *count() {} } as never);
const config = loadConfig({ PORT: "0", ADMIN_PORT: "0" });
const edgeOptions = { ...config.edge, intake: config.intake, criticality: () => "sheddable" as const };

/**
 * serve()'s RPC path (serve.ts: its handler, the adapter, the gate, the
 * interceptors) without the layers in `off`. Mirrors serve() line for
 * line where a layer is on; the "serve()" variant beside it checks that.
 */
async function composeHop(off: ReadonlySet<Layer>): Promise<number> {
  const logger = createLogger("gateway", off.has("logLine") ? "warn" : config.server.logLevel);
  const shutdown = new AbortController();
  const edge = createEdge(edgeOptions);
  const intake = edge.startIntake(logger);
  const all = serverInterceptors({
    deadline: config.server.deadline,
    logger,
    shutdownSignal: shutdown.signal,
    onOutcome: (code, ms) => intake?.record(code, ms),
  });
  for (const layer of interceptorLayers) if (off.has(layer)) all[layer] = passThrough;
  const admitting = createAdmissionGate({
    ...(intake ? { intake: intake.controller, onShed: () => intake.record(Code.ResourceExhausted, 0) } : {}),
    config: config.server.admission,
  });
  // Without the watchdog: admission as it is, minus what it does with the Node exchange.
  const admission: AdmissionGate | undefined = off.has("admission")
    ? undefined
    : off.has("watchdog")
      ? { controller: admitting.controller, admit: (context, request) => admitting.admit(context, { ...request, exchange: undefined }) }
      : admitting;
  const health = new HealthState([Counter.typeName]);
  health.setAll(true);
  const adapter = createRpcAdapter({
    routes,
    interceptors: inOrder(all),
    readMaxBytes: config.server.readMaxBytes,
    acceptCompression: requestCompressions,
    shutdownSignal: shutdown.signal,
    ...(off.has("requestGate")
      ? {}
      : {
          requestGate: createRequestGate({
            logger,
            ...(off.has("edgeCheck") ? {} : { edgeCheck: edge.check }),
            waitingFor: () => undefined,
            criticality: edge.criticality ?? propagatedCriticality,
            ...(admission ? { admission } : {}),
          }),
        }),
    fallback(_req, res) {
      res.writeHead(404);
      res.end();
    },
  });
  const publicEndpoints = probeEndpoints(health);
  // serve()'s drain bookkeeping, as it is there.
  let inFlight = 0;
  const drained: (() => void) | undefined = undefined;
  const main = await listen({
    host: "127.0.0.1",
    port: 0,
    http1: true,
    handler(req, res) {
      if (dispatchEndpoint(publicEndpoints, req, res)) return;
      const arrivedAt = performance.now();
      const procedure = (req.url ?? "/").split("?")[0]!;
      const context = createRequestContext({
        header: nodeHeader(req),
        procedure,
        arrivedAt,
        deadline: config.server.deadline,
        trustCaller: !config.server.deadline.edge,
        exchange: { req, res },
      });
      let counted = false;
      res.once("close", () => {
        context.dispose();
        if (counted && --inFlight === 0) (drained as (() => void) | undefined)?.();
        if (!context.logged) logger.info({ procedure, status: res.statusCode }, "rpc refused before the handler");
      });
      if (!off.has("cors") && edge.answerHttp(req, res)) return;
      inFlight++;
      counted = true;
      // With the admission gate but without the watchdog, the watchdog's own call is what is missing.
      if (off.has("admission") && !off.has("watchdog") && !off.has("requestGate")) watchRequest(req, res, context.deadline);
      adapter(req, res, context);
    },
  });
  return main.port;
}

async function servePlatform(): Promise<number> {
  const server = await serve({
    config: config.server,
    services: [Counter],
    routes,
    http1: true,
    edge: createEdge(edgeOptions),
  });
  await server.ready;
  return server.port;
}

async function plainHttp2(): Promise<number> {
  const server = http2.createServer(connectNodeAdapter({ routes }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

async function listenPlain(): Promise<number> {
  const adapter = connectNodeAdapter({ routes });
  return (await listen({ host: "127.0.0.1", port: 0, http1: true, handler: adapter as never })).port;
}

// --- the variants, one process each --------------------------------------------------------
const base = {
  plain: "connectNodeAdapter on http2.createServer",
  listener: "connectNodeAdapter on listen() (one port, HTTP/1.1 + h2c)",
  bare: "serve()'s handler: request context + deadline timer, createRpcAdapter, no gate, no interceptors",
  all: "every layer (composed here)",
  serve: "serve() itself",
} as const;
type Base = keyof typeof base;
type Own = Base | `-${Layer}`;
type Variant = Own | `${Own}@before`;
const ownVariants: Own[] = ["plain", "listener", "bare", "all", "serve", ...layerNames.map((l) => `-${l}` as const)];
const chosen = process.argv[5] && process.argv[5] !== "all" ? new Set(process.argv[5].split(",")) : undefined;
for (const v of chosen ?? []) if (!ownVariants.includes(v as Own)) throw new Error(`unknown variant ${v}; known: ${ownVariants.join(", ")}`);
const beforeTree = process.argv[6];
const afterVariants = ownVariants.filter((v) => v === "all" || v === "plain" || !chosen || chosen.has(v));
const variants: Variant[] = beforeTree ? afterVariants.flatMap((v): Variant[] => [v, `${v}@before`]) : afterVariants;

function startVariant(variant: Own): Promise<number> {
  if (variant === "plain") return plainHttp2();
  if (variant === "listener") return listenPlain();
  if (variant === "serve") return servePlatform();
  if (variant === "bare") return composeHop(new Set(layerNames));
  if (variant === "all") return composeHop(new Set());
  const layer = variant.slice(1) as Layer;
  promClientOff = layer === "promClient";
  return composeHop(new Set([layer]));
}

/** CPU microseconds this process has used (user + system). */
const cpuNow = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

const childVariant = process.env.HOP_ABLATION_VARIANT as Own | undefined;
if (childVariant !== undefined) {
  // A child serves one variant and reports its own CPU time when asked.
  const port = await startVariant(childVariant);
  process.on("message", () => process.send?.({ cpuUs: cpuNow() }));
  process.send?.({ port });
} else {
  await runParent();
}

interface ServerProcess {
  client: { get(req: object): Promise<unknown> };
  cpuUs(): Promise<number>;
  child: ChildProcess;
}

async function spawnVariant(variant: Variant): Promise<ServerProcess> {
  const [own, tree] = variant.endsWith("@before") ? [variant.split("@")[0] as Own, beforeTree!] : [variant as Own, undefined];
  const child = fork(tree ? join(tree, "lab", "profile", "hop-ablation.ts") : fileURLToPath(import.meta.url), [], {
    execArgv: process.execArgv,
    // tsx reads the tsconfig (the workspaces' paths) from the working directory.
    ...(tree ? { cwd: tree } : {}),
    env: { ...process.env, HOP_ABLATION_VARIANT: own },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (m) => resolve((m as { port: number }).port));
    child.once("exit", (code) => reject(new Error(`variant ${variant} exited (${code}) before serving`)));
  });
  const client = createClient(Counter, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` })) as unknown as ServerProcess["client"];
  const cpuUs = () =>
    new Promise<number>((resolve) => {
      child.once("message", (m) => resolve((m as { cpuUs: number }).cpuUs));
      child.send("cpu");
    });
  return { client, cpuUs, child };
}

async function runParent(): Promise<void> {
  const servers = new Map<Variant, ServerProcess>();
  for (const v of variants) servers.set(v, await spawnVariant(v));

  /** The server's CPU per request (its process alone; the client's work is in this one). */
  async function run(variant: Variant, n: number): Promise<number> {
    const server = servers.get(variant)!;
    // Warm again first: a server process left idle while the others ran comes back with cold
    // caches (and V8 may have flushed its code); measured at once, the variant measured most
    // often looked cheapest (a run with "all" before every leave-one-out put "all" below plain).
    for (let i = 0; i < Math.min(200, n); i++) await server.client.get({}).catch(() => {});
    let next = 0;
    const before = await server.cpuUs();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          next++;
          // A machine starved for seconds (other users of its cores) can make a request miss the
          // platform's default deadline: counted, not fatal; the table says how many.
          await server.client.get({}).catch(() => {
            failures.set(variant, (failures.get(variant) ?? 0) + 1);
          });
        }
      }),
    );
    return ((await server.cpuUs()) - before) / n;
  }
  const failures = new Map<Variant, number>();

  // Every variant measured equally often: measuring "all" again before each "-layer" (to share
  // a moment's noise) made it the cheapest variant of all, below plain (docs/performance.md).
  const results: Record<string, number[]> = await alternatingVariants(variants, run, {
    n: requests,
    // Long enough for every process to reach optimized code: with a few thousand requests, a variant
    // measured less often than another still ran partly unoptimized and looked dearer.
    warmupN: Math.max(5_000, requests),
    rounds,
    onRound: (r) => process.stderr.write(`round ${r}/${rounds}\n`),
  });
  for (const s of servers.values()) s.child.kill();

  const us = (x: number) => Math.round(x);
  const has = (v: string) => results[v] !== undefined;
  const diff = (a: string, b: string) => (has(a) && has(b) ? us(medianDifference(results[a]!, results[b]!)) : undefined);
  /** One table row per layer: its price after (this tree) and, with a before-tree, before. */
  const row = (layer: string, a: string, b: string, buys: string) => ({
    layer,
    addedUs: diff(a, b),
    ...(beforeTree ? { beforeUs: diff(`${a}@before`, `${b}@before`) } : {}),
    buys,
  });
  const rows = [
    row("listener: listen() vs http2.createServer", "listener", "plain", base.listener),
    row("serve()'s handler + createRpcAdapter + request context", "bare", "listener", base.bare),
    ...layerNames.map((layer) => row(layer, "all", `-${layer}`, layers[layer])),
    row("serve() over plain (total added)", "serve", "plain", base.serve),
    row("composed, every layer, over plain", "all", "plain", base.all),
  ];
  const totals = {
    plainUs: us(median(results.plain!)),
    ...(beforeTree ? { plainBeforeUs: us(median(results["plain@before"]!)) } : {}),
    serveAfterMinusBeforeUs: beforeTree ? diff("serve", "serve@before") : undefined,
    allAfterMinusBeforeUs: beforeTree ? diff("all", "all@before") : undefined,
  };
  const lines = [
    `server CPU µs per request, median over ${rounds} rounds of ${requests} requests at ${concurrency} concurrent, one process per variant`,
    "",
    beforeTree ? "| layer | µs added before | µs added after | what it buys |" : "| layer | µs added | what it buys |",
    beforeTree ? "| --- | --- | --- | --- |" : "| --- | --- | --- |",
    ...rows
      .filter((r) => r.addedUs !== undefined)
      .map((r) => (beforeTree ? `| ${r.layer} | ${r.beforeUs} | ${r.addedUs} | ${r.buys} |` : `| ${r.layer} | ${r.addedUs} | ${r.buys} |`)),
    "",
    Object.entries(totals)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k} ${v}`)
      .join(", "),
    `failed requests: ${failures.size === 0 ? "none" : [...failures].map(([v, n]) => `${v} ${n}`).join(", ")}`,
  ];
  process.stderr.write(`${lines.join("\n")}\n`);
  process.stderr.write(`${JSON.stringify({ rows, totals, rounds: Object.fromEntries(Object.entries(results).map(([v, r]) => [v, r.map(us)])) })}\n`);
  process.exit(0);
}
