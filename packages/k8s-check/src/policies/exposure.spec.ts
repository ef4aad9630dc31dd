import { describe } from "node:test";
import type { IService } from "kubernetes-models/v1/Service";
import { flags, passesValidPlatform } from "../testing/check.js";
import { find } from "../testing/fixture.js";
import { exposure } from "./exposure.js";

const svc = (o: Parameters<typeof find>[0], name: string) => find<IService>(o, "Service", name);

describe("policy: exposure", () => {
  passesValidPlatform(exposure);
  flags(exposure, "internal service behind a LoadBalancer", /Service\/orders: LoadBalancer exposes orders; only the gateway may be exposed/, (o) => {
    const s = svc(o, "orders");
    if (s.spec) s.spec.type = "LoadBalancer";
  });
  flags(exposure, "NodePort to an internal service", /Service\/checkout: NodePort exposes checkout/, (o) => {
    const s = svc(o, "checkout");
    if (s.spec) s.spec.type = "NodePort";
  });
  flags(exposure, "load balancer to the admin port", /Service\/gateway-public: LoadBalancer port 80 targets the admin port of gateway/, (o) => {
    const p = svc(o, "gateway-public").spec?.ports?.[0];
    if (p) p.targetPort = 9080;
  });
  flags(
    exposure,
    "a ClusterIP Service publishing the admin port",
    /Service\/orders: port 9082 targets the admin port of orders; Services publish only the RPC port/,
    (o) => svc(o, "orders").spec?.ports?.push({ name: "admin", port: 9082, targetPort: "admin" }),
  );
  flags(exposure, "a Service that selects nothing", /Service\/checkout: selects no Deployment/, (o) => {
    const s = svc(o, "checkout");
    if (s.spec) s.spec.selector = { "app.kubernetes.io/name": "nobody" };
  });
  flags(exposure, "externalIPs", /Service\/gateway: ExternalName and externalIPs are not used/, (o) => {
    const s = svc(o, "gateway");
    if (s.spec) s.spec.externalIPs = ["203.0.113.7"];
  });
  flags(exposure, "Ingress to an internal service", /Service\/checkout: Ingress exposes checkout/, (o) =>
    o.push({
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name: "leak" },
      spec: { rules: [{ http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "checkout", port: { number: 8081 } } } }] } }] },
    }),
  );
  flags(exposure, "Ingress to a Service that is not rendered", /Ingress\/leak: backend nowhere is not a rendered Service/, (o) =>
    o.push({
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name: "leak" },
      spec: { defaultBackend: { service: { name: "nowhere", port: { number: 80 } } } },
    }),
  );
});
