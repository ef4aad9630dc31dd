/**
 * `npm run audit`: the resilience audit (docs/audit.md).
 *
 *   npm run audit                               every configuration the repository ships: defaults, compose, each overlay
 *   npm run audit -- --compose FILE             one compose file (e.g. the misconfigured fixture)
 *   npm run audit -- --k8s OVERLAY_DIR          one kustomize overlay
 *   npm run audit -- --live ADMIN_URL...        running services, from each operator port's GET /admin/config
 *   npm run audit -- --advise ADMIN_URL...      timeout, bulkhead and queue advice from each service's /metrics
 *
 * Exit status 1 on any violation, 2 on bad usage.
 */
import "./require-node.js";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { auditTarget, composeTarget, defaultsTarget, formatTargetAudit, kubernetesTarget, liveTarget, repoRoot, shippedOverlays, type Target } from "@platform/audit";

const usage = "usage: npm run audit [-- --compose FILE | --k8s DIR | --live ADMIN_URL... | --advise ADMIN_URL... [--load-gateway URL --rate N --seconds N]]";
let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      compose: { type: "string", multiple: true },
      k8s: { type: "string", multiple: true },
      live: { type: "boolean", default: false },
      advise: { type: "boolean", default: false },
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

const targets: (() => Promise<Target>)[] = [];
if (args.live) targets.push(() => liveTarget(positionals));
for (const f of args.compose ?? []) targets.push(() => composeTarget(resolve(f)));
for (const d of args.k8s ?? []) targets.push(() => kubernetesTarget(resolve(d)));
if (targets.length === 0 && !args.advise) {
  targets.push(defaultsTarget, () => composeTarget(resolve(repoRoot, "docker-compose.yml")), ...shippedOverlays().map((d) => () => kubernetesTarget(d)));
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
