import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../service-modules.js";
import { composeServices } from "./compose.js";
import { kubernetesServices, shippedOverlays } from "./kubernetes.js";

test("a Kubernetes overlay's services: env over envFrom ConfigMaps, each variable with where it was set, secrets never read", () => {
  const production = shippedOverlays().find((d) => d.endsWith("production"))!;
  const orders = kubernetesServices(production).find((s) => s.name === "orders")!;
  assert.deepEqual(orders.env["DB_POOL_MAX"], { value: "5", source: "deploy/k8s/overlays/production: Deployment/orders env" });
  assert.deepEqual(orders.env["DRAIN_TIMEOUT_MS"], { value: "10000", source: "deploy/k8s/overlays/production: ConfigMap/platform-common" });
  assert.match(orders.env["DATABASE_URL"]!.value, /^postgres:\/\/from-a-secret@/);
  assert.match(orders.env["DATABASE_URL"]!.source, /\(Secret platform-database\/orders-url\)$/);
  assert.equal(orders.where, "deploy/k8s/overlays/production: Deployment/orders");
  const dev = shippedOverlays().find((d) => d.endsWith("dev"))!;
  assert.equal(kubernetesServices(dev).find((s) => s.name === "gateway")!.env["LOG_LEVEL"]!.value, "debug", "the overlay's patch is applied");
});

test("a compose file's services: only those naming a SERVICE; ${VAR:-x} takes its default, any other ${VAR} is never read", () => {
  const dir = mkdtempSync(join(tmpdir(), "audit-compose-"));
  try {
    const file = join(dir, "compose.yml");
    writeFileSync(
      file,
      [
        "x-base: &base",
        "  environment: &env",
        "    LOG_LEVEL: info",
        "services:",
        "  postgres:",
        "    environment: { POSTGRES_PASSWORD: secret }",
        "  orders:",
        "    environment:",
        "      <<: *env",
        "      SERVICE: orders",
        "      DB_POOL_MAX: ${POOL:-7}",
        "      DATABASE_URL: postgres://orders:${ORDERS_DB_PASSWORD:?set it}@postgres:5432/platform",
        "  stock:",
        "    environment: [SERVICE=stock, PORT=8083]",
      ].join("\n"),
    );
    const services = composeServices(file);
    assert.deepEqual(
      services.map((s) => s.name),
      ["orders", "stock"],
    );
    const orders = services[0]!;
    assert.equal(orders.env["LOG_LEVEL"]!.value, "info", "YAML merge keys are applied");
    assert.equal(orders.env["DB_POOL_MAX"]!.value, "7");
    assert.equal(orders.env["DATABASE_URL"]!.value, "postgres://orders:redacted@postgres:5432/platform");
    assert.equal(orders.env["DB_POOL_MAX"]!.source, `${file}: services.orders.environment`);
    assert.equal(services[1]!.env["PORT"]!.value, "8083");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.ok(repoRoot.endsWith("/"));
});
