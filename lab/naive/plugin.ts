/**
 * The storm lab's baseline, "naive": the same four services composed the way
 * most stacks run by default (docs/storm-lab.md), through the platform's own
 * composition points, so the product carries no lab switch:
 *
 * - servers (serve()): no admission control (the queue is unbounded), no
 *   intake controller, and the handler runs to completion whatever its
 *   caller does (naive-server.ts);
 * - dependency clients: every hop retries 3 times with plain exponential
 *   backoff, each attempt with a fixed timeout picked for this service
 *   alone, no budget, no breaker, no bulkhead, no HTTP/2 PING
 *   (naive-interceptors.ts);
 * - databases: a client-side query timeout, no statement_timeout, no
 *   cancel, 3 attempts per transaction (naive-database.ts).
 *
 * Loaded into each service with PLATFORM_PLUGINS=<this file> (the lab's
 * platform/lab-platform.ts does it). Never in production.
 */
import { useDatabaseFactory } from "@platform/database";
import type { PlatformPlugin } from "@platform/runtime";
import { naiveAttempts, naiveClientInterceptors } from "./naive-interceptors.js";
import { createNaiveDatabase } from "./naive-database.js";
import { naiveDeadlineInterceptor } from "./naive-server.js";

/**
 * Each service's "own generous timeout" for its outgoing calls and its
 * database statements: longer toward the edge, as teams pick them one
 * service at a time. NAIVE_CALL_TIMEOUT_MS overrides it for every service.
 */
export const naiveCallTimeoutMs: Record<string, number> = { gateway: 10_000, checkout: 8000, orders: 5000, pricing: 4000 };

export function callTimeoutFor(service: string, env: Record<string, string | undefined> = process.env): number {
  const raw = env["NAIVE_CALL_TIMEOUT_MS"];
  if (raw !== undefined && raw.trim() !== "") {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 600_000) throw new Error(`NAIVE_CALL_TIMEOUT_MS must be an integer between 1 and 600000, got "${raw}"`);
    return n;
  }
  return naiveCallTimeoutMs[service] ?? 5000;
}

export const plugin: PlatformPlugin = {
  name: "naive",
  // The service's database (orders, pricing) is named after it: applicationName.
  setup: () =>
    useDatabaseFactory((opts) => createNaiveDatabase({ ...opts, queryTimeoutMs: callTimeoutFor(opts.applicationName ?? opts.name.replace(/-db$/, "")) })),
  server: (composition, { config, logger, shutdownSignal }) => ({
    interceptors: { ...composition.interceptors, deadline: naiveDeadlineInterceptor({ deadline: config.deadline, logger, shutdownSignal }) },
    admission: false,
    intake: false,
  }),
  dependencyClient: (_composition, { dependency, server }) => ({
    interceptors: naiveClientInterceptors(dependency.name, callTimeoutFor(server.serviceName)),
    // As connect-node runs by default: no PING.
    keepalive: undefined,
  }),
  effects: (service) => ({
    callAttempts: naiveAttempts,
    fixedCallTimeoutMs: callTimeoutFor(service),
    noAdmission: true,
    noIsolation: true,
    noIntake: true,
    databaseAttempts: naiveAttempts,
  }),
};
