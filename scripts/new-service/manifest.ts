/**
 * The new service's manifest (services/<name>/service.json, the contract in
 * docs/adding-a-service.md), from the example's: the same shape and keys,
 * with the new name, ports, description and public flag; its APIs and
 * database schema and role renamed. Written one key per line, small values
 * inline, as the examples' are.
 */
import type { ServiceNames } from "./names.js";
import { renameText, type TokenMap } from "./token-map.js";

export interface ManifestChoices {
  names: ServiceNames;
  ports: { rpc: number; admin: number };
  public: boolean;
  map: TokenMap;
}

export function renderManifest(example: Record<string, unknown>, c: ManifestChoices): string {
  const manifest: Record<string, unknown> = {
    ...example,
    name: c.names.name,
    description: `The ${c.names.name} service`,
    ports: c.ports,
    apis: ((example["apis"] as string[] | undefined) ?? []).map((api) => renameText(api, c.map)),
    public: c.public,
    dependencies: [],
  };
  // The examples run under npm start only; the copy is a service to deploy.
  delete manifest["deploy"];
  if (example["database"] !== undefined) manifest["database"] = { schema: c.names.snake, role: c.names.snake };
  return `{\n${Object.entries(manifest)
    .map(([k, v]) => `  ${JSON.stringify(k)}: ${inline(v)}`)
    .join(",\n")}\n}\n`;
}

/** `{ "rpc": 8086, "admin": 9086 }`, `["a.v1.AService"]`: JSON on one line, spaced like the examples. */
function inline(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inline).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${inline(v)}`);
    return entries.length === 0 ? "{}" : `{ ${entries.join(", ")} }`;
  }
  return JSON.stringify(value);
}
