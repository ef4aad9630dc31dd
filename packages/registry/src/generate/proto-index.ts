import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * packages/proto/src/index.ts: one namespace per API package, named by the
 * package's last two parts (`checkout.v1` -> checkoutV1, `grpc.health.v1`
 * -> healthV1), so that message names of different packages never collide.
 * A new .proto under proto/ is exported without a hand edit. The vendored
 * rule and error types are not APIs: buf.validate's code ships with
 * @bufbuild/protovalidate (buf.gen.yaml), and google.rpc's is exported with
 * the helpers that read and write it (packages/proto/src/error-details.ts).
 */
const notApis = ["buf/", "google/"];

export function protoIndex(root: string): string {
  const protoDir = join(root, "proto");
  const files = readdirSync(protoDir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".proto") && !notApis.some((dir) => f.startsWith(dir)))
    .sort();
  const byNamespace = new Map<string, string>();
  const lines: string[] = [];
  for (const file of files) {
    const pkg = /^\s*package\s+([\w.]+)\s*;/m.exec(readFileSync(join(protoDir, file), "utf8"))?.[1];
    if (pkg === undefined) throw new Error(`proto/${file}: no package declaration; every API file needs one (package name.v1;)`);
    const namespace = pkg
      .split(".")
      .slice(-2)
      .join("_")
      .replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
    const other = byNamespace.get(namespace);
    if (other !== undefined) throw new Error(`proto/${file}: its package ${pkg} would be exported as ${namespace}, like proto/${other}; one file per package`);
    byNamespace.set(namespace, file);
    lines.push(`export * as ${namespace} from "./gen/${file.replace(/\.proto$/, "_pb.js")}";`);
  }
  return [
    "// generated from proto/ by npm run generate:services; do not edit.",
    "// One namespace per API package (proto/), so that `checkout.v1` and",
    "// `orders.v1` message names never collide.",
    ...lines,
    "",
  ].join("\n");
}
