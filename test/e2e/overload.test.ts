/**
 * Overload (invariant 7): a server admits what it can, refuses the excess
 * at once with a pushback hint ("not now"), and the edge's intake
 * controller can be driven by hand. Real processes.
 */
import * as http from "node:http";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { eventually, metricValue, setServiceFaults, startTestPlatform, type TestPlatform } from "@platform/test-support";

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform({
    faultInjection: true,
    env: { LOG_LEVEL: "warn" },
    // The queue's wait bound is above the first test's hold (3 s), with room for a loaded machine's lateness.
    serviceEnv: { gateway: { ADMISSION_MAX_CONCURRENT: "2", ADMISSION_MAX_QUEUE: "4", ADMISSION_MAX_QUEUE_WAIT_MS: "8000", INTAKE_ENABLED: "true" } },
  });
});
after(async () => {
  await p?.close();
});

const listProducts = (headers: Record<string, string> = {}) =>
  fetch(`${p.gatewayUrl}/checkout.v1.CheckoutService/ListProducts`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: "{}",
  });

describe("more concurrent requests than the gateway admits", () => {
  // Hold the intake controller at 100%: these bursts would (rightly) make it
  // cut intake, and this describe is about admission control alone.
  const intake = (fraction: string) => fetch(`${p.services.gateway.adminUrl}/admin/intake`, { method: "PUT", body: `{"fraction": ${fraction}}` });
  before(async () => void (await intake("1")));
  after(async () => void (await intake("null")));

  test("the excess is refused at once with 429 and Retry-After; the admitted ones complete in time", async () => {
    // How long checkout holds each call: the first requests must still be held when the excess
    // arrives and is answered, which the test checks (the gateway's in-flight gauge) rather than
    // assumes. Held 300 ms, on a loaded machine the 20 requests reached the gateway over more than
    // that, and later ones were served, not refused (15 served). The queued ones wait one hold
    // (under the 8 s queue wait) and then run one: both within the callers' 10 s.
    const holdMs = 3000;
    await setServiceFaults(p, "checkout", { handler: { latencyMs: holdMs } });
    const gauges = async () => {
      const text = await p.metrics("gateway");
      return { inFlight: metricValue(text, "admission_in_flight"), queued: metricValue(text, "admission_queued") };
    };
    const call = async () => {
      const res = await listProducts({ "connect-timeout-ms": "10000" });
      const body = (await res.json()) as { code?: string };
      return { status: res.status, code: body.code, retryAfter: res.headers.get("retry-after") };
    };
    try {
      // First what admission can hold: 2 in flight, 4 in the queue (of which sheddable requests get 2).
      const firstSettled: Awaited<ReturnType<typeof call>>[] = [];
      const first = Array.from({ length: 6 }, () => call().then((r) => (firstSettled.push(r), r)));
      await eventually(async () => {
        const g = await gauges();
        return g.inFlight === 2 && g.queued + firstSettled.length === 4;
      }, "the first 6: 2 in flight, the rest queued or refused");
      // Then the excess, while those are held.
      const excess = await Promise.all(Array.from({ length: 14 }, call));
      const held = await gauges();
      const results = [...(await Promise.all(first)), ...excess];
      const ok = results.filter((r) => r.status === 200);
      const refused = results.filter((r) => r.status !== 200);
      console.log(
        `[overload] ${ok.length} served, ${refused.length} refused: ${JSON.stringify([...new Set(refused.map((r) => `${r.status} ${r.code}`))])}; ` +
          `after the excess was answered: ${held.inFlight} in flight, ${held.queued} queued`,
      );
      // Refused ones were answered before any served one could finish: at once, not after queueing.
      assert.deepEqual(
        held,
        { inFlight: 2, queued: 4 - firstSettled.filter((r) => r.status !== 200).length },
        "the excess was answered while the first were held",
      );
      assert.deepEqual(
        excess.map((r) => r.status),
        excess.map(() => 429),
        "all the excess was refused",
      );
      // 2 in flight + the sheddable share of the queue (2 of 4); the rest is refused.
      assert.ok(ok.length >= 2 && ok.length <= 4, `served ${ok.length}`);
      assert.equal(ok.length + refused.length, 20);
      for (const r of refused) {
        assert.equal(r.status, 429);
        assert.equal(r.code, "resource_exhausted");
        assert.ok(Number(r.retryAfter) >= 1, "a Retry-After hint");
      }
      const shed = metricValue(await p.metrics("gateway"), "admission_shed_total", { reason: "queue_full", criticality: "sheddable" });
      assert.equal(shed, refused.length, "every refusal was the full queue, counted");
    } finally {
      await setServiceFaults(p, "checkout", {});
    }
  });

  test("gRPC callers get RESOURCE_EXHAUSTED with grpc-retry-pushback-ms", async () => {
    await setServiceFaults(p, "checkout", { handler: { latencyMs: 300 } });
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 12 }, () => p.client("grpc").listProducts({}, { timeoutMs: 5000 })));
      const refused = outcomes.filter((o) => o.status === "rejected") as PromiseRejectedResult[];
      assert.ok(refused.length > 0);
      for (const r of refused) {
        const err = r.reason as { code: number; metadata: Headers };
        assert.equal(err.code, 8, "RESOURCE_EXHAUSTED");
        assert.ok(Number(err.metadata.get("grpc-retry-pushback-ms")) >= 50);
      }
    } finally {
      await setServiceFaults(p, "checkout", {});
    }
  });
});

