/**
 * `npm run audit`: the resilience audit (docs/audit.md).
 *
 *   npm run audit                               every configuration the repository ships: defaults, compose, each overlay
 *   npm run audit -- --compose FILE             one compose file (e.g. the misconfigured fixture)
 *   npm run audit -- --k8s OVERLAY_DIR          one kustomize overlay
 *   npm run audit -- --live ADMIN_URL...        running services, from each operator port's GET /admin/config
 *   npm run audit -- --advise ADMIN_URL...      advice from each service's /metrics over --seconds (30) of real traffic
 *   npm run audit -- --advise --load 40 ADMIN_URL...   the same under a generated open-loop load of 40 req/s (loopback only)
 *
 * Exit status 1 on any violation, 2 on bad usage.
 */
import "../packages/launcher/src/require-node.js";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Target } from "@platform/audit";

const usage = "usage: npm run audit [-- --compose FILE | --k8s DIR | --live ADMIN_URL... | --advise [--seconds N] [--load REQ_PER_S] ADMIN_URL...]";
// biome-ignore lint/suspicious/noImplicitAnyLet: TypeScript types it from the parseArgs call below (control-flow typing), which must sit in the try
let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      compose: { type: "string", multiple: true },
      k8s: { type: "string", multiple: true },
      live: { type: "boolean", default: false },
      advise: { type: "boolean", default: false },
      seconds: { type: "string", default: "30" },
      load: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
} catch (e) {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${usage}\n`);
  process.exit(2);
}
const { values: args, positionals } = parsed;
if (args.help) {
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}
if ((args.live || args.advise) && positionals.length === 0) {
  process.stderr.write(`--live and --advise need the operator URL of each service, e.g. http://127.0.0.1:9080 http://127.0.0.1:9081 ...\n${usage}\n`);
  process.exit(2);
}

if (!args.live && !args.advise && positionals.length > 0) {
  process.stderr.write(`operator URLs need --live or --advise: ${positionals.join(" ")}\n${usage}\n`);
  process.exit(2);
}

// Loaded once the arguments are known: bad usage is answered without a second of a core spent loading the audit.
const {
  advise,
  auditTarget,
  samplePools,
  composeTarget,
  defaultsTarget,
  formatAdvice,
  formatTargetAudit,
  kubernetesTarget,
  liveTarget,
  repoRoot,
  scrape,
  shippedOverlays,
} = await import("@platform/audit");

const targets: (() => Promise<Target>)[] = [];
if (args.live) targets.push(() => liveTarget(positionals));
for (const f of args.compose ?? []) targets.push(() => composeTarget(resolve(f)));
for (const d of args.k8s ?? []) targets.push(() => kubernetesTarget(resolve(d)));
if (targets.length === 0 && !args.advise) {
  targets.push(defaultsTarget, () => composeTarget(resolve(repoRoot, "docker-compose.yml")), ...shippedOverlays().map((d) => () => kubernetesTarget(d)));
}
const rendersOverlays = (args.k8s ?? []).length > 0 || (!args.live && !args.advise && (args.compose ?? []).length === 0);
if (rendersOverlays && !process.env["KUBECTL"]) {
  // The overlays are rendered by the pinned kubectl: installed here when missing, as `npm run setup:kubectl` would.
  const { installPinnedKubectl, pinnedKubectlInstalled } = await import("./kubectl-install.js");
  if (!pinnedKubectlInstalled()) {
    try {
      process.stderr.write(`audit: ${await installPinnedKubectl()}\n`);
    } catch (e) {
      process.stderr.write(`audit: the pinned kubectl could not be installed: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(2);
    }
  }
}

if (args.advise) {
  const seconds = Number(args.seconds);
  const rate = args.load === undefined ? undefined : Number(args.load);
  if (!(Number.isInteger(seconds) && seconds >= 5 && seconds <= 3600) || (rate !== undefined && !(rate > 0 && rate <= 2000))) {
    process.stderr.write(`--seconds must be an integer from 5 to 3600 and --load a rate from 1 to 2000 requests/s\n${usage}\n`);
    process.exit(2);
  }
  try {
    const before = await scrape(positionals);
    let endPeriod = () => {};
    const period = new Promise<void>((resolve) => (endPeriod = resolve));
    const pools = samplePools(
      before.map((s) => ({ service: s.config.service, adminUrl: s.adminUrl })),
      period,
    );
    if (rate === undefined) {
      process.stdout.write(`measuring real traffic for ${seconds} s...\n`);
      await new Promise((r) => setTimeout(r, seconds * 1000));
    } else {
      const gatewayUrl = edgeUrl(before.map((s) => s.config));
      process.stdout.write(`open-loop load: ${rate} req/s for ${seconds} s to ${gatewayUrl} (40 % PlaceOrder, 40 % ListProducts, 20 % GetOrder)...\n`);
      const { runLoad } = await import("../lab/load/run-load.js");
      const result = await runLoad({
        gatewayUrl,
        mode: { kind: "open", phases: [{ durationMs: seconds * 1000, rate }] },
        clientTimeoutMs: 5000,
        customerPrefix: `audit-${Date.now()}-`,
      });
      const failed: Record<string, number> = {};
      for (const b of result.buckets) for (const [code, n] of Object.entries(b.failed)) failed[code] = (failed[code] ?? 0) + n;
      const failures = Object.entries(failed)
        .map(([code, n]) => `${n} ${code}`)
        .join(", ");
      process.stdout.write(`sent ${result.sent}, succeeded ${result.succeeded}${failures ? ` (failed: ${failures})` : ""}\n`);
    }
    endPeriod();
    process.stdout.write(`${formatAdvice(advise(before, await scrape(positionals), seconds, await pools))}\n`);
  } catch (e) {
    process.stderr.write(`audit: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(2);
  }
  process.exit(0);
}

/** The edge's RPC address, from its own configuration; generated load goes to this machine only. */
function edgeUrl(configs: { config: unknown }[]): string {
  for (const c of configs) {
    const server = (c.config as { server?: { host: string; port: number; deadline: { edge: boolean } } }).server;
    if (server?.deadline.edge) {
      const host = server.host === "0.0.0.0" || server.host === "::" ? "127.0.0.1" : server.host;
      if (!["127.0.0.1", "localhost", "::1"].includes(host))
        throw new Error(`--load sends traffic to this machine only; the edge listens on ${host}. Measure real traffic instead (omit --load)`);
      return `http://${host.includes(":") ? `[${host}]` : host}:${server.port}`;
    }
  }
  throw new Error("--load needs the edge's operator port among the URLs (none of them is the edge)");
}

let failed = false;
try {
  for (const make of targets) {
    const audit = await auditTarget(await make());
    process.stdout.write(`${formatTargetAudit(audit)}\n\n`);
    failed ||= !audit.pass;
  }
} catch (e) {
  process.stderr.write(`audit: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(2);
}
if (targets.length > 0) process.stdout.write(failed ? "audit: FAIL (each problem names the variable or file to change)\n" : "audit: PASS\n");
process.exit(failed ? 1 : 0);
