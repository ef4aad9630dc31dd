/**
 * `npm run trace:picture`: starts the platform on the embedded database
 * with spans exported to a loopback OTLP receiver, places one order with a
 * 3 s deadline, and draws that order's trace to docs/tracing/place-order-trace.svg
 * (the picture in the README). Stops everything it started.
 */
import "../../packages/launcher/src/require-node.js";
import { mkdirSync, mkdtempSync, chmodSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { chainManifests } from "../chain.js";
import { startPlatform } from "@platform/launcher";
import { checkoutV1 } from "@platform/proto";
import { startOtlpReceiver } from "./otlp-receiver.js";
import { treeOrder, waterfallSvg } from "./waterfall-svg.js";

const out = resolve(process.argv[2] ?? "docs/tracing/place-order-trace.svg");
const receiver = await startOtlpReceiver();
const dataDir = mkdtempSync(join(tmpdir(), "trace-picture-"));
// The database runs as an unprivileged user, which must reach its data directory.
chmodSync(dataDir, 0o755);
const platform = await startPlatform({
  dataDir,
  manifests: chainManifests(),
  freePorts: true,
  env: { LOG_LEVEL: "warn", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: "100" },
  onProgress: (line) => process.stdout.write(`[trace] ${line}\n`),
});
try {
  const client = createClient(checkoutV1.CheckoutService, createGrpcTransport({ baseUrl: platform.gatewayUrl }));
  // A warm-up order first, so the picture shows a steady request, not connection set-up.
  await client.placeOrder({ customerId: "warm-up", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] }, { timeoutMs: 3000 });
  const traceId = randomBytes(16).toString("hex");
  await client.placeOrder(
    { customerId: "traced", items: [{ sku: "MUG-CERAMIC", quantity: 2 }] },
    { timeoutMs: 3000, headers: { traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01`, "idempotency-key": `picture-${traceId}` } },
  );
  const servers = () => new Set(receiver.spans.filter((s) => s.span.traceId === traceId && s.span.kind === 2).map((s) => s.service));
  for (let i = 0; i < 100 && servers().size < 4; i++) await new Promise((r) => setTimeout(r, 100));
  const spans = receiver.spans.filter((s) => s.span.traceId === traceId);
  if (servers().size < 4) throw new Error(`only ${[...servers()].join(", ")} sent their spans`);
  mkdirSync(resolve(out, ".."), { recursive: true });
  writeFileSync(out, waterfallSvg(spans, "One PlaceOrder through gateway -> checkout -> orders -> pricing -> PostgreSQL (3 s deadline)"));
  for (const { item, depth } of treeOrder(spans)) process.stdout.write(`${"  ".repeat(depth)}${item.service}: ${item.span.name}\n`);
  process.stdout.write(`[trace] ${spans.length} spans written to ${out}\n`);
} finally {
  await platform.stop();
  await receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
}
