import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Every fully-qualified service declared under proto/ (`package x.v1;` plus
 * each `service Name {`), read from the .proto text: the registry checks
 * manifests against the API definitions, not against generated code that
 * may be stale.
 */
export function protoApis(protoDir: string): Set<string> {
  const out = new Set<string>();
  for (const file of readdirSync(protoDir, { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".proto")) continue;
    const text = readFileSync(join(protoDir, file), "utf8")
      .replace(/\/\/.*$/gm, "")
      .replace(/\/\*[\s\S]*?\*\//g, "");
    const pkg = /^\s*package\s+([\w.]+)\s*;/m.exec(text)?.[1];
    for (const m of text.matchAll(/^\s*service\s+(\w+)\s*\{/gm)) out.add(pkg ? `${pkg}.${m[1]}` : m[1]!);
  }
  return out;
}
