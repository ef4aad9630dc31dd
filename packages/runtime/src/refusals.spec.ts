import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { durationMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  ErrorInfoSchema,
  QuotaFailureSchema,
  RetryInfoSchema,
  errorDomain,
  refusalReason,
  refusalReasons,
  retryInfoDelayMs,
} from "@platform/proto/error-details";
import type { LocalRejectionKind, ShedReason } from "@platform/resilience";
import { localRejectionReason, quotaExceededError, refusalError, shedRefusalReason } from "./refusals.js";

test("every local rejection kind maps to its reason; a caller that left is no refusal", () => {
  const expected: Record<LocalRejectionKind, string | undefined> = {
    bulkhead_full: "BULKHEAD_FULL",
    bulkhead_expected_wait: "BULKHEAD_WAIT_TOO_LONG",
    bulkhead_deadline: "DEADLINE_EXPIRED",
    circuit_open: "BREAKER_OPEN",
    budget_too_small: "DEADLINE_TOO_SHORT",
    bulkhead_canceled: undefined,
  };
  for (const [kind, reason] of Object.entries(expected)) assert.equal(localRejectionReason(kind as LocalRejectionKind), reason, kind);
});

test("every admission shed reason maps to its reason; a caller that left is no refusal", () => {
  const expected: Record<ShedReason, string | undefined> = {
    queue_full: "SHED_OVERLOADED",
    queue_timeout: "SHED_OVERLOADED",
    evicted: "SHED_OVERLOADED",
    expired: "DEADLINE_EXPIRED",
    cancelled: undefined,
  };
  for (const [shed, reason] of Object.entries(expected)) assert.equal(shedRefusalReason(shed as ShedReason), reason, shed);
});

test("a retryable refusal says the same delay in its headers and in RetryInfo, at least 1 ms, with ErrorInfo in the platform's domain", () => {
  for (const [given, ms] of [
    [1499.2, 1500],
    [0, 1],
  ] as const) {
    const err = refusalError("overloaded", Code.Unavailable, { reason: "SHED_OVERLOADED", retryAfterMs: given, metadata: { dependency: "pricing" } });
    assert.equal(err.code, Code.Unavailable);
    assert.equal(err.metadata.get("grpc-retry-pushback-ms"), String(ms));
    assert.equal(err.metadata.get("retry-after"), String(Math.ceil(ms / 1000)));
    assert.equal(retryInfoDelayMs(err), ms);
    const [info] = err.findDetails(ErrorInfoSchema);
    assert.deepEqual([info?.reason, info?.domain, info?.metadata], ["SHED_OVERLOADED", errorDomain, { dependency: "pricing" }]);
  }
});

test("a refusal without a delay carries ErrorInfo only, and no pushback headers", () => {
  const err = refusalError("starting: waiting for orders-db", Code.Unavailable, { reason: "STARTING" });
  assert.equal(refusalReason(err), "STARTING");
  assert.deepEqual(err.findDetails(RetryInfoSchema), []);
  assert.equal(err.metadata.get("grpc-retry-pushback-ms"), null);
});

test("QUOTA_EXCEEDED: RESOURCE_EXHAUSTED with QuotaFailure naming the tenant, RetryInfo and the pushback headers", () => {
  const err = quotaExceededError("acme", 250, "2 requests per second (burst 4)");
  assert.equal(err.code, Code.ResourceExhausted);
  assert.equal(refusalReason(err), "QUOTA_EXCEEDED");
  assert.equal(err.metadata.get("grpc-retry-pushback-ms"), "250");
  const [retry] = err.findDetails(RetryInfoSchema);
  assert.equal(retry?.retryDelay && durationMs(retry.retryDelay), 250);
  assert.deepEqual(
    err.findDetails(QuotaFailureSchema).flatMap((q) => q.violations.map((v) => v.subject)),
    ["tenant:acme"],
  );
});

test("another domain's ErrorInfo is not read as one of the platform's reasons", () => {
  const err = new ConnectError("x", Code.Unavailable, undefined, [{ desc: ErrorInfoSchema, value: { reason: "BULKHEAD_FULL", domain: "example.com" } }]);
  assert.equal(refusalReason(err), undefined);
});

test("docs/errors.md lists every reason", () => {
  const doc = readFileSync(new URL("../../../docs/errors.md", import.meta.url), "utf8");
  const missing = refusalReasons.filter((r) => !doc.includes(`\`${r}\``));
  assert.deepEqual(missing, []);
});
