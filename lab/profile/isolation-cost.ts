/**
 * CPU time per call of the isolation interceptor alone (breaker, bulkhead
 * with its adaptive limit; the gateway's configuration toward checkout)
 * around a call that resolves at once, inside a call scope, 8 callers at a
 * time: resolves changes of a fraction of a microsecond that the hop tools
 * cannot. Compare a change within one tree (the file before and after,
 * alternately): across two checkouts, tsx-run code differs by 1-1.5 µs per
 * call for the same source (docs/performance.md).
 *
 *   node --import tsx lab/profile/isolation-cost.ts [calls per round] [rounds]
 *
 * Prints the median ns per call over the rounds, and every round's.
 */
import { createScope, minAttemptMs, runInScope, systemClock } from "@platform/resilience";
import { isolationInterceptor } from "../../packages/runtime/src/client/isolation-interceptor.js";
import { loadConfig } from "../../services/gateway/src/config.js";
import { median } from "../stats.js";

const calls = Number(process.argv[2] ?? 200_000);
const rounds = Number(process.argv[3] ?? 7);
if (![calls, rounds].every((n) => Number.isInteger(n) && n > 0)) throw new Error("usage: isolation-cost.ts [calls per round] [rounds]");

const config = loadConfig({ PORT: "0", ADMIN_PORT: "0" }, []);
const reserveMs = minAttemptMs(config.server.deadline);
const response = { message: {} };
const call = isolationInterceptor(config.checkout.name, config.checkout.isolation, reserveMs)((() => Promise.resolve(response)) as never);
const req = { method: { name: "ListProducts" }, service: { typeName: "checkout.v1.CheckoutService" } } as never;
const scope = createScope({ timeoutMs: 3_600_000, clock: systemClock, requestId: "isolation-cost", procedure: "/checkout.v1.CheckoutService/ListProducts" });

async function round(n: number): Promise<number> {
  const before = process.cpuUsage();
  await runInScope(scope, () =>
    Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = 0; i < n / 8; i++) await call(req);
      }),
    ),
  );
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / n;
}

await round(calls);
const ns: number[] = [];
for (let i = 0; i < rounds; i++) ns.push(Math.round(await round(calls)));
process.stdout.write(`${JSON.stringify({ nsPerCall: Math.round(median(ns)), rounds: ns })}\n`);
scope.dispose();
process.exit(0);
