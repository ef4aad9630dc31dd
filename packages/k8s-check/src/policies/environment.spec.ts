import { describe } from "node:test";
import assert from "node:assert/strict";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import { flags, passesValidPlatform } from "../testing/check.js";
import { container, find } from "../testing/fixture.js";
import { environment } from "./environment.js";

function setEnv(c: ReturnType<typeof container>, name: string, value: string): void {
  const e = c.env?.find((x) => x.name === name);
  if (e) e.value = value;
  else c.env?.push({ name, value });
}

describe("policy: environment", () => {
  passesValidPlatform(environment);
  flags(environment, "PORT differs from the rpc port", /gateway.*PORT must equal the rpc container port \(8080\)/, (o) =>
    setEnv(container(o, "gateway"), "PORT", "8000"),
  );
  flags(environment, "unnamed ports", /checkout.*needs container ports named rpc and admin/, (o) => {
    for (const p of container(o, "checkout").ports ?? []) delete p.name;
  });
  flags(environment, "wrong SERVICE", /orders.*SERVICE must be orders/, (o) => setEnv(container(o, "orders"), "SERVICE", "stock"));
  flags(environment, "HOST on loopback", /gateway.*HOST=127\.0\.0\.1 is not reachable/, (o) => setEnv(container(o, "gateway"), "HOST", "127.0.0.1"));
  flags(environment, "misspelt variable", /gateway.*DRAIN_TIMEOUT is read by no config/, (o) => setEnv(container(o, "gateway"), "DRAIN_TIMEOUT", "5000"));
  flags(environment, "setting for a dependency the service does not call", /gateway.*ORDERS_MAX_QUEUE is read by no config/, (o) =>
    setEnv(container(o, "gateway"), "ORDERS_MAX_QUEUE", "10"),
  );
  flags(environment, "DATABASE_URL as a literal", /orders.*DATABASE_URL must not be set/, (o) =>
    container(o, "orders").env?.push({ name: "DATABASE_URL", value: "postgres://orders:hunter2@db:5432/platform" }),
  );
  flags(
    environment,
    "another service's database credentials",
    /orders.*DATABASE_URL_FILE must name a file mounted from Secret platform-database, key orders-url/,
    (o) => {
      const volume = find<IDeployment>(o, "Deployment", "orders").spec?.template.spec?.volumes?.find((v) => v.secret?.secretName === "platform-database");
      assert.ok(volume?.secret?.items?.[0]);
      volume.secret.items[0].key = "stock-url";
    },
  );
  flags(
    environment,
    "database URL file outside the Secret's mount",
    /orders.*DATABASE_URL_FILE must name a file mounted from Secret platform-database/,
    (o) => {
      const e = container(o, "orders").env?.find((x) => x.name === "DATABASE_URL_FILE");
      assert.ok(e);
      e.value = "/tmp/url";
    },
  );
  flags(environment, "no DATABASE_URL_FILE where the database is used", /orders.*DATABASE_URL_FILE is required/, (o) => {
    const c = container(o, "orders");
    c.env = c.env?.filter((x) => x.name !== "DATABASE_URL_FILE");
  });
  flags(environment, "DATABASE_URL_FILE where it is not used", /checkout.*DATABASE_URL_FILE given to a service that does not use the database/, (o) =>
    container(o, "checkout").env?.push({ name: "DATABASE_URL_FILE", value: "/var/run/secrets/platform-database/url" }),
  );
  flags(environment, "a credential in plain text", /checkout.*ORDERS_URL holds a credential in plain text/, (o) =>
    setEnv(container(o, "checkout"), "ORDERS_URL", "http://u:p@orders:8082"),
  );
  flags(environment, "envFrom a Secret", /gateway.*envFrom may only reference ConfigMaps/, (o) =>
    container(o, "gateway").envFrom?.push({ secretRef: { name: "platform-database" } }),
  );
  flags(environment, "envFrom a ConfigMap that is not rendered", /gateway.*envFrom references ConfigMap missing/, (o) =>
    container(o, "gateway").envFrom?.push({ configMapRef: { name: "missing" } }),
  );
  flags(environment, "hostPort", /orders.*hostPort exposes port 9082/, (o) => {
    const p = container(o, "orders").ports?.[1];
    if (p) p.hostPort = 9082;
  });
  flags(environment, "hostNetwork", /Deployment\/checkout: hostNetwork exposes every port/, (o) => {
    const spec = find<IDeployment>(o, "Deployment", "checkout").spec?.template.spec;
    if (spec) spec.hostNetwork = true;
  });
});
