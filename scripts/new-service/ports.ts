/**
 * Ports for a new service: the smallest pair 8080+k (RPC) / 9080+k
 * (operator) that no service manifest (services/<name>/service.json) uses,
 * nor the observability profile (Grafana 3000, Prometheus 9090).
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const reserved = [3000, 9090];

/** Every port some services/<name>/service.json declares. */
export function manifestPorts(root: string): Set<number> {
  const used = new Set<number>();
  for (const dir of readdirSync(join(root, "services"))) {
    const file = join(root, "services", dir, "service.json");
    if (!existsSync(file)) continue;
    const ports = (JSON.parse(readFileSync(file, "utf8")) as { ports?: Record<string, unknown> }).ports ?? {};
    for (const p of Object.values(ports)) if (typeof p === "number") used.add(p);
  }
  return used;
}

export function nextPortPair(used: ReadonlySet<number>): { rpc: number; admin: number } {
  for (let k = 1; k < 900; k++) {
    const pair = { rpc: 8080 + k, admin: 9080 + k };
    if (![pair.rpc, pair.admin].some((p) => used.has(p) || reserved.includes(p))) return pair;
  }
  throw new Error("no free port pair between 8081/9081 and 8979/9979");
}
