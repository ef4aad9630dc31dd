import { currentFaults, faultApplies } from "@platform/resilience";

/** `db.unreachable` in force: the transaction fails before a connection is taken, as a refused connection would. */
export function unreachableNow(): boolean {
  const spec = currentFaults().db;
  return spec?.unreachable === true && faultApplies(spec);
}

/** The server-side faults (latency, errors) in force for a transaction that has begun; one event of a `times` count. */
export function serverFaultNow(): { latencyMs?: number; errorRate?: number } | undefined {
  const spec = currentFaults().db;
  if (spec === undefined || spec.unreachable === true || !(spec.latencyMs || spec.errorRate)) return undefined;
  return faultApplies(spec) ? spec : undefined;
}
