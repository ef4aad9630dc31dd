import assert from "node:assert/strict";
import { it } from "node:test";
import * as resilience from "./index.js";

it("exports the curated public surface", () => {
  const expected = [
    // shared contract
    "FakeClock",
    "systemClock",
    "createScope",
    "currentScope",
    "runInScope",
    "remainingMs",
    "abortReason",
    // this package
    "FakeScheduler",
    "systemScheduler",
    "seededRandom",
    "parseTimeoutHeader",
    "formatGrpcTimeout",
    "formatConnectTimeout",
    "resolveInboundDeadline",
    "backoffDelayMs",
    "backoffCapMs",
    "RetryBudget",
    "defaultRetryPolicy",
    "noRetryPolicy",
    "neverRetryableCodes",
    "decideRetry",
    "readPushback",
    "pushbackHeaders",
    "grpcRetryPushbackHeader",
    "retryAfterHeader",
    "LatencyEstimate",
    "Bulkhead",
    "AdaptiveLimit",
    "CircuitBreaker",
    "isDependencyFailure",
    "localRejection",
    "markLocalRejection",
    "IntakeController",
    "AdmissionController",
    "currentFaults",
    "setFaults",
    "parseFaults",
    "shouldFail",
    "shouldDropResponse",
    "faultApplies",
    "injectedDelay",
    "setScopeTelemetry",
    "scopeTelemetry",
  ];
  assert.deepEqual(Object.keys(resilience).sort(), [...expected].sort());
});