describe("the intake controller, driven by hand", () => {
  test("intake 0 refuses new requests with 503 and Retry-After; automatic again restores service", async () => {
    const admin = `${p.services.gateway.adminUrl}/admin/intake`;
    const put = (body: string) => fetch(admin, { method: "PUT", body });
    assert.equal((await put('{"fraction": 2}')).status, 400, "a bad fraction is refused");
    const cut = await put('{"fraction": 0}');
    assert.equal(((await cut.json()) as { state: string }).state, "manual");
    const refused = await listProducts();
    assert.equal(refused.status, 503);
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    await put('{"fraction": 1}');
    assert.equal((await listProducts()).status, 200);
    const auto = await put('{"fraction": null}');
    assert.ok(["recovering", "normal"].includes(((await auto.json()) as { state: string }).state));
    assert.equal(metricValue(await p.metrics("gateway"), "intake_state", { state: "manual" }), 0);
  });

  test("a client that resends on its HTTP/1.1 connection before the pushback it was given is answered at that time; a client on another connection, at once", async () => {
    const admin = `${p.services.gateway.adminUrl}/admin/intake`;
    await fetch(admin, { method: "PUT", body: '{"fraction": 0}' });
    const flooder = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const other = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const held = async () => metricValue(await p.metrics("gateway"), "edge_refusals_held_total", {}) ?? 0;
    try {
      const before = await held();
      const first = await postOver(flooder);
      assert.equal(first.status, 503);
      const hintMs = Number(first.headers["grpc-retry-pushback-ms"]);
      assert.ok(hintMs >= 500, `the intake's refusal says when to come back: ${hintMs} ms`);
      assert.equal(await held(), before, "a first refusal is answered at once");
      // The same connection, at once: the client ignored the pushback.
      const early = await postOver(flooder);
      assert.equal(early.status, 503);
      assert.equal(early.socketReused, true, "the resend came on the same connection");
      // The edge holds it until the time the first refusal gave, counted from that answer (the metrics read in between took some of it).
      const afterFirstMs = early.answeredAt - first.answeredAt;
      assert.ok(
        afterFirstMs >= hintMs - 100,
        `answered ${Math.round(afterFirstMs)} ms after the first refusal, at the time the connection was told (${hintMs} ms)`,
      );
      assert.equal(await held(), before + 1);
      // Another client's connection was told nothing: answered at once, not held.
      assert.equal((await postOver(other)).status, 503);
      assert.equal(await held(), before + 1);
    } finally {
      flooder.destroy();
      other.destroy();
      await fetch(admin, { method: "PUT", body: '{"fraction": null}' });
    }
  });

  test("the operator port is not the public port", async () => {
    const res = await fetch(`${p.gatewayUrl}/admin/intake`);
    assert.equal(res.status, 404);
    const metrics = await fetch(`${p.gatewayUrl}/metrics`);
    assert.equal(metrics.status, 404);
  });
});

/** ListProducts over HTTP/1.1 through `agent` (one keep-alive connection): status, headers, when it was answered (performance.now()), and whether the connection was reused. */
function postOver(agent: http.Agent): Promise<{ status: number; headers: http.IncomingHttpHeaders; answeredAt: number; socketReused: boolean }> {
  const url = new URL(`${p.gatewayUrl}/checkout.v1.CheckoutService/ListProducts`);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", agent, headers: { "content-type": "application/json", "connect-timeout-ms": "5000" } }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, answeredAt: performance.now(), socketReused: req.reusedSocket }));
    });
    req.on("error", reject);
    req.end("{}");
  });
}
