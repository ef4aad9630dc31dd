import { containerWhere } from "../manifests.js";
import { withContainer, type Policy } from "./policy.js";

export const probes: Policy = {
  name: "probes",
  rule: "Readiness and liveness (and startup, if any) are native gRPC probes (grpc.health.v1) on the RPC port.",
  check(m) {
    const out: string[] = [];
    for (const w of withContainer(m)) {
      const cw = containerWhere(w);
      const c = w.container;
      for (const [probe, p] of [
        ["readinessProbe", c.readinessProbe],
        ["livenessProbe", c.livenessProbe],
      ] as const) {
        if (p?.grpc?.port === undefined || p.grpc.port !== w.rpcPort) out.push(`${cw}: ${probe} must be a gRPC probe on the RPC port ${w.rpcPort}`);
      }
      if (c.startupProbe && c.startupProbe.grpc?.port !== w.rpcPort) out.push(`${cw}: startupProbe must be a gRPC probe on the RPC port ${w.rpcPort}`);
    }
    return out;
  },
};
