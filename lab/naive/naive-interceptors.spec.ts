/**
 * The storm lab's naive baseline must attempt exactly what docs/storm-lab.md
 * says it does, or the lab's comparison means nothing: 3 attempts per call
 * on anything transient (timeouts included), 200 ms then 400 ms apart, a
 * fixed per-attempt timeout whatever the caller has left, and, stacked hop
 * on hop, 3^n attempts at the bottom.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { createScope, runInScope } from "@platform/resilience";
import { naiveClientInterceptors, naiveRetryable } from "./naive-interceptors.js";

type Next = (req: UnaryRequest) => Promise<UnaryResponse>;

function request(timeoutHeaderMs?: number): UnaryRequest {
  const header = new Headers({ "content-type": "application/grpc+proto" });
  if (timeoutHeaderMs !== undefined) header.set("grpc-timeout", `${timeoutHeaderMs}m`);
  return { service: { typeName: "x.v1.X" }, method: { name: "Y" }, header, signal: new AbortController().signal } as unknown as UnaryRequest;
}

/** A client of `dependency` as the naive profile builds it, around `next`. */
function naiveClient(dependency: string, callTimeoutMs: number, next: Next): Next {
  return naiveClientInterceptors(dependency, callTimeoutMs).reduceRight<Next>((n, i) => i(n as never) as Next, next);
}

test("naive: a failing dependency is attempted exactly 3 times, with 200 ms and 400 ms of backoff between attempts", async () => {
  const at: number[] = [];
  const call = naiveClient("spec-a", 5000, async () => {
    at.push(performance.now());
    throw new ConnectError("down", Code.Unavailable);
  });
  await assert.rejects(call(request()), (e: ConnectError) => e.code === Code.Unavailable);
  assert.equal(at.length, 3);
  // Backoff is a floor (timers never fire early): the second gap is the doubled one.
  const gaps = [at[1]! - at[0]!, at[2]! - at[1]!];
  assert.ok(gaps[0]! >= 199 && gaps[1]! >= 399, `gaps ${gaps.map((g) => g.toFixed(0)).join(", ")} ms`);
});

test("naive: transient codes, timeouts included, are retried; a caller's mistake is not", async () => {
  assert.deepEqual([...naiveRetryable].map((c) => Code[c]).sort(), ["DeadlineExceeded", "Internal", "ResourceExhausted", "Unavailable", "Unknown"]);
  let attempts = 0;
  const call = naiveClient("spec-b", 5000, async () => {
    attempts++;
    throw new ConnectError("bad sku", Code.InvalidArgument);
  });
  await assert.rejects(call(request()), (e: ConnectError) => e.code === Code.InvalidArgument);
  assert.equal(attempts, 1);
});

test("naive: every attempt carries the hop's own fixed timeout, not what the caller has left, and the request id travels on", async () => {
  const seen: { timeout: string | null; requestId: string | null }[] = [];
  const call = naiveClient("spec-c", 8000, async (req) => {
    seen.push({ timeout: req.header.get("grpc-timeout"), requestId: req.header.get("x-request-id") });
    if (seen.length < 2) throw new ConnectError("down", Code.Unavailable);
    return {} as UnaryResponse;
  });
  // The caller has 300 ms left; the naive hop asks for 8 s anyway, on each attempt.
  const scope = createScope({ timeoutMs: 300, requestId: "user-req-1", procedure: "/x.v1.X/Z" });
  await runInScope(scope, () => call(request(300))).finally(() => scope.dispose());
  assert.deepEqual(seen, [
    { timeout: "8000m", requestId: "user-req-1" },
    { timeout: "8000m", requestId: "user-req-1" },
  ]);
});

test("naive: an attempt that outlives the fixed timeout is abandoned and retried (the abandoned one is not cancelled below)", async () => {
  let attempts = 0;
  const call = naiveClient("spec-d", 50, (req) => {
    attempts++;
    // A dependency that never answers; only the attempt's own signal ends the wait.
    return new Promise<UnaryResponse>((_, reject) => req.signal.addEventListener("abort", () => reject(new ConnectError("aborted", Code.Canceled))));
  });
  await assert.rejects(call(request()), (e: ConnectError) => e.code === Code.DeadlineExceeded);
  assert.equal(attempts, 3);
});

test("naive: stacked hops multiply: 3 naive hops over a dead dependency make 27 attempts at the bottom", async () => {
  let bottom = 0;
  const dead: Next = async () => {
    bottom++;
    throw new ConnectError("down", Code.Unavailable);
  };
  // Backoff is real time; each hop's retries add 0.6 s, so the chain takes about 0.6 + 3 x (0.6 + 3 x 0.6) = 7.8 s.
  const inner = naiveClient("spec-e1", 60_000, dead);
  const middle = naiveClient("spec-e2", 60_000, () => inner(request()));
  const outer = naiveClient("spec-e3", 60_000, () => middle(request()));
  await assert.rejects(outer(request()));
  assert.equal(bottom, 27);
});
