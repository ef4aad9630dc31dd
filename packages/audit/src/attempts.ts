import type { DescMethod } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel as IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { pathsBelow, type CallGraph, type Hop } from "./call-graph.js";
import type { ServiceDescription } from "./model.js";
import { servedApis } from "./service-modules.js";

/** Worst-case attempts of one public method at one place at the bottom. */
export interface MethodAttempts {
  edge: string;
  method: string;
  /** Service names from the edge down, then "database" when the path ends in one. */
  path: string[];
  factors: number[];
  total: number;
  /** e.g. "stock's database", or a service that calls nothing. */
  at: string;
  /** Under total failure the edge's retry budget allows about this many attempts per request (1 + share); undefined without a budget. */
  budgetCap: number | undefined;
  minRetriesPerSec: number | undefined;
}

/** Whether the retry loop of `hop` may repeat `method`: the platform's loop only repeats methods the proto marks safe (runtime retry-interceptor.ts). */
export function edgeAttempts(hop: Hop, method: DescMethod): number {
  const r = hop.dependency.retry;
  if (!r.platformLoop) return r.maxAttempts;
  const repeatable = method.idempotency === IdempotencyLevel.NO_SIDE_EFFECTS || method.idempotency === IdempotencyLevel.IDEMPOTENT;
  return repeatable ? r.maxAttempts : 1;
}

/** Transactions per call at a service's database: one, unless a plug-in's database client repeats them. */
export function databaseAttempts(s: ServiceDescription): number {
  return s.databaseAttempts;
}

/**
 * Multiplies out, per public method (each method an edge forwards to a
 * dependency), the attempts at every hop down to each database. Inner hops
 * count their worst case: the configuration says which services a service
 * calls, not which of its methods calls which, so every path the graph
 * allows below the edge's dependency is counted (a superset of what one
 * method uses; docs/audit.md).
 */
export async function multiplyAttempts(graph: CallGraph): Promise<MethodAttempts[]> {
  const out: MethodAttempts[] = [];
  for (const edge of graph.edges) {
    for (const hop of graph.hops.filter((h) => h.caller === edge && h.callee !== undefined)) {
      const callee = hop.callee!;
      const budget = hop.dependency.retry.platformLoop ? hop.dependency.retry.budget : undefined;
      const paths = pathsBelow(graph, callee);
      for (const api of await servedApis(callee.name)) {
        for (const method of api.methods) {
          const worst = new Map<string, MethodAttempts>();
          for (const p of paths) {
            const factors = [edgeAttempts(hop, method), ...p.hops.map((h) => h.dependency.retry.maxAttempts)];
            const path = [edge.name, callee.name, ...p.hops.map((h) => h.callee!.name)];
            let at = p.end.name;
            if (p.end.database) {
              factors.push(databaseAttempts(p.end));
              path.push("database");
              at = `${possessive(p.end.name)} database`;
            }
            const total = factors.reduce((a, b) => a * b, 1);
            const known = worst.get(at);
            if (known === undefined || total > known.total) {
              worst.set(at, {
                edge: edge.name,
                method: method.name,
                path,
                factors,
                total,
                at,
                budgetCap: budget && factors[0]! > 1 ? 1 + budget.percentCanRetry : undefined,
                minRetriesPerSec: budget?.minRetriesPerSec,
              });
            }
          }
          out.push(...worst.values());
        }
      }
    }
  }
  return out;
}

export function formatAttempts(a: MethodAttempts): string {
  const cap =
    a.budgetCap !== undefined
      ? `; budget-capped at ${round(a.budgetCap)}x under total failure (plus at most ${a.minRetriesPerSec} ${a.minRetriesPerSec === 1 ? "retry" : "retries"}/s per ${a.edge} process)`
      : a.factors[0]! > 1
        ? "; no retry budget: every attempt is made under total failure"
        : "";
  return `${a.method}: ${a.factors.join(" x ")} = ${a.total} attempt${a.total === 1 ? "" : "s"} at ${a.at} (${a.path.join(" -> ")})${cap}`;
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** "orders" -> "orders'", "gateway" -> "gateway's". */
export function possessive(name: string): string {
  return name.endsWith("s") ? `${name}'` : `${name}'s`;
}
