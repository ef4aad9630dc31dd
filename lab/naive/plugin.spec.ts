/**
 * The naive plug-in composes what docs/storm-lab.md says the naive stack
 * is, through the platform's composition points: no admission, no intake,
 * the handler run to completion, naive clients without PING, each
 * service's own fixed timeout (NAIVE_CALL_TIMEOUT_MS overrides it, checked).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createLogger, readEnv, readServerConfig, readDependencyConfig, serverInterceptors, type ServerComposition } from "@platform/runtime";
import { callTimeoutFor, plugin } from "./plugin.js";

const config = readEnv({}, (r) => readServerConfig(r, "orders", { port: 0, adminPort: 0 }));
const logger = createLogger("naive-spec", "silent");

test("servers: no admission, no intake, the deadline interceptor replaced and every other one kept", () => {
  const shutdownSignal = new AbortController().signal;
  const platform: ServerComposition = {
    interceptors: serverInterceptors({ deadline: config.deadline, logger, shutdownSignal }),
    admission: true,
    intake: true,
  };
  const naive = plugin.server!(platform, { config, logger, shutdownSignal });
  assert.equal(naive.admission, false);
  assert.equal(naive.intake, false);
  assert.notEqual(naive.interceptors.deadline, platform.interceptors.deadline);
  for (const role of ["requestLog", "requestId", "tracing", "errors", "faults"] as const)
    assert.equal(naive.interceptors[role], platform.interceptors[role], role);
});

test("dependency clients: the naive retry and fixed-timeout pair only, and no PING", () => {
  const dependency = readEnv({}, (r) => readDependencyConfig(r, "pricing", "http://127.0.0.1:1"));
  const naive = plugin.dependencyClient!({ interceptors: [], keepalive: dependency.keepalive }, { dependency, server: config });
  assert.equal(naive.interceptors.length, 2);
  assert.equal(naive.keepalive, undefined);
});

test("each service's own fixed timeout, overridden by NAIVE_CALL_TIMEOUT_MS, and a bad override refused by name", () => {
  assert.deepEqual(
    ["gateway", "checkout", "orders", "pricing"].map((s) => callTimeoutFor(s, {})),
    [10_000, 8000, 5000, 4000],
  );
  assert.equal(callTimeoutFor("orders", { NAIVE_CALL_TIMEOUT_MS: "1234" }), 1234);
  assert.throws(() => callTimeoutFor("orders", { NAIVE_CALL_TIMEOUT_MS: "soon" }), /NAIVE_CALL_TIMEOUT_MS must be an integer/);
  assert.deepEqual(plugin.effects!("checkout"), {
    callAttempts: 3,
    fixedCallTimeoutMs: 8000,
    noAdmission: true,
    noIsolation: true,
    noIntake: true,
    databaseAttempts: 3,
  });
});
