import { describe } from "node:test";
import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { flags, passesValidPlatform } from "../testing/check.js";
import { container, find } from "../testing/fixture.js";
import { databaseConnections } from "./database-connections.js";

describe("policy: database-connections", () => {
  passesValidPlatform(databaseConnections);
  // (maxReplicas 10 + maxSurge 1) x DB_POOL_MAX 4 = 44 > 30.
  flags(databaseConnections, "too many replicas", /database: .* adds up to 44 connections, over the budget of 30/, (o) => {
    const spec = find<IHorizontalPodAutoscaler>(o, "HorizontalPodAutoscaler", "orders").spec;
    if (spec) spec.maxReplicas = 10;
  });
  // Without DB_POOL_MAX the code's default (10) counts: (4 + 1) x 10 = 50.
  flags(databaseConnections, "the code's larger default pool", /adds up to 50 connections/, (o) => {
    const c = container(o, "orders");
    c.env = c.env?.filter((e) => e.name !== "DB_POOL_MAX");
  });
});
