import { describe } from "node:test";
import { flags, passesValidPlatform } from "../testing/check.js";
import { container } from "../testing/fixture.js";
import { probes } from "./probes.js";

describe("policy: probes", () => {
  passesValidPlatform(probes);
  flags(probes, "no readiness probe", /checkout.*readinessProbe must be a gRPC probe/, (o) => delete container(o, "checkout").readinessProbe);
  flags(
    probes,
    "liveness probe on the admin port",
    /orders.*livenessProbe must be a gRPC probe on the RPC port 8082/,
    (o) => (container(o, "orders").livenessProbe = { grpc: { port: 9082 } }),
  );
  flags(
    probes,
    "HTTP readiness probe instead of gRPC",
    /gateway.*readinessProbe must be a gRPC probe/,
    (o) => (container(o, "gateway").readinessProbe = { httpGet: { path: "/readyz", port: 9080 } }),
  );
  flags(
    probes,
    "startup probe over HTTP",
    /gateway.*startupProbe must be a gRPC probe on the RPC port 8080/,
    (o) => (container(o, "gateway").startupProbe = { tcpSocket: { port: 8080 } }),
  );
});
