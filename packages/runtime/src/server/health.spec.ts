import assert from "node:assert/strict";
import { test } from "node:test";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { healthV1 } from "@platform/proto";
import { HealthState, type OwnResources, registerHealthService } from "./health.js";
import { noteDependencyRestarting } from "../client/restart-signal.js";

const { SERVING, NOT_SERVING } = healthV1.HealthCheckResponse_ServingStatus;
const api = "pricing.v1.PricingService";

/** A ready server with one API whose own resources are as `state` says; `checks` counts their runs. */
function setup(state: { answers: boolean; restarting?: string }) {
  let checks = 0;
  const own: OwnResources = {
    check: async () => {
      checks++;
      if (!state.answers) throw new Error("pricing-db: statement failed");
    },
    restarting: () => state.restarting,
  };
  const health = new HealthState([api], own);
  health.setAll(true);
  const client = createClient(
    healthV1.Health,
    createRouterTransport((router) => registerHealthService(router, health)),
  );
  const check = async (service: string) => {
    let waitingFor: string | null = null;
    const res = await client.check({ service }, { onHeader: (h) => (waitingFor = h.get("x-waiting-for-restart")) });
    return { status: res.status, waitingFor };
  };
  return { check, checks: () => checks };
}

test("an API's health checks the service's own resources; the whole server's (\"\", what orchestrators ask) does not", async () => {
  const state = { answers: false };
  const { check, checks } = setup(state);
  assert.deepEqual(await check(""), { status: SERVING, waitingFor: null });
  assert.equal(checks(), 0);
  assert.deepEqual(await check(api), { status: NOT_SERVING, waitingFor: null });
  state.answers = true;
  await new Promise((r) => setTimeout(r, 120)); // past the shared answer's 100 ms
  assert.deepEqual(await check(api), { status: SERVING, waitingFor: null });
});

test("close checks share one run of the own-resources check", async () => {
  const { check, checks } = setup({ answers: true });
  await Promise.all(Array.from({ length: 5 }, () => check(api)));
  assert.equal(checks(), 1);
});

test("a service whose database restarts says so, NOT_SERVING at once without running the check", async () => {
  const { check, checks } = setup({ answers: true, restarting: "pricing-db" });
  assert.deepEqual(await check(api), { status: NOT_SERVING, waitingFor: "pricing-db" });
  assert.equal(checks(), 0);
});

test("a dependency's restart, noted by this process, is passed on to its callers", async () => {
  const { check } = setup({ answers: true });
  noteDependencyRestarting("pricing", "pricing-db");
  assert.deepEqual(await check(api), { status: SERVING, waitingFor: "pricing: pricing-db" });
});
